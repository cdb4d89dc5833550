import type { IncomingMessage, ServerResponse } from "node:http";
import type { CallToolResult, Client } from "@modelcontextprotocol/client";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { Sandbox } from "../../src/sandbox/index.js";
import { FAULTS } from "../../src/sandbox/faults.js";
import type { Fault, Router } from "../../src/sandbox/router.js";
import { ALERTS, FLEET } from "../../src/sandbox/simulators/drones/index.js";
import { CATALOG } from "../../src/sandbox/simulators/sizing/index.js";
import { call, connectStdio, ok, sandboxEnv, sleep, testSandbox, text, type StdioConnection } from "../harness.js";
import { keepWireOrder } from "./in-order.js";

/**
 * Upstream faults seen through real MCP calls: a stdio child (`node dist/cli.js`) talks to a
 * sandbox in this process, the sandbox misbehaves on cue (src/sandbox/faults.ts), and the test
 * checks what reaches the MCP client and how many requests reached the upstream.
 */

const API = "/api/v1/vcaas";
type Service = "build" | "sizing" | "drones";

const TEE = CATALOG.find((i) => i.name === "Heavyweight Crew Tee")!;

/** A read tool and the one upstream GET it makes. */
interface Read {
  name: string;
  service: Service;
  tool: string;
  args: Record<string, unknown>;
  path: string;
}

const READS = {
  drone: (i: number): Read => ({
    name: `drones_get_drone #${i}`,
    service: "drones",
    tool: "drones_get_drone",
    args: { id: FLEET[i]._id },
    path: `/api/drones/${FLEET[i]._id}`,
  }),
  project: {
    name: "build_get_project",
    service: "build",
    tool: "build_get_project",
    args: { projectId: "acme-storefront" },
    path: `${API}/projects/acme-storefront`,
  },
  account: { name: "build_get_account", service: "build", tool: "build_get_account", args: {}, path: `${API}/account` },
  catalog: {
    name: "sizing_get_catalog",
    service: "sizing",
    tool: "sizing_get_catalog",
    args: {},
    path: "/api/retailer/catalog",
  },
  alerts: { name: "drones_list_alerts", service: "drones", tool: "drones_list_alerts", args: {}, path: "/api/alerts" },
} satisfies Record<string, Read | ((i: number) => Read)>;

/** A write tool and the one request that changes state. */
interface Write {
  tool: string;
  service: Service;
  method: "POST" | "PUT";
  path: string;
  args: (tag: string) => Record<string, unknown>;
  /** How the error tells the caller to check whether the write went through. */
  verify: RegExp;
}

const WRITES: Write[] = [
  {
    tool: "build_launch_project",
    service: "build",
    method: "POST",
    path: `${API}/projects/launch`,
    args: (tag) => ({ projectId: `fault-${tag}`, prompt: "A landing page [minutes=5]" }),
    verify: new RegExp(
      /Check first \(call build_list_projects with search "fault-[a-z0-9-]+" /.source +
        /and look for "fault-[a-z0-9-]+" or "fault-[a-z0-9-]+-" followed by 2-6 letters or digits/.source,
    ),
  },
  {
    tool: "drones_update_alert",
    service: "drones",
    method: "PUT",
    path: `/api/alerts/${ALERTS[0]._id}`,
    args: () => ({ id: ALERTS[0]._id, changes: { status: "acknowledged" } }),
    verify: new RegExp(`Check first \\(call drones_get_alert for "${ALERTS[0]._id}"\\)`),
  },
  {
    tool: "sizing_create_try_on",
    service: "sizing",
    method: "POST",
    path: "/api/retailer/try-on",
    args: (tag) => ({
      clothing_item_id: TEE._id,
      user_id: `cust-${tag}`,
      measurements: { chest: 95, waist: 80, hips: 100 },
    }),
    verify: /Check first \(try-on sessions cannot be listed through this API; a retry stores another session/,
  },
];

/** isError with a cause and a next step; returns the text. */
function expectToolError(result: CallToolResult, ...patterns: RegExp[]): string {
  const t = text(result);
  expect(result.isError, t).toBe(true);
  expect(t).toMatch(/\nNext step: \S/);
  for (const p of patterns) expect(t).toMatch(p);
  return t;
}

/** The server still answers a protocol request (ping). */
async function expectAlive(client: Client): Promise<void> {
  expect(await client.ping()).toEqual({});
}

function expectSuccess(result: CallToolResult): void {
  expect(result.isError, text(result)).toBeFalsy();
  expect(result.structuredContent).toBeDefined();
}

describe("upstream faults reach the MCP client as the right outcome", () => {
  let sandbox: Sandbox;
  /** UPSTREAM_TIMEOUT_MS 30 s: everything except the timeout cases. */
  let main: StdioConnection;
  /** UPSTREAM_TIMEOUT_MS 300 ms: the timeout cases. */
  let fast: StdioConnection;

  const router = (service: Service): Router => sandbox[service].router;
  const received = (service: Service, method: string, path: string) =>
    router(service).received.get(`${method} ${path}`) ?? 0;
  const inject = (service: Service, fault: Omit<Fault, "action">, action: Fault["action"]) =>
    router(service).injectFault({ ...fault, action });

  beforeAll(async () => {
    sandbox = await testSandbox();
    [main, fast] = await Promise.all([
      connectStdio(sandboxEnv(sandbox, { BUILD_CONFIRM_SPEND: "never", UPSTREAM_TIMEOUT_MS: "30000" })),
      connectStdio(sandboxEnv(sandbox, { BUILD_CONFIRM_SPEND: "never", UPSTREAM_TIMEOUT_MS: "300" })),
    ]);
    keepWireOrder(main.client); // the waits below check the last progress line
    keepWireOrder(fast.client);
  });
  afterEach(() => {
    for (const s of ["build", "sizing", "drones"] as const) router(s).clearFaults();
  });
  afterAll(async () => {
    await Promise.all([main?.close(), fast?.close()]);
    await sandbox?.close();
  });

  describe("reads (GET) are retried through transient failures", () => {
    const transient: Array<[string, Read, Fault["action"]]> = [
      ["502 HTML page once", READS.drone(0), FAULTS.htmlError(502)],
      ["503 HTML page once", READS.project, FAULTS.htmlError(503)],
      ["connection reset once", READS.catalog, FAULTS.connectionReset()],
      ["truncated JSON once", READS.account, FAULTS.truncatedJson()],
      ["malformed JSON once", READS.drone(1), FAULTS.malformedJson()],
    ];
    it.each(transient.map(([label, read, action]) => [label, read.name, read, action] as const))(
      "%s on %s: the tool succeeds after one retry",
      async (_label, _name, read, action) => {
        const before = received(read.service, "GET", read.path);
        inject(read.service, { method: "GET", path: read.path, times: 1 }, action);
        const result = await call(main.client, read.tool, read.args);
        expectSuccess(result);
        expect(received(read.service, "GET", read.path) - before).toBe(2);
      },
    );

    it("429 with Retry-After: 1 once: waits about a second, retries, succeeds", async () => {
      const read = READS.alerts;
      const before = received(read.service, "GET", read.path);
      inject(read.service, { method: "GET", path: read.path, times: 1 }, FAULTS.rateLimited(1));
      const started = Date.now();
      const result = await call(main.client, read.tool, read.args);
      const elapsed = Date.now() - started;
      expectSuccess(result);
      expect(received(read.service, "GET", read.path) - before).toBe(2);
      expect(elapsed).toBeGreaterThanOrEqual(900); // the Retry-After was honoured, not the short backoff
    });

    it("429 with Retry-After: 30 (over the bound): fails at once, names the wait, no retry", async () => {
      const read = READS.drone(2);
      const before = received(read.service, "GET", read.path);
      inject(read.service, { method: "GET", path: read.path, times: 5 }, FAULTS.rateLimited(30));
      const started = Date.now();
      const result = await call(main.client, read.tool, read.args);
      const elapsed = Date.now() - started;
      expectToolError(
        result,
        /HTTP 429/,
        /Retry-After: 30 s/,
        /Next step: the service is rate-limiting; wait 30 s \(its Retry-After\)/,
      );
      expect(received(read.service, "GET", read.path) - before).toBe(1);
      expect(elapsed).toBeLessThan(2000);
    });
  });

  describe("reads that keep failing give up after 3 attempts with a clear error", () => {
    const OUTAGE = /Next step: the service answered something other than its JSON API/;
    const persistent: Array<[string, Read, Fault["action"], RegExp[]]> = [
      [
        "502 HTML page",
        READS.drone(3),
        FAULTS.htmlError(502),
        [/HTTP 502, HTTP_ERROR/, /a non-JSON body \(text\/html\)/, /Bad Gateway/, OUTAGE],
      ],
      [
        "503 HTML page",
        READS.project,
        FAULTS.htmlError(503),
        [/HTTP 503, HTTP_ERROR/, /a non-JSON body \(text\/html\)/, OUTAGE],
      ],
      [
        "wrong content type",
        READS.catalog,
        FAULTS.wrongContentType(),
        [/HTTP 200, NON_JSON_RESPONSE/, /a non-JSON body \(text\/plain\)/, OUTAGE],
      ],
      [
        "malformed JSON",
        READS.alerts,
        FAULTS.malformedJson(),
        [/HTTP 200, NON_JSON_RESPONSE/, /malformed JSON/, OUTAGE],
      ],
      [
        "truncated JSON",
        READS.account,
        FAULTS.truncatedJson(),
        [/HTTP 200, NON_JSON_RESPONSE/, /malformed JSON/, OUTAGE],
      ],
      [
        "connection reset",
        READS.drone(4),
        FAULTS.connectionReset(),
        [
          /no HTTP answer, UNREACHABLE/,
          /Could not reach the drones service/,
          /Next step: check the service's base URL/,
        ],
      ],
    ];
    it.each(persistent.map(([label, read, action, patterns]) => [label, read.name, read, action, patterns] as const))(
      "%s on %s (times: 10)",
      async (_label, _name, read, action, patterns) => {
        const before = received(read.service, "GET", read.path);
        inject(read.service, { method: "GET", path: read.path, times: 10 }, action);
        const result = await call(main.client, read.tool, read.args);
        expectToolError(result, new RegExp(`on GET ${read.path.replace(/[/.]/g, "\\$&")}:`), ...patterns);
        expect(received(read.service, "GET", read.path) - before).toBe(3);
        await sleep(100);
        expect(received(read.service, "GET", read.path) - before).toBe(3); // nothing more afterwards
      },
    );
  });

  describe("timeouts (UPSTREAM_TIMEOUT_MS=300)", () => {
    it("an upstream that never answers: TIMEOUT naming the bound, after 3 attempts", async () => {
      const read = READS.drone(5);
      const before = received(read.service, "GET", read.path);
      inject(read.service, { method: "GET", path: read.path, times: 10 }, FAULTS.noAnswer());
      const started = Date.now();
      const result = await call(fast.client, read.tool, read.args);
      expectToolError(
        result,
        /no HTTP answer, TIMEOUT/,
        /The drones service did not answer within 300 ms\./,
        /Next step: .*UPSTREAM_TIMEOUT_MS/,
      );
      expect(received(read.service, "GET", read.path) - before).toBe(3);
      expect(Date.now() - started).toBeLessThan(5000);
    });

    it("a slow answer under the bound (100 ms) succeeds without a retry", async () => {
      const read = READS.project;
      const before = received(read.service, "GET", read.path);
      inject(read.service, { method: "GET", path: read.path, times: 1 }, FAULTS.slow(100));
      expectSuccess(await call(fast.client, read.tool, read.args));
      expect(received(read.service, "GET", read.path) - before).toBe(1);
    });
  });

  it("an oversized body (10 MiB) is refused with BODY_TOO_LARGE, not retried; the server stays healthy", async () => {
    const read = READS.project;
    const before = received(read.service, "GET", read.path);
    inject(read.service, { method: "GET", path: read.path, times: 5 }, FAULTS.oversized(10 * 1024 * 1024));
    const result = await call(main.client, read.tool, read.args);
    expectToolError(
      result,
      /no HTTP answer, BODY_TOO_LARGE/,
      /exceeded 8192 KiB and was not read/,
      /Next step: ask for less/,
    );
    expect(received(read.service, "GET", read.path) - before).toBe(1);
    router("build").clearFaults();
    await expectAlive(main.client);
    expectSuccess(await call(main.client, read.tool, read.args));
  });

  describe("writes are never retried and say how to check", () => {
    const faults: Array<[string, () => Fault["action"], RegExp]> = [
      [
        "502 HTML page",
        () => FAULTS.htmlError(502),
        /HTTP 502, HTTP_ERROR\) on (POST|PUT) .*answered HTTP 502 with a non-JSON body \(text\/html\)/,
      ],
      [
        "connection reset",
        () => FAULTS.connectionReset(),
        /no HTTP answer, UNREACHABLE\) on (POST|PUT) .*Could not reach the \w+ service/,
      ],
      [
        "no answer (timeout)",
        () => FAULTS.noAnswer(),
        /no HTTP answer, TIMEOUT\) on (POST|PUT) .*did not answer within 300 ms/,
      ],
    ];
    const cases = WRITES.flatMap((w) =>
      faults.map(([label, action, cause]) => [w.tool, label, w, action, cause] as const),
    );
    let n = 0;
    it.each(cases)("%s hit by %s", async (_tool, label, write, action, cause) => {
      const conn = label.startsWith("no answer") ? fast : main;
      const tag = `${++n}-${label.split(" ")[0].toLowerCase()}`;
      const before = received(write.service, write.method, write.path);
      // times: 1 — a retry, if one were made, would succeed and show up as a second request.
      inject(write.service, { method: write.method, path: write.path, times: 1 }, action());
      const result = await call(conn.client, write.tool, write.args(tag));
      expectToolError(
        result,
        cause,
        new RegExp(
          /Next step: this request changes state or spends credits, /.source +
            /so it was not retried automatically and may or may not have taken effect\./.source,
        ),
        write.verify,
        /then retry only if it did not\./,
      );
      expect(received(write.service, write.method, write.path) - before).toBe(1);
      await sleep(150);
      expect(received(write.service, write.method, write.path) - before).toBe(1);
    });
  });

  describe("a read made with POST (sizing_recommend_size)", () => {
    const RECOMMEND = "/api/retailer/recommend";
    const args = { clothing_item_id: TEE._id, measurements: { chest: 95, waist: 80, hips: 100 } };

    it("is retried like a GET on a transient failure", async () => {
      const before = received("sizing", "POST", RECOMMEND);
      inject("sizing", { method: "POST", path: RECOMMEND, times: 1 }, FAULTS.htmlError(502));
      const result = await call(main.client, "sizing_recommend_size", args);
      expect(result.isError).toBeFalsy();
      expect(received("sizing", "POST", RECOMMEND) - before).toBe(2);
    });

    it("a 502 that persists gives an error that does not claim the read changed state", async () => {
      inject("sizing", { method: "POST", path: RECOMMEND, times: 5 }, FAULTS.htmlError(502));
      const result = await call(main.client, "sizing_recommend_size", args);
      const t = expectToolError(result, /HTTP 502, HTTP_ERROR\) on POST \/api\/retailer\/recommend/);
      expect(t).not.toMatch(/changes state or spends credits|may or may not have taken effect/);
    });
  });

  it("a cancelled call stops its upstream request and the server stays healthy", async () => {
    const read = READS.drone(6);
    const drones = router("drones");
    // Watch the sandbox side of the hanging request: its response closes when the client's socket goes.
    let upstreamClosed: Promise<number> | undefined;
    const original = drones.handle;
    drones.handle = function (req: IncomingMessage, res: ServerResponse, path: string) {
      if (path === read.path && !upstreamClosed)
        upstreamClosed = new Promise((resolve) => res.once("close", () => resolve(Date.now())));
      return original.call(this, req, res, path);
    };
    try {
      const before = received(read.service, "GET", read.path);
      inject(read.service, { method: "GET", path: read.path, times: 5 }, FAULTS.noAnswer());
      const controller = new AbortController();
      const pending = main.client.callTool({ name: read.tool, arguments: read.args }, { signal: controller.signal });
      const settled = pending.then(
        () => "resolved",
        (err: unknown) => `rejected: ${String(err)}`,
      );
      // Wait until the request hangs at the upstream, then cancel.
      for (let i = 0; i < 100 && received(read.service, "GET", read.path) === before; i++) await sleep(20);
      expect(received(read.service, "GET", read.path) - before).toBe(1);
      const abortedAt = Date.now();
      controller.abort(new Error("user cancelled"));
      const outcome = await settled;
      expect(outcome).toMatch(/^rejected: .*user cancelled/);
      expect(Date.now() - abortedAt).toBeLessThan(200);

      // The server passes the cancellation to undici, which closes the upstream socket.
      expect(upstreamClosed).toBeDefined();
      const closedAt = await Promise.race([upstreamClosed!, sleep(3000).then(() => undefined)]);
      expect(closedAt, "the sandbox saw the upstream request closed").toBeDefined();
      expect(closedAt! - abortedAt).toBeLessThan(1000);
      // ...and does not retry the cancelled read.
      await sleep(400);
      expect(received(read.service, "GET", read.path) - before).toBe(1);

      router("drones").clearFaults();
      await expectAlive(main.client);
      expectSuccess(await call(main.client, read.tool, read.args));
    } finally {
      drones.handle = original;
    }
  });

  describe("waits survive transient failures of agent/status", () => {
    const STATUS = `${API}/projects/acme-storefront/agent/status`;
    const ROUTE = `GET ${API}/projects/:projectId/agent/status`;

    async function waitWithFaults(minutes: number, faultTimes: number) {
      await ok(main.client, "build_start_agent", {
        projectId: "acme-storefront",
        prompt: `Add a blog [minutes=${minutes}]`,
      });
      const receivedBefore = received("build", "GET", STATUS);
      const answeredBefore = router("build").count(ROUTE);
      const messages: string[] = [];
      const result = (await main.client.callTool(
        { name: "build_wait", arguments: { projectId: "acme-storefront", until: "agent" } },
        {
          timeout: 30_000,
          onprogress: (p) => {
            messages.push(p.message ?? "");
            // Mid-way: after a few "Agent running" polls, the status endpoint starts failing.
            if (messages.length === 3)
              inject("build", { method: "GET", path: STATUS, times: faultTimes }, FAULTS.htmlError(502));
          },
        },
      )) as CallToolResult;
      const faulted =
        received("build", "GET", STATUS) - receivedBefore - (router("build").count(ROUTE) - answeredBefore);
      return { result, messages, faulted };
    }

    it('two 502s in a row are absorbed by the read retries: the wait ends "done"', async () => {
      const { result, messages, faulted } = await waitWithFaults(40, 2);
      expectSuccess(result);
      expect(result.structuredContent).toMatchObject({
        outcome: "done",
        until: "agent",
        project: { agentProcessStatus: "done" },
      });
      expect(faulted).toBe(2);
      expect(messages.at(-1)).toMatch(/^Agent finished/);
    });

    it('two failed polls (502 on each attempt) show as "Upstream hiccup"; the wait still ends "done"', async () => {
      const { result, messages, faulted } = await waitWithFaults(120, 6);
      expectSuccess(result);
      expect(result.structuredContent).toMatchObject({
        outcome: "done",
        until: "agent",
        project: { agentProcessStatus: "done" },
      });
      expect(faulted).toBe(6);
      const hiccups = messages.filter((m) => /^Upstream hiccup \(HTTP_ERROR\); still waiting/.test(m));
      expect(hiccups, messages.join("\n")).toHaveLength(2);
      const firstHiccup = messages.findIndex((m) => m.startsWith("Upstream hiccup"));
      expect(firstHiccup).toBeGreaterThan(0);
      // polling went on
      expect(messages.slice(firstHiccup).some((m) => /^Agent (running|done|finished)/.test(m))).toBe(true);
      expect(messages.at(-1)).toMatch(/^Agent finished/);
    });
  });

  describe("the sandbox's fault control", () => {
    it("POST /_sandbox/faults injects, DELETE clears", async () => {
      const read = READS.drone(7);
      const post = await fetch(`${sandbox.url}/_sandbox/faults`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify([
          { service: "drones", fault: "htmlError", arg: 503, method: "GET", path: read.path, times: 3 },
        ]),
      });
      expect(post.status).toBe(200);
      expect(await post.json()).toEqual({ injected: 1 });
      expectToolError(await call(main.client, read.tool, read.args), /HTTP 503, HTTP_ERROR/, /text\/html/);
      expectSuccess(await call(main.client, read.tool, read.args)); // all three used up

      // A regular-expression path, "until cleared".
      const again = await fetch(`${sandbox.url}/_sandbox/faults`, {
        method: "POST",
        body: JSON.stringify([
          { service: "drones", fault: "wrongContentType", path: "/^\\/api\\/drones\\//", times: 1000 },
        ]),
      });
      expect(again.status).toBe(200);
      expectToolError(await call(main.client, read.tool, read.args), /NON_JSON_RESPONSE/, /text\/plain/);
      expectToolError(await call(main.client, "drones_get_drone", { id: FLEET[8]._id }), /NON_JSON_RESPONSE/);
      expectSuccess(await call(main.client, "drones_list_drones", {})); // "/api/drones" does not match the pattern

      const cleared = await fetch(`${sandbox.url}/_sandbox/faults`, { method: "DELETE" });
      expect(await cleared.json()).toEqual({ cleared: true });
      expectSuccess(await call(main.client, read.tool, read.args));
    });

    it("rejects an unknown fault or service with 400", async () => {
      const badFault = await fetch(`${sandbox.url}/_sandbox/faults`, {
        method: "POST",
        body: JSON.stringify([{ service: "drones", fault: "meteor" }]),
      });
      expect(badFault.status).toBe(400);
      expect(((await badFault.json()) as { error: string }).error).toMatch(/unknown fault "meteor"; known: htmlError/);
      const badService = await fetch(`${sandbox.url}/_sandbox/faults`, {
        method: "POST",
        body: JSON.stringify({ service: "weather", fault: "noAnswer" }),
      });
      expect(badService.status).toBe(400);
      expect(((await badService.json()) as { error: string }).error).toMatch(/unknown service "weather"/);
    });

    it("SANDBOX_FAULTS injects faults into the --sandbox server's own simulators", async () => {
      const conn = await connectStdio(
        {
          PATH: process.env.PATH ?? "",
          SANDBOX_FAULTS: JSON.stringify([
            { service: "drones", fault: "htmlError", arg: 502, method: "GET", path: "/api/drones", times: 3 },
          ]),
        },
        ["--sandbox"],
      );
      try {
        expectToolError(
          await call(conn.client, "drones_list_drones", {}),
          /HTTP 502, HTTP_ERROR/,
          /Next step: the service answered something other than its JSON API/,
        );
        expectSuccess(await call(conn.client, "drones_list_drones", {}));
      } finally {
        await conn.close();
      }
    });
  });
});
