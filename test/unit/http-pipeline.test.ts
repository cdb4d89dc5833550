// The HTTP request path's steps (src/core/http/pipeline.ts, router.ts, stateless.ts), each alone:
// no switchboard server, no transport. A step that writes its answer runs as the only handler of a
// node server in this process; the others are functions of a request's headers and body.
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { createMcpHandler, McpServer } from "@modelcontextprotocol/server";
import { closeAfterAnswer, plain, RequestRefused } from "../../src/core/http/guards.js";
import { createHttpLimits } from "../../src/core/http/limits.js";
import {
  type Admitted,
  authenticate,
  checkEndpoint,
  checkHost,
  checkOrigin,
  type Exchange,
  findTenant,
  readBody,
} from "../../src/core/http/pipeline.js";
import { dispatch, type EraHandlers, routeByEra } from "../../src/core/http/router.js";
import { TenantRequest, tenantOfRequest } from "../../src/core/http/stateless.js";
import { ByteBudget } from "../../src/core/upstream/budget.js";
import type { TenantRuntime } from "../../src/core/mcp/runtime.js";
import type { Logger } from "../../src/core/base/logger.js";
import { destroyRawSockets, openRaw, request2026 } from "../harness.js";

const servers: ReturnType<typeof createServer>[] = [];
afterEach(async () => {
  destroyRawSockets();
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

const quiet: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

/** A raw request to the server at `base`: what it received, and when the server closed the socket. */
const rawSocket = (base: string, text: string) => openRaw(Number(new URL(base).port), text);

/** An in-process node server whose only handler is `step`; its base URL. */
async function serve(step: (ex: Exchange) => Promise<void> | void): Promise<string> {
  const server = createServer((req, res) => {
    void step({ req, res, url: new URL(req.url ?? "/", "http://localhost") });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Just what a guard or the router reads of a node request. */
const requestWith = (headers: Record<string, string>, method = "POST") =>
  ({ method, headers: { ...headers } }) as unknown as IncomingMessage;

describe("guards: decided from the request line and headers alone", () => {
  it("refuses a foreign Host on a loopback bind, and lets listed names through", () => {
    expect(checkHost(requestWith({ host: "127.0.0.1:3000" }), true)).toBeUndefined();
    expect(checkHost(requestWith({ host: "[::1]:3000" }), true)).toBeUndefined();
    expect(checkHost(requestWith({ host: "evil.example:3000" }), true)).toEqual({
      status: 403,
      body: { error: "Host not allowed" },
    });
    expect(checkHost(requestWith({ host: "mcp.example.com" }), true, ["mcp.example.com"])).toBeUndefined();
    expect(checkHost(requestWith({}), true)?.status).toBe(403);
    // A non-loopback bind requires the bearer token instead.
    expect(checkHost(requestWith({ host: "evil.example" }), false)).toBeUndefined();
  });

  it("refuses an Origin off the allow-list; a request without one is not a browser's", () => {
    const allowed = ["http://localhost", "https://app.example.com"];
    expect(checkOrigin(requestWith({}), allowed)).toBeUndefined();
    expect(checkOrigin(requestWith({ origin: "http://localhost:5173" }), allowed)).toBeUndefined();
    expect(checkOrigin(requestWith({ origin: "https://app.example.com" }), allowed)).toBeUndefined();
    expect(checkOrigin(requestWith({ origin: "https://evil.example" }), allowed)).toEqual({
      status: 403,
      body: { error: "Origin not allowed" },
    });
    expect(checkOrigin(requestWith({ origin: "null" }), allowed)?.status).toBe(403);
  });

  it("answers 404 for anything but /mcp", () => {
    expect(checkEndpoint(new URL("http://h/mcp"))).toBeUndefined();
    expect(checkEndpoint(new URL("http://h/mcp/"))?.status).toBe(404);
    expect(checkEndpoint(new URL("http://h/"))).toEqual({
      status: 404,
      body: { error: "Not found; the MCP endpoint is /mcp" },
    });
  });
});

describe("auth: before any byte of the body is read", () => {
  it("answers a wrong token 401 with a challenge and closes the connection; the body step never runs", async () => {
    const limits = createHttpLimits({}, quiet);
    let bodySteps = 0;
    const auth = {
      tokenOk: (authorization: string | undefined) => authorization === "Bearer right",
      refuseUnauthenticated: limits.refuseUnauthenticated,
      unauthenticated: limits.unauthenticated,
    };
    const base = await serve(async (ex) => {
      const caller = await authenticate(ex, auth);
      if (!caller) return;
      bodySteps++;
      plain(ex.res, 200, { identity: caller.identity ?? null });
    });
    const ok = await fetch(`${base}/mcp`, { method: "POST", headers: { authorization: "Bearer right" }, body: "{}" });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ identity: null });

    const raw = await rawSocket(base, "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n{");
    await raw.closed;
    expect(raw.data()).toMatch(/^HTTP\/1\.1 401 /);
    expect(raw.data()).toMatch(/www-authenticate: Bearer realm="switchboard-mcp"/i);
    expect(raw.data()).toMatch(/connection: close/i);
    expect(bodySteps).toBe(1);
  });
});

describe("body: read with the policy it is given", () => {
  const rules = (maxBytes: number, budgetBytes = 1 << 30, deadlineMs = 5000) => ({
    maxBytes,
    policy: { deadlineMs, budget: new ByteBudget(budgetBytes) },
  });
  /** A server whose only step is readBody with `r`: echoes the body it read. */
  const bodyServer = (r: ReturnType<typeof rules>) =>
    serve(async (ex) => {
      const read = await readBody(ex, r, undefined);
      if (read) plain(ex.res, 200, { body: read.body ?? null });
    });

  it("reads a POST's JSON, leaves a GET without a body, and refuses an empty batch", async () => {
    const base = await bodyServer(rules(1000));
    const post = await fetch(`${base}/mcp`, { method: "POST", body: JSON.stringify({ a: 1 }) });
    expect(await post.json()).toEqual({ body: { a: 1 } });
    expect(await (await fetch(`${base}/mcp`)).json()).toEqual({ body: null });
    const empty = await fetch(`${base}/mcp`, { method: "POST", body: "[]" });
    expect(empty.status).toBe(400);
    expect(await empty.json()).toEqual({
      jsonrpc: "2.0",
      error: { code: -32600, message: "Invalid request: an empty batch" },
      id: null,
    });
    const broken = await fetch(`${base}/mcp`, { method: "POST", body: "{" });
    expect(broken.status).toBe(400);
    expect(((await broken.json()) as { error: { code: number } }).error.code).toBe(-32700);
  });

  it("stops at the limit it is given, answers 413 and closes the connection after the answer", async () => {
    const base = await bodyServer(rules(100));
    const raw = await rawSocket(
      base,
      `POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{"x":"${"a".repeat(200)}`,
    );
    await raw.closed;
    expect(raw.data()).toMatch(/^HTTP\/1\.1 413 /);
    expect(raw.data()).toMatch(/connection: close/i);
    expect(raw.data()).toContain("Request body larger than 100 bytes");
  });

  it("answers 503 with Retry-After when the budget it is given is spent, the first 64 KiB uncounted", async () => {
    const base = await bodyServer(rules(10_000_000, 1024));
    const small = await fetch(`${base}/mcp`, { method: "POST", body: JSON.stringify({ x: "a".repeat(60_000) }) });
    expect(small.status).toBe(200);
    const big = await fetch(`${base}/mcp`, { method: "POST", body: JSON.stringify({ x: "a".repeat(200_000) }) });
    expect(big.status).toBe(503);
    expect(big.headers.get("retry-after")).toBe("5");
    expect(big.headers.get("connection")).toBe("close");
  });

  it("two servers in one process keep their own deadlines (the policy is passed, not kept on requests)", async () => {
    const quick = await bodyServer(rules(1000, 1 << 30, 200));
    const patient = await bodyServer(rules(1000, 1 << 30, 20_000));
    const slow = (base: string) => rawSocket(base, "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n{");
    const [a, b] = await Promise.all([slow(quick), slow(patient)]);
    await a.closed;
    expect(a.data()).toMatch(/^HTTP\/1\.1 408 /);
    expect(a.data()).toContain("not received within 0.2 s");
    expect(b.data()).toBe("");
    b.socket.destroy();
  });
});

describe("closeAfterAnswer: the close rides on the response", () => {
  it("puts `connection: close` and its headers on the response at once; the answer's own headers win", async () => {
    const seen: Record<string, unknown>[] = [];
    const base = await serve(({ res }) => {
      closeAfterAnswer(res, { "retry-after": "7", "x-a": "1" });
      seen.push({ connection: res.getHeader("connection"), retry: res.getHeader("retry-after") });
      plain(res, 429, { error: "busy" }, { "x-a": "2" });
    });
    const answer = await fetch(`${base}/mcp`);
    expect(answer.status).toBe(429);
    expect(answer.headers.get("connection")).toBe("close");
    expect(answer.headers.get("retry-after")).toBe("7");
    expect(answer.headers.get("x-a")).toBe("2");
    expect(seen).toEqual([{ connection: "close", retry: "7" }]);
  });
});

describe("tenant: which runtime a request acts for", () => {
  const tenant = { owner: () => "t" } as unknown as TenantRuntime;
  it("hands the finder the headers as sent and the user; a RequestRefused becomes its answer", () => {
    const req = { headersDistinct: { "x-key": ["a", "b"] } } as unknown as IncomingMessage;
    let seen: unknown;
    const finder = (headers: unknown, identity: unknown) => {
      seen = [headers, identity];
      return tenant;
    };
    expect(findTenant(req, finder)).toEqual({ tenant });
    expect(seen).toEqual([{ "x-key": ["a", "b"] }, undefined]);
    const refused = findTenant(req, () => {
      throw new RequestRefused(400, "a key sent twice");
    });
    expect(refused).toEqual({
      refusal: {
        status: 400,
        body: { jsonrpc: "2.0", error: { code: -32000, message: "a key sent twice" }, id: null },
        headers: undefined,
      },
    });
    expect(() =>
      findTenant(req, () => {
        throw new Error("a bug");
      }),
    ).toThrow("a bug");
  });
});

describe("era router", () => {
  const parse = (r: { headers: Record<string, string>; body: string }) =>
    [requestWith(r.headers), JSON.parse(r.body)] as const;
  const route = (req: IncomingMessage, body: unknown, plainTool = (_: string) => true) =>
    routeByEra(req, body, plainTool).to;
  const initialize = {
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "c", version: "1" } },
  };
  const json = { "content-type": "application/json", accept: "application/json, text/event-stream" };

  it("sends a session's request to its session, whatever the method", () => {
    const req = requestWith({ "mcp-session-id": "r1.abc" }, "GET");
    expect(routeByEra(req, undefined, () => true)).toEqual({ to: "session", id: "r1.abc" });
    expect(route(requestWith({ "mcp-session-id": "s", ...json }, "DELETE"), undefined)).toBe("session");
  });

  it("opens a 2025 session for an initialize, and refuses any other 2025 request without one", () => {
    expect(route(requestWith(json), initialize)).toBe("initialize");
    const other = routeByEra(requestWith(json), { jsonrpc: "2.0", id: 2, method: "tools/list" }, () => true);
    expect(other).toEqual({
      to: "refused",
      refusal: {
        status: 400,
        body: {
          jsonrpc: "2.0",
          error: { code: -32000, message: expect.stringContaining("no mcp-session-id header") },
          id: null,
        },
        headers: undefined,
      },
    });
  });

  it("takes a plain 2026 tools/call and tasks/* the lean way, and everything else to the SDK's entry", () => {
    const call = parse(request2026("tools/call", { name: "drones_get_drone", arguments: { id: "d1" } }));
    const leanRoute = routeByEra(...call, () => true);
    expect(leanRoute.to).toBe("lean");
    expect(leanRoute.to === "lean" && leanRoute.lean.message.method).toBe("tools/call");
    expect(route(...parse(request2026("tasks/get", { taskId: "t1" })))).toBe("lean");
    // A tool with Mcp-Param headers, a Base64 Mcp-Name, a name that disagrees: the entry checks those.
    expect(route(...call, () => false)).toBe("modern");
    const [req, body] = call;
    expect(route(requestWith({ ...req.headers, "mcp-name": "=?base64?ZHJvbmVz?=" } as never), body)).toBe("modern");
    expect(route(requestWith({ ...req.headers, "mcp-name": "other" } as never), body)).toBe("modern");
    expect(route(...parse(request2026("tools/list")))).toBe("modern");
    expect(route(requestWith(json, "GET"), undefined)).toBe("modern");
    expect(route(...parse(request2026("subscriptions/listen", { notifications: {} })))).toBe("listen");
  });

  it("dispatch hands the request to the handler its route names", async () => {
    const calls: string[] = [];
    const handler =
      (name: string) =>
      async (..._: unknown[]) =>
        void calls.push(name);
    const handlers: EraHandlers = {
      session: handler("session"),
      initialize: handler("initialize"),
      lean: handler("lean"),
      listen: handler("listen"),
      modern: handler("modern"),
    };
    const admitted = {} as Admitted;
    await dispatch(admitted, { to: "session", id: "s" }, handlers);
    await dispatch(admitted, { to: "initialize" }, handlers);
    await dispatch(admitted, { to: "listen" }, handlers);
    await dispatch(admitted, { to: "modern" }, handlers);
    expect(calls).toEqual(["session", "initialize", "listen", "modern"]);
  });
});

describe("the tenant reaches the SDK's handler on its request", () => {
  it("the factory of createMcpHandler is handed the very Request given to fetch, tenant and all", async () => {
    const tenant = { owner: () => "t" } as unknown as TenantRuntime;
    const seen: (TenantRuntime | string)[] = [];
    const handler = createMcpHandler(
      ({ requestInfo }) => {
        try {
          seen.push(tenantOfRequest(requestInfo));
        } catch (err) {
          seen.push((err as Error).message);
        }
        return new McpServer({ name: "t", version: "1" });
      },
      { legacy: "reject" },
    );
    const { headers, body } = request2026("tools/list");
    const init = { method: "POST", headers, body };
    await handler.fetch(new TenantRequest(tenant, "http://localhost/mcp", init), { parsedBody: JSON.parse(body) });
    await handler.fetch(new Request("http://localhost/mcp", init), { parsedBody: JSON.parse(body) });
    await handler.close();
    expect(seen).toEqual([tenant, "a request reached the shared handler without its tenant"]);
  });
});
