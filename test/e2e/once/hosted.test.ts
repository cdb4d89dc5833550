// Per-user keys (MCP_CREDENTIALS=caller) on one HTTP server with state in process: each request
// acts with the keys it brings, and two tenants with a project of the same id never see each
// other's project, tasks, change notifications or log lines. The sandbox runs two build accounts
// with the same demo data, so "acme-storefront" exists twice, once per key.
import { request } from "node:http";
import type { Client } from "@modelcontextprotocol/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Sandbox } from "../../../src/sandbox/index.js";
import {
  call,
  connectHttp,
  ok,
  rpc2026,
  sandboxUrlsEnv,
  sleep,
  spawnHttpServer,
  testSandbox,
  text,
  until,
  type HttpServerProcess,
} from "../../harness.js";

const TASKS = { extensions: { "io.modelcontextprotocol/tasks": {} } };

const getAccount = {
  jsonrpc: "2.0",
  id: 1,
  method: "tools/call",
  params: {
    name: "build_get_account",
    arguments: {},
    _meta: {
      "io.modelcontextprotocol/protocolVersion": "2026-07-28",
      "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1.0.0" },
      "io.modelcontextprotocol/clientCapabilities": {},
    },
  },
};

/**
 * A POST whose headers may repeat (fetch would join repeats into one): node's setHeader with an
 * array sends each line.
 */
function rawPost(
  url: string,
  headers: Record<string, string | string[]>,
  body: unknown,
): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: "POST" }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (text += chunk));
      res.on("end", () => {
        const data = text.split("\n").find((l) => l.startsWith("data:"));
        resolve({ status: res.statusCode ?? 0, body: JSON.parse(data ? data.slice(5) : text) });
      });
    });
    req.on("error", reject);
    const fixed = {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2026-07-28",
    };
    for (const [name, value] of Object.entries({
      ...fixed,
      "mcp-method": "tools/call",
      "mcp-name": "build_get_account",
      ...headers,
    }))
      req.setHeader(name, value);
    req.end(JSON.stringify(body));
  });
}
const INTERVAL = 50;

describe("per-user keys: one server, two tenants, one project id", () => {
  let sandbox: Sandbox;
  let http: HttpServerProcess;
  let keyA: string;
  let keyB: string;
  const clients: Client[] = [];
  const connect = async (headers: Record<string, string>, era: "legacy" | "modern" = "modern") => {
    const client = await connectHttp(http.url, headers, {}, era);
    clients.push(client);
    return client;
  };

  beforeAll(async () => {
    sandbox = await testSandbox({ accounts: 2 });
    [keyA, keyB] = sandbox.accounts.build.map((a) => a.key);
    http = await spawnHttpServer(
      {
        PATH: process.env.PATH ?? "",
        MCP_CREDENTIALS: "caller",
        ...sandboxUrlsEnv(sandbox),
        BUILD_POLL_INTERVAL_MS: String(INTERVAL),
        LOG_LEVEL: "debug",
      },
      ["--toolsets", "all"],
    );
  });
  afterAll(async () => {
    await Promise.allSettled(clients.map((c) => c.close()));
    await http?.stop();
    await sandbox?.close();
  });

  it("lists every tool without keys, and a call without its key names the header and sends nothing", async () => {
    const anonymous = await connect({});
    const { tools } = await anonymous.listTools();
    expect(tools.length).toBeGreaterThan(60);
    const before = sandbox.build.router.count() + sandbox.accounts.build[1].simulator.router.count();
    const build = await call(anonymous, "build_get_project", { projectId: "acme-storefront" });
    expect(build.isError).toBe(true);
    expect(text(build)).toMatch(/x-build-api-key header/);
    expect(text(build)).toMatch(/nothing was sent upstream/);
    const drones = await call(anonymous, "drones_list_drones", {});
    expect(drones.isError).toBe(true);
    expect(text(drones)).toMatch(/x-drones-api-key header/);
    expect(sandbox.build.router.count() + sandbox.accounts.build[1].simulator.router.count()).toBe(before);
  });

  it("lists no account resources to a caller without the build key; a read answers the header to send", async () => {
    for (const era of ["legacy", "modern"] as const) {
      const anonymous = await connect({}, era);
      const uris = (await anonymous.listResources()).resources.map((r) => r.uri);
      expect(uris).not.toContain("build://account");
      expect(uris).not.toContain("build://credit-costs");
      for (const uri of ["build://account", "build://credit-costs"]) {
        const read = await anonymous.readResource({ uri }).then(
          () => undefined,
          (e: { code?: number; message?: string }) => e,
        );
        expect(read?.code, uri).toBe(-32602);
        expect(read?.message).toMatch(/x-build-api-key header/);
      }
      // With the key, both are listed.
      const keyed = await connect({ "x-build-api-key": keyA }, era);
      const listed = (await keyed.listResources()).resources.map((r) => r.uri);
      expect(listed).toEqual(expect.arrayContaining(["build://account", "build://credit-costs"]));
    }
  });

  it("acts with each caller's own key: the same project id is two projects", async () => {
    const a = await connect({ "x-build-api-key": keyA });
    const b = await connect({ "x-build-api-key": keyB });
    await ok(a, "build_update_project", { projectId: "acme-storefront", label: "Tenant A's store" });
    expect((await ok(a, "build_get_project", { projectId: "acme-storefront" })).label).toBe("Tenant A's store");
    expect((await ok(b, "build_get_project", { projectId: "acme-storefront" })).label).toBe("Acme Storefront");
    // A wrong key is the upstream's 401, with advice that names the header, not a variable.
    const wrong = await connect({ "x-build-api-key": "tlm_sk_not_a_real_key_000000000000" });
    const refused = await call(wrong, "build_get_account", {});
    expect(refused.isError).toBe(true);
    expect(text(refused)).toMatch(/HTTP 401.*\n.*x-build-api-key header/s);
  });

  it("takes the build key from Authorization: Bearer tlm_sk_… when no MCP_HTTP_TOKEN is set", async () => {
    const viaBearer = await connect({ authorization: `Bearer ${keyA}` });
    expect((await ok(viaBearer, "build_get_project", { projectId: "acme-storefront" })).label).toBe("Tenant A's store");
  });

  it("refuses a key header sent twice (400 naming it), a key over 1,024 chars; nothing goes upstream", async () => {
    const before = sandbox.build.router.count() + sandbox.accounts.build[1].simulator.router.count();
    // node would join the two into "keyA, keyB" and send that upstream as the key.
    const twice = await rawPost(http.url, { "x-build-api-key": [keyA, keyB] }, getAccount);
    expect(twice.status).toBe(400);
    expect(twice.body.error.message).toMatch(/X-Build-Api-Key was sent 2 times; send it once/);
    const long = await rawPost(http.url, { "x-build-api-key": `tlm_sk_${"k".repeat(1100)}` }, getAccount);
    expect(long.status).toBe(400);
    expect(long.body.error.message).toMatch(/X-Build-Api-Key is 1107 characters long, over the 1,024-character limit/);
    expect(sandbox.build.router.count() + sandbox.accounts.build[1].simulator.router.count()).toBe(before);
    // One key of the same length as before still works.
    expect((await rawPost(http.url, { "x-build-api-key": keyA }, getAccount)).body.result?.content?.[0]?.text).toMatch(
      /^Balance: /,
    );
  });

  it("binds a confirmation to its tenant: another's answer spends nothing, the owner's still works", async () => {
    const elicit = { elicitation: { form: {} } };
    const creates = (i: number) => sandbox.accounts.build[i].simulator.router.count("POST /api/v1/vcaas/projects");
    const call = (key: string, extra: Record<string, unknown> = {}) =>
      rpc2026(
        http.url,
        "tools/call",
        { name: "build_create_project", arguments: { projectId: "asked-of-a" }, ...extra },
        { headers: { "x-build-api-key": key }, capabilities: elicit },
      );
    const before = [creates(0), creates(1)];
    const asked = (await call(keyA)).body.result;
    expect(asked.resultType).toBe("input_required");
    const answer = {
      inputResponses: { confirm_spend: { action: "accept", content: { confirm: true } } },
      requestState: asked.requestState,
    };
    const stolen = (await call(keyB, answer)).body.result;
    expect(stolen.isError).toBe(true);
    expect(stolen.content[0].text).toMatch(/asked of another caller.*nothing was sent or spent/);
    expect([creates(0), creates(1)]).toEqual(before);
    const owners = (await call(keyA, answer)).body.result;
    expect(owners.isError).toBeFalsy();
    expect(owners.structuredContent).toMatchObject({ projectId: "asked-of-a" });
    expect([creates(0), creates(1)]).toEqual([before[0] + 1, before[1]]);
  });

  it("shows a tenant's tasks to that tenant only", async () => {
    const headersA = { "x-build-api-key": keyA };
    const headersB = { "x-build-api-key": keyB };
    await rpc2026(
      http.url,
      "tools/call",
      { name: "build_start_agent", arguments: { projectId: "acme-storefront", prompt: "Add a blog [minutes=100000]" } },
      { headers: headersA },
    );
    const created = (
      await rpc2026(
        http.url,
        "tools/call",
        { name: "build_wait", arguments: { projectId: "acme-storefront", until: "agent" } },
        { headers: headersA, capabilities: TASKS },
      )
    ).body.result;
    expect(created.resultType).toBe("task");
    const asA = await rpc2026(
      http.url,
      "tasks/get",
      { taskId: created.taskId },
      { headers: headersA, capabilities: TASKS },
    );
    expect(asA.body.result).toMatchObject({ taskId: created.taskId, status: "working" });
    for (const method of ["tasks/get", "tasks/cancel"]) {
      const asB = await rpc2026(
        http.url,
        method,
        { taskId: created.taskId },
        { headers: headersB, capabilities: TASKS },
      );
      expect(asB.body.error?.message).toMatch(/Task not found/);
    }
    expect(
      (await rpc2026(http.url, "tasks/get", { taskId: created.taskId }, { headers: headersA, capabilities: TASKS }))
        .body.result.status,
    ).toBe("working");
    await rpc2026(http.url, "tasks/cancel", { taskId: created.taskId }, { headers: headersA, capabilities: TASKS });
    await ok(await connect(headersA), "build_stop_agent", { projectId: "acme-storefront" });
  });

  it("sends a tenant's change notifications to that tenant's listen streams only", async () => {
    const a = await connect({ "x-build-api-key": keyA });
    const b = await connect({ "x-build-api-key": keyB });
    const uri = "build://projects/spring-campaign";
    const heard = { a: 0, b: 0 };
    a.setNotificationHandler("notifications/resources/updated", () => void heard.a++);
    b.setNotificationHandler("notifications/resources/updated", () => void heard.b++);
    const streams = [
      await a.listen({ resourceSubscriptions: [uri] }),
      await b.listen({ resourceSubscriptions: [uri] }),
    ];
    try {
      await sleep(INTERVAL * 3); // both pollers take their baseline
      await ok(a, "build_start_agent", { projectId: "spring-campaign", prompt: "New hero [minutes=5]" });
      await until(
        async () => heard.a,
        (n) => n >= 1,
      );
      await sleep(INTERVAL * 6);
      expect(heard.b).toBe(0);
    } finally {
      await Promise.all(streams.map((s) => s.close()));
    }
    await ok(a, "build_wait", { projectId: "spring-campaign", until: "agent" });
  });

  it("sends a session's log lines to that session only (2025 sessions)", async () => {
    const a = await connect({ "x-build-api-key": keyA }, "legacy");
    const b = await connect({ "x-build-api-key": keyB }, "legacy");
    const logs = { a: [] as string[], b: [] as string[] };
    a.setNotificationHandler("notifications/message", (n) => void logs.a.push(JSON.stringify(n.params)));
    b.setNotificationHandler("notifications/message", (n) => void logs.b.push(JSON.stringify(n.params)));
    await a.setLoggingLevel("debug");
    await b.setLoggingLevel("debug");
    const failed = await call(a, "build_get_project", { projectId: "tenant-a-secret-project" });
    expect(failed.isError).toBe(true);
    await until(
      async () => logs.a.length,
      (n) => n >= 1,
    );
    await sleep(200);
    expect(logs.a.join("\n")).toMatch(/tool call failed/);
    expect(logs.b).toEqual([]);
    // A session belongs to the keys it was opened with.
    const sessionId = (a as unknown as { transport: { sessionId?: string } }).transport.sessionId!;
    const hijack = await fetch(http.url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-session-id": sessionId,
        "mcp-protocol-version": "2025-11-25",
        "x-build-api-key": keyB,
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    expect(hijack.status).toBe(403);
  });

  it("never shows a key in results, logs or stderr", async () => {
    const a = await connect({ "x-build-api-key": keyA });
    const results = [
      await call(a, "build_get_account", {}),
      await call(a, "build_get_project", { projectId: "no-such-project" }),
    ];
    for (const result of results) {
      const all = JSON.stringify(result);
      expect(all).not.toContain(keyA);
    }
    expect(http.stderr()).not.toContain(keyA);
    expect(http.stderr()).not.toContain(keyB);
  });
});
