// What a client on the open internet can make the HTTP transport hold (docs/security.md, "Bounds"):
// a real server in process (startHttpTransport on loopback), real sockets (node:net) for the slow,
// silent and aborting clients, and an SDK client that must be served meanwhile. The upstream
// budget is tested against a tiny node:http upstream on loopback.
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { allServicesConfig } from "../../scripts/manifest.js";
import { parseCommand } from "../../src/config.js";
import { ByteBudget } from "../../src/core/upstream/budget.js";
import { HTTP_LIMIT_DEFAULTS, type HttpLimitOptions } from "../../src/core/http/limits.js";
import { startHttpTransport, type RunningHttp } from "../../src/core/http/transport.js";
import type { Logger } from "../../src/core/base/logger.js";
import { DEFAULT_UPSTREAM_BODY_BUDGET, UpstreamClient, UpstreamError } from "../../src/core/upstream/upstream.js";
import { createApp } from "../../src/server.js";
import { loadServices } from "../../src/services/registry.js";

const services = await loadServices();
import { destroyRawSockets, openRaw, rawStatus, type RawSocket } from "../harness.js";

const closers: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (closers.length) await closers.pop()!();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    await sleep(10);
  }
}

/** The transport in process, over a runtime whose upstreams point at a closed port (nothing here calls them). */
async function startServer(options: HttpLimitOptions & { token?: string } = {}): Promise<{
  running: RunningHttp;
  port: number;
  stats: RunningHttp["limits"];
}> {
  const app = createApp({ ...allServicesConfig(), transport: "http" }, undefined, services);
  const running = await startHttpTransport({
    host: "127.0.0.1",
    port: 0,
    allowedOrigins: [],
    logger: app.runtime.logger,
    runtime: app.runtime,
    health: () => ({}),
    ...options,
  });
  closers.push(async () => {
    await running.close();
    await app.close();
  });
  return { running, port: Number(new URL(running.url).port), stats: () => running.limits() };
}

afterAll(destroyRawSockets);

/** A raw socket, also destroyed when the test ends. */
async function raw(port: number, send?: string): Promise<RawSocket> {
  const r = await openRaw(port, send);
  closers.push(() => void r.socket.destroy());
  return r;
}

const post = (port: number, length: number, headers = "") =>
  `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\n` +
  `accept: application/json, text/event-stream\r\n${headers}content-length: ${length}\r\n\r\n`;

const INIT = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
});

async function initialize(port: number, headers: Record<string, string> = {}): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${port}/mcp`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body: INIT,
  });
  await res.text();
  return res.status;
}

async function sdkClient(port: number, headers: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: "http-limits", version: "1" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`), { requestInit: { headers } }),
  );
  closers.push(() => client.close());
  return client;
}

// Real sockets and timers in this process: generous test deadlines for a loaded machine, tight only where a
// bound tells a right answer from a wrong one.
describe("HTTP transport bounds", { timeout: 30_000 }, () => {
  it("MCP_MAX_CONNECTIONS: excess sockets close at once, header-less at header timeout; clients served", async () => {
    const { port, stats } = await startServer({ maxConnections: 20, headersTimeoutMs: 2000 });
    const holders = await Promise.all(Array.from({ length: 20 }, () => raw(port)));
    await until(() => stats().connections === 20, 10_000, "20 connections accepted");
    const extras = await Promise.all(Array.from({ length: 15 }, () => raw(port)));
    await Promise.all(extras.map((e) => e.closed));
    // At once: before the 2 s header timeout, even with this process's event loop slowed by a loaded machine.
    for (const e of extras) expect(e.closedAt! - e.openedAt).toBeLessThan(1800);
    expect(stats().droppedConnections).toBe(15);
    expect(holders.filter((h) => h.closedAt !== undefined)).toHaveLength(0);

    // Silent sockets (not one byte of headers) are dropped at the header timeout, with a 408.
    await Promise.all(holders.map((h) => h.closed));
    for (const h of holders) {
      expect(h.closedAt! - h.openedAt).toBeGreaterThan(1900);
      expect(h.closedAt! - h.openedAt).toBeLessThan(6000);
      expect(rawStatus(h)).toBe(408);
    }
    await until(() => stats().connections === 0, 10_000, "holders gone");
    const client = await sdkClient(port);
    expect((await client.listTools()).tools.length).toBeGreaterThan(10);
  });

  it("drops a client that never finishes its headers at the header timeout (MCP_HEADERS_TIMEOUT_MS)", async () => {
    const { port } = await startServer({ headersTimeoutMs: 800 });
    const slow = await raw(port, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    const drip = setInterval(() => slow.socket.write("x-pad: 1\r\n"), 100);
    closers.push(() => clearInterval(drip));
    await slow.closed;
    // Without the timeout the drip would hold it until the test's end; the margin is for a loaded machine.
    expect(slow.closedAt! - slow.openedAt).toBeLessThan(5000);
    expect(rawStatus(slow)).toBe(408);
  });

  it("drops a body that trickles in (1 byte per 200 ms) at the body deadline, without a token too", async () => {
    const { port } = await startServer({ bodyDeadlineMs: 2000 });
    const slow = await raw(port, `${post(port, 100)}{`);
    const drip = setInterval(() => slow.socket.write(" "), 200);
    closers.push(() => clearInterval(drip));
    await slow.closed;
    const held = slow.closedAt! - slow.openedAt;
    expect(held).toBeGreaterThan(1900);
    expect(held).toBeLessThan(6000);
    expect(rawStatus(slow)).toBe(408);
    expect(slow.data()).toMatch(/connection: close/i);
    // An answer sent before the body was read (here 404) closes the socket instead of reading on.
    const elsewhere = await raw(port, `${post(port, 100).replace("/mcp", "/elsewhere")}{`);
    const drip2 = setInterval(() => elsewhere.socket.write(" "), 200);
    closers.push(() => clearInterval(drip2));
    await elsewhere.closed;
    expect(rawStatus(elsewhere)).toBe(404);
    expect(elsewhere.closedAt! - elsewhere.openedAt).toBeLessThan(1800); // before the 2 s body deadline
  });

  it("1,000 tokenless clients trickling a body: 401/429 at once, socket closed; a token holder is served", async () => {
    const token = "limits-test-token-5b1e";
    const { port, stats } = await startServer({ token });
    const authorized = await sdkClient(port, { authorization: `Bearer ${token}` });
    const attackers: RawSocket[] = [];
    const drips: NodeJS.Timeout[] = [];
    closers.push(() => drips.forEach(clearInterval));
    const served = (async () => {
      const answers: number[] = [];
      for (let i = 0; i < 10; i++) answers.push((await authorized.listTools()).tools.length);
      return answers;
    })();
    for (let batch = 0; batch < 10; batch++) {
      const opened = await Promise.all(Array.from({ length: 100 }, () => raw(port, `${post(port, 1000)}{`)));
      for (const a of opened) {
        attackers.push(a);
        drips.push(setInterval(() => !a.socket.destroyed && a.socket.write(" "), 500));
      }
    }
    await Promise.all(attackers.map((a) => a.closed));
    // A server that read their bodies would hold every one of them until the 30 s body deadline
    // (BODY_DEADLINE_MS). The test process is also the server's, so a loaded machine slows both: the
    // bound leaves room for that (4.3 s was measured at load average 13) and still tells the two apart.
    const held = attackers.map((a) => a.closedAt! - a.openedAt).sort((x, y) => x - y);
    expect(held.at(-1)!).toBeLessThan(12_000);
    const statuses = attackers.map(rawStatus);
    expect(statuses.every((s) => s === 401 || s === 429)).toBe(true);
    expect(statuses.filter((s) => s === 401).length).toBeGreaterThanOrEqual(100);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(0);
    const throttled = attackers.find((a) => rawStatus(a) === 429)!;
    expect(throttled.data()).toMatch(/retry-after: \d+/i);
    expect(throttled.data()).toMatch(/connection: close/i);
    expect((await served).every((n) => n > 10)).toBe(true);
    expect(stats().throttled + stats().unauthorized).toBe(1000);
    // What is left open is the authorized client's own (keep-alive, and its GET stream on 2025).
    await until(() => stats().connections <= 4, 10_000, "only the authorized client's sockets left");
  }, 30_000);

  it("MCP_BODY_BUDGET_BYTES: stalled uploads past the budget get 503 and are closed; small requests pass", async () => {
    const { port, stats } = await startServer({ bodyBudgetBytes: 2 * 1024 * 1024 });
    const part = Buffer.alloc(256 * 1024, 0x20);
    const stalled = await Promise.all(
      Array.from({ length: 40 }, async () => {
        const r = await raw(port, post(port, 1024 * 1024));
        r.socket.write(part);
        return r;
      }),
    );
    await until(
      () => stalled.filter((s) => s.closedAt !== undefined).length >= 25,
      10_000,
      "uploads past the budget refused",
    );
    expect(stats().bodyBytes).toBeLessThanOrEqual(2 * 1024 * 1024);
    expect(stats().bodyBytes).toBeGreaterThan(1024 * 1024);
    const refused = stalled.filter((s) => s.closedAt !== undefined);
    for (const r of refused) expect(rawStatus(r)).toBe(503);
    expect(refused[0].data()).toMatch(/retry-after: 5/i);
    expect(refused[0].data()).toContain("MCP_BODY_BUDGET_BYTES");
    // A request of a few hundred bytes is not counted (the first 64 KiB of every body are free).
    expect(await initialize(port)).toBe(200);
    for (const s of stalled) s.socket.destroy();
    await until(() => stats().bodyBytes === 0, 10_000, "budget released when the stalled uploads go");
  });

  it("hundreds of aborted uploads free their buffers at once: budget back to 0, requests answered fast", async () => {
    const { port, stats } = await startServer();
    const part = Buffer.alloc(300 * 1024, 0x20);
    let peak = 0;
    const sampler = setInterval(() => (peak = Math.max(peak, stats().bodyBytes)), 5);
    closers.push(() => clearInterval(sampler));
    for (let batch = 0; batch < 3; batch++) {
      await Promise.all(
        Array.from({ length: 100 }, async () => {
          const r = await raw(port, post(port, 2 * 1024 * 1024));
          await new Promise<void>((done) => r.socket.write(part, () => done()));
          await sleep(20);
          r.socket.destroy();
        }),
      );
    }
    expect(peak).toBeGreaterThan(0);
    // Released on the abort itself, not at the 30 s body deadline.
    await until(() => stats().bodyBytes === 0, 10_000, "every aborted upload released its share");
    const started = performance.now();
    expect(await initialize(port)).toBe(200);
    expect(performance.now() - started).toBeLessThan(3000);
  }, 20_000);
});

// ---------------------------------------------------------------------------------------------

const quiet: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

interface Upstream {
  url: string;
  hits: () => number;
}

/** A real upstream on loopback that answers with `answer`. */
async function upstream(answer: (req: IncomingMessage, res: ServerResponse, hit: number) => void): Promise<Upstream> {
  let hits = 0;
  const server: Server = createHttpServer((req, res) => {
    req.resume();
    req.once("end", () => answer(req, res, ++hits));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  closers.push(
    () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api`, hits: () => hits };
}

function client(url: string, options: Partial<ConstructorParameters<typeof UpstreamClient>[0]> = {}): UpstreamClient {
  const c = new UpstreamClient({
    service: "test",
    baseUrl: url,
    headers: {},
    envelope: "ok-data",
    timeoutMs: 2000,
    logger: quiet,
    keyVariable: "TEST_KEY",
    bodyBudget: new ByteBudget(DEFAULT_UPSTREAM_BODY_BUDGET),
    ...options,
  });
  closers.push(() => c.close());
  return c;
}

const json = (res: ServerResponse, body: string) => {
  res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
  res.end(body);
};

async function failure(p: Promise<unknown>): Promise<UpstreamError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(UpstreamError);
  return err as UpstreamError;
}

describe("upstream body budget (UPSTREAM_BODY_BUDGET_BYTES)", () => {
  it("each app's upstream clients share the budget its config sets, with no process-wide setter", async () => {
    const text = "x".repeat(2 * 1024 * 1024);
    const up = await upstream((_req, res) => json(res, `{"ok":true,"data":"${text}"}`));
    const base = allServicesConfig();
    const drones = services.find((s) => s.name === "drones")!;
    const pointed = new Map([
      ...base.services,
      ["drones", { ...base.services.get("drones"), [drones.baseUrlVar]: up.url }],
    ]);
    const appWith = (bytes: number) =>
      createApp({ ...base, upstreamBodyBudgetBytes: bytes, services: pointed }, undefined, services);
    const [small, large] = [appWith(1024 * 1024), appWith(DEFAULT_UPSTREAM_BODY_BUDGET)];
    closers.push(
      () => small.close(),
      () => large.close(),
    );
    const http = (app: typeof small) =>
      (app.runtime.serviceDeps("drones") as { client: { http: UpstreamClient } }).client.http;
    const refused = await failure(http(small).request({ method: "GET", path: "/big" }));
    expect(refused.code).toBe("BODY_TOO_LARGE");
    expect(refused.message).toMatch(/\(UPSTREAM_BODY_BUDGET_BYTES, 1 MiB\)/);
    // Another app in the same process reads within its own budget.
    expect(await http(large).request({ method: "GET", path: "/big" })).toBe(text);
  });

  it("refuses, unretried, an answer whose parse needs over the whole budget (tiny objects expand a lot)", async () => {
    // ~1.3 MB
    const tiny = `{"ok":true,"data":[${Array.from({ length: 150_000 }, (_, i) => `{"i":${i % 10}}`).join(",")}]}`;
    const up = await upstream((_req, res) => json(res, tiny));
    const budget = new ByteBudget(16 * 1024 * 1024);
    const err = await failure(client(up.url, { bodyBudget: budget }).request({ method: "GET", path: "/items" }));
    expect(err.code).toBe("BODY_TOO_LARGE");
    expect(err.message).toContain("UPSTREAM_BODY_BUDGET_BYTES");
    expect(err.transient).toBe(false);
    expect(up.hits()).toBe(1);
    expect(budget.inUse).toBe(0);
    // The same number of bytes as one long string parses to about its own size: it passes.
    const flat = `{"ok":true,"data":"${"x".repeat(tiny.length)}"}`;
    const up2 = await upstream((_req, res) => json(res, flat));
    expect(await client(up2.url, { bodyBudget: budget }).request({ method: "GET", path: "/text" })).toHaveLength(
      tiny.length,
    );
    expect(budget.inUse).toBe(0);
    // An announced length over the whole budget is refused before a byte of the body is read.
    const small = new ByteBudget(1024 * 1024);
    const big = await failure(client(up2.url, { bodyBudget: small }).request({ method: "GET", path: "/text" }));
    expect(big.code).toBe("BODY_TOO_LARGE");
    expect(big.message).toMatch(/is larger than this server reads at once \(UPSTREAM_BODY_BUDGET_BYTES, 1 MiB\)/);
    expect(up2.hits()).toBe(2);
    expect(small.inUse).toBe(0);
  });

  it("no budget: a read waits, then fails BUSY (retried); a write fails BUSY unsent, or says it was lost", async () => {
    const budget = new ByteBudget(3 * 1024 * 1024); // parsing one answer of 0.7 MiB takes ~2.1 MiB
    const body = `{"ok":true,"data":"${"y".repeat(700 * 1024)}"}`;
    const up = await upstream((_req, res) => json(res, body));
    const c = client(up.url, { bodyBudget: budget, bodyBudgetWaitMs: 150, maxRetries: 1, maxRetryAfterMs: 50 });

    // Something else holds nearly all of the budget: no room for even a small answer, so nothing is sent.
    await budget.take(3050 * 1024, 0);
    let started = performance.now();
    const read = await failure(c.request({ method: "GET", path: "/big" }));
    expect(read.code).toBe("BUSY");
    expect(read.transient).toBe(true);
    expect(read.message).toContain("UPSTREAM_BODY_BUDGET_BYTES");
    expect(read.message).toMatch(/try again in a few seconds/i);
    expect(performance.now() - started).toBeGreaterThan(300); // two attempts, each waited 150 ms
    const write = await failure(c.request({ method: "POST", path: "/launch", body: { a: 1 } }));
    expect(write.code).toBe("BUSY");
    expect(write.outcomeUnknown).toBe(false);
    expect(write.message).toMatch(/nothing was sent/i);
    expect(up.hits()).toBe(0);

    // Room for a small answer but not for this one: the read is sent, waits for room, fails BUSY, is retried once.
    budget.release(378 * 1024); // 400 KiB free
    started = performance.now();
    const late = await failure(c.request({ method: "GET", path: "/big" }));
    expect(late.code).toBe("BUSY");
    expect(late.message).toMatch(/answer was not read/);
    expect(up.hits()).toBe(2);
    // A write in that position is sent once and waits up to its deadline; its lost answer is reported as such.
    const w = client(up.url, { bodyBudget: budget, bodyBudgetWaitMs: 150, timeoutMs: 600 });
    started = performance.now();
    const lost = await failure(w.request({ method: "POST", path: "/launch", body: { a: 1 } }));
    expect(lost.code).toBe("BUSY");
    expect(lost.outcomeUnknown).toBe(true);
    expect(performance.now() - started).toBeGreaterThan(500);
    expect(up.hits()).toBe(3);

    // When the holder lets go, a waiting read gets its turn.
    const waiting = c.request<string>({ method: "GET", path: "/big" });
    setTimeout(() => budget.release(2672 * 1024), 50);
    expect(await waiting).toHaveLength(700 * 1024);
    expect(budget.inUse).toBe(0);
  });

  it("answers being read at once never hold more than the budget; every read gets through in turn", async () => {
    const budget = new ByteBudget(4 * 1024 * 1024);
    const body = `{"ok":true,"data":"${"z".repeat(900 * 1024)}"}`;
    const up = await upstream((_req, res) => {
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
      // Sent in two halves 100 ms apart, so several answers are in flight together.
      res.write(body.slice(0, body.length / 2));
      setTimeout(() => res.end(body.slice(body.length / 2)), 100);
    });
    const c = client(up.url, { bodyBudget: budget, bodyBudgetWaitMs: 3000 });
    let peak = 0;
    const sampler = setInterval(() => (peak = Math.max(peak, budget.inUse)), 2);
    closers.push(() => clearInterval(sampler));
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => c.request<string>({ method: "GET", path: "/big" })),
    );
    expect(answers.every((a) => a.length === 900 * 1024)).toBe(true);
    expect(peak).toBeGreaterThan(0);
    expect(peak).toBeGreaterThan(2 * 1024 * 1024); // several at once...
    expect(peak).toBeLessThanOrEqual(4 * 1024 * 1024); // ...never more than the budget
    expect(up.hits()).toBe(8);
    expect(budget.inUse).toBe(0);
  });

  it("an answer received in full is used, not re-requested, if the deadline passed in a busy event loop", async () => {
    const body = `{"ok":true,"data":{"n":${"1".repeat(10)}}}`;
    const up = await upstream((_req, res, hit) => {
      json(res, body);
      // The whole answer is on the socket; then this process is busy (a big parse elsewhere) past the deadline.
      if (hit === 1) {
        const until = Date.now() + 400;
        while (Date.now() < until);
      }
    });
    const c = client(up.url, { timeoutMs: 200 });
    expect(await c.request({ method: "GET", path: "/read" })).toEqual({ n: 1111111111 });
    expect(up.hits()).toBe(1);
    // A write in the same position is answered, not reported as "may have taken effect".
    const up2 = await upstream((_req, res, hit) => {
      json(res, body);
      if (hit === 1) {
        const until = Date.now() + 400;
        while (Date.now() < until);
      }
    });
    expect(await client(up2.url, { timeoutMs: 200 }).request({ method: "POST", path: "/write", body: {} })).toEqual({
      n: 1111111111,
    });
    expect(up2.hits()).toBe(1);
  });

  it("an upstream that really is too slow still times out (and a read is still retried)", async () => {
    const up = await upstream((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write('{"ok":true,');
      // never ends
    });
    const c = client(up.url, { timeoutMs: 200, maxRetries: 1, maxRetryAfterMs: 20 });
    const err = await failure(c.request({ method: "GET", path: "/slow" }));
    expect(err.code).toBe("TIMEOUT");
    expect(up.hits()).toBe(2);
  });
});

describe("the bounds' variables", () => {
  const serve = (env: Record<string, string>) => {
    const cmd = parseCommand(["--transport", "http"], env);
    if (cmd.kind !== "serve") throw new Error(cmd.kind);
    return cmd.config;
  };

  it("default to the documented values and are read from the environment", () => {
    expect(serve({})).toMatchObject({
      maxConnections: HTTP_LIMIT_DEFAULTS.maxConnections,
      headersTimeoutMs: HTTP_LIMIT_DEFAULTS.headersTimeoutMs,
      unauthRate: HTTP_LIMIT_DEFAULTS.unauthRatePerSec,
      bodyBudgetBytes: HTTP_LIMIT_DEFAULTS.bodyBudgetBytes,
      upstreamBodyBudgetBytes: DEFAULT_UPSTREAM_BODY_BUDGET,
    });
    expect(
      serve({
        MCP_MAX_CONNECTIONS: "10",
        MCP_HEADERS_TIMEOUT_MS: "500",
        MCP_UNAUTH_RATE: "3",
        MCP_BODY_BUDGET_BYTES: "1024",
        UPSTREAM_BODY_BUDGET_BYTES: "2048",
      }),
    ).toMatchObject({
      maxConnections: 10,
      headersTimeoutMs: 500,
      unauthRate: 3,
      bodyBudgetBytes: 1024,
      upstreamBodyBudgetBytes: 2048,
    });
  });

  it("a bad value stops the start naming the variable", () => {
    for (const name of [
      "MCP_MAX_CONNECTIONS",
      "MCP_HEADERS_TIMEOUT_MS",
      "MCP_UNAUTH_RATE",
      "MCP_BODY_BUDGET_BYTES",
      "UPSTREAM_BODY_BUDGET_BYTES",
    ]) {
      expect(() => serve({ [name]: "lots" }), name).toThrow(new RegExp(`^${name}: must be a number`));
      expect(() => serve({ [name]: "0" }), name).toThrow(new RegExp(`^${name}: must be positive`));
    }
  });
});
