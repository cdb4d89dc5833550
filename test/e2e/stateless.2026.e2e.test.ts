// 2026-07-28 over HTTP is stateless: each request is answered by a server instance made for it,
// which registers only what that request can reach (core/mcp/server.ts, registrationsFor). These
// tests drive many requests at once and check that none sees another's context, and that an
// instance that registers nothing still answers with the server's whole description.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Sandbox } from "../../src/sandbox/index.js";
import { request2026, rpc2026, sandboxEnv, spawnHttpServer, testSandbox, type HttpServerProcess } from "../harness.js";

type Json = Record<string, any>;

const UI = { extensions: { "io.modelcontextprotocol/ui": { mimeTypes: ["text/html;profile=mcp-app"] } } };

/** One raw 2026-07-28 request; every JSON-RPC message of the answer (notifications, then the result). */
async function exchange(
  url: string,
  method: string,
  params: Json,
  capabilities: Json,
  logLevel?: string,
): Promise<Json[]> {
  const meta = logLevel ? { "io.modelcontextprotocol/logLevel": logLevel } : undefined;
  const { headers, body } = request2026(method, { ...params, _meta: meta }, { capabilities });
  const res = await fetch(url, { method: "POST", headers, body });
  const text = await res.text();
  expect(res.status, text).toBe(200);
  if (!res.headers.get("content-type")?.includes("text/event-stream")) return [JSON.parse(text) as Json];
  return text
    .split("\n")
    .filter((line) => line.startsWith("data:"))
    .map((line) => JSON.parse(line.slice(5)) as Json);
}

describe("stateless 2026-07-28 requests", () => {
  let sandbox: Sandbox;
  let http: HttpServerProcess;

  beforeAll(async () => {
    sandbox = await testSandbox();
    http = await spawnHttpServer(sandboxEnv(sandbox));
  });
  afterAll(async () => {
    await http?.stop();
    await sandbox?.close();
  });

  it("keep their own envelope when they run at once: capabilities, log level, arguments", async () => {
    const { body } = await rpc2026(http.url, "tools/call", { name: "drones_list_drones", arguments: {} });
    const drones = (body.result.structuredContent.drones as Json[]).slice(0, 6).map((d) => String(d._id));
    expect(drones.length).toBeGreaterThan(2);
    // Interleaved: lists with and without the UI extension, calls with and without a log level, each for its own drone.
    const requests = Array.from({ length: 24 }, (_, i) => {
      const views = i % 4 === 0;
      const logs = i % 3 === 0;
      const drone = drones[i % drones.length];
      if (i % 2 === 0)
        return exchange(http.url, "tools/list", {}, views ? UI : {}).then((messages) => ({
          kind: "list" as const,
          views,
          messages,
        }));
      return exchange(
        http.url,
        "tools/call",
        { name: "drones_get_drone", arguments: { id: drone } },
        {},
        logs ? "debug" : undefined,
      ).then((messages) => ({ kind: "call" as const, logs, drone, messages }));
    });
    const answers = await Promise.all(requests);
    for (const a of answers) {
      const result = a.messages.at(-1)!.result;
      expect(result, JSON.stringify(a.messages)).toBeDefined();
      if (a.kind === "list") {
        const linked = (result.tools as Json[]).filter((t) => t._meta?.ui);
        if (a.views) expect(linked.map((t) => t.name)).toContain("drones_list_drones");
        else expect(linked).toEqual([]);
      } else {
        expect(result.isError ?? false, JSON.stringify(result)).toBe(false);
        expect(result.structuredContent._id).toBe(a.drone);
        const logged = a.messages.filter((m) => m.method === "notifications/message");
        if (a.logs) expect(logged.map((m) => m.params.data.message)).toContain("tool call");
        else expect(logged).toEqual([]);
      }
    }
  });

  it("an instance that registers no tool, resource or prompt still describes the whole server", async () => {
    // server/discover registers nothing: its capabilities must still include what registrations add (completions).
    const discover = (await rpc2026(http.url, "server/discover")).body.result;
    expect(Object.keys(discover.capabilities)).toEqual(
      expect.arrayContaining(["tools", "resources", "prompts", "completions", "logging"]),
    );
    // completion/complete registers the resources, so a template's completion still answers.
    const completion = (
      await rpc2026(http.url, "completion/complete", {
        ref: { type: "ref/resource", uri: "build://projects/{projectId}" },
        argument: { name: "projectId", value: "acm" },
      })
    ).body;
    expect(completion.result?.completion.values, JSON.stringify(completion)).toEqual(["acme-storefront"]);
    // A tools/call of an unknown tool is the protocol error it always was.
    const unknown = (await rpc2026(http.url, "tools/call", { name: "no_such_tool", arguments: {} })).body;
    expect(unknown.error?.message ?? JSON.stringify(unknown)).toMatch(/no_such_tool/);
  });
});

interface Raw {
  status: number;
  contentType: string | null;
  /** Every JSON-RPC message of the answer, in order (notifications, then the response). */
  messages: Json[];
}

/** A raw 2026-07-28 POST with full control over the headers and the envelope. */
async function raw(
  url: string,
  method: string,
  params: Json,
  options: {
    id?: number;
    capabilities?: Json;
    meta?: Json;
    headers?: Record<string, string | undefined>;
    envelope?: Json;
  } = {},
): Promise<Raw> {
  const name = params.name ?? params.taskId;
  const headers: Record<string, string> = {};
  const wanted = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "mcp-protocol-version": "2026-07-28",
    "mcp-method": method,
    ...(name !== undefined ? { "mcp-name": String(name) } : {}),
    ...options.headers,
  };
  for (const [k, v] of Object.entries(wanted)) if (v !== undefined) headers[k] = v;
  const _meta = options.envelope ?? {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": { name: "lean-test", version: "1.0.0" },
    "io.modelcontextprotocol/clientCapabilities": options.capabilities ?? {},
    ...options.meta,
  };
  const res = await fetch(url, {
    method: "POST",
    headers,
    body: JSON.stringify({ jsonrpc: "2.0", id: options.id ?? 7, method, params: { ...params, _meta } }),
  });
  const text = await res.text();
  const contentType = res.headers.get("content-type");
  if (!contentType?.includes("text/event-stream"))
    return { status: res.status, contentType, messages: text ? [JSON.parse(text) as Json] : [] };
  const messages = text
    .split("\n")
    .filter((line) => line.startsWith("data:"))
    .map((line) => JSON.parse(line.slice(5)) as Json);
  return { status: res.status, contentType, messages };
}

const TASKS = { extensions: { "io.modelcontextprotocol/tasks": {} } };
const base64Name = (value: string) => `=?base64?${Buffer.from(value, "utf8").toString("base64")}?=`;
const instances = async (url: string) =>
  ((await (await fetch(new URL("/healthz", url))).json()) as { instances: { made: number; reused: number } }).instances;

// tools/call and tasks/* skip createMcpHandler when they pass every check it makes (core/http/modern.ts),
// on server instances reused one request at a time, and a tasks/get (found or not) needs no instance at all.
describe("2026-07-28 requests on the lean path", () => {
  let sandbox: Sandbox;
  let http: HttpServerProcess;
  let taskId: string;

  beforeAll(async () => {
    sandbox = await testSandbox();
    http = await spawnHttpServer(sandboxEnv(sandbox));
    const projects = await rpc2026(http.url, "tools/call", { name: "build_list_projects", arguments: {} });
    const projectId = projects.body.result.structuredContent.projects[0].projectId as string;
    const prompt = "Lean path test: keep working [minutes=100000]";
    await rpc2026(http.url, "tools/call", { name: "build_start_agent", arguments: { projectId, prompt } });
    const wait = { name: "build_wait", arguments: { projectId, until: "agent" } };
    const task = await rpc2026(http.url, "tools/call", wait, { capabilities: TASKS });
    expect(task.body.result?.resultType, JSON.stringify(task.body)).toBe("task");
    taskId = task.body.result.taskId;
  });
  afterAll(async () => {
    await http?.stop();
    await sandbox?.close();
  });

  it("answer as the SDK's entry does: the same request, Mcp-Name in Base64, goes through the entry", async () => {
    const cases: Array<[string, Json, Json]> = [
      ["tools/call", { name: "build_get_credit_costs", arguments: {} }, {}],
      ["tools/call", { name: "build_get_project", arguments: { projectId: 42 } }, {}],
      ["tasks/get", { taskId: "no-such-task" }, TASKS],
      ["tasks/get", { taskId: "no-such-task" }, {}],
      ["tasks/cancel", { taskId: "no-such-task" }, TASKS],
      ["tasks/update", { taskId: "no-such-task" }, TASKS],
    ];
    const before = await instances(http.url);
    for (const [method, params, capabilities] of cases) {
      const lean = await raw(http.url, method, params, { capabilities });
      const name = String(params.name ?? params.taskId);
      const entry = await raw(http.url, method, params, { capabilities, headers: { "mcp-name": base64Name(name) } });
      expect({ method, ...lean }).toEqual({ method, ...entry });
    }
    // tasks/get of a working task: the same record, answered without an instance (lastUpdatedAt may move).
    const lean = await raw(http.url, "tasks/get", { taskId }, { capabilities: TASKS });
    const entry = await raw(
      http.url,
      "tasks/get",
      { taskId },
      { capabilities: TASKS, headers: { "mcp-name": base64Name(taskId) } },
    );
    expect(lean.status).toBe(200);
    expect(entry.status).toBe(200);
    const { lastUpdatedAt: _a, statusMessage: _b, ...leanTask } = lean.messages[0].result;
    const { lastUpdatedAt: _c, statusMessage: _d, ...entryTask } = entry.messages[0].result;
    expect(leanTask).toEqual(entryTask);
    expect(leanTask).toMatchObject({ taskId, status: "working", resultType: "complete" });
    expect(Object.keys(lean.messages[0].result).sort()).toEqual(Object.keys(entry.messages[0].result).sort());
    const after = await instances(http.url);
    expect(after.made + after.reused).toBeGreaterThan(before.made + before.reused);
  });

  it("leave every malformed request to the entry, which answers with its own error", async () => {
    const call = { name: "build_get_credit_costs", arguments: {} };
    const get = { taskId: "t-1" };
    const other = { ...call, name: "build_get_account" };
    const cases: Array<[string, string, Json, Parameters<typeof raw>[3], number, number]> = [
      ["no MCP-Protocol-Version", "tools/call", call, { headers: { "mcp-protocol-version": undefined } }, 400, -32020],
      ["no Mcp-Method", "tasks/get", get, { headers: { "mcp-method": undefined }, capabilities: TASKS }, 400, -32020],
      ["Mcp-Method not the body's", "tools/call", call, { headers: { "mcp-method": "tools/list" } }, 400, -32020],
      ["no Mcp-Name", "tools/call", call, { headers: { "mcp-name": undefined } }, 400, -32020],
      ["Mcp-Name not the body's", "tools/call", call, { headers: { "mcp-name": other.name } }, 400, -32020],
      [
        "Mcp-Name not the taskId",
        "tasks/get",
        get,
        { headers: { "mcp-name": "t-2" }, capabilities: TASKS },
        400,
        -32020,
      ],
      ["Mcp-Name bad Base64", "tools/call", call, { headers: { "mcp-name": "=?base64?%%%?=" } }, 400, -32020],
      [
        "header names another revision",
        "tools/call",
        call,
        { headers: { "mcp-protocol-version": "2026-01-01" } },
        400,
        -32020,
      ],
      [
        "envelope capabilities not an object",
        "tasks/get",
        get,
        {
          envelope: {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": { name: "x", version: "1" },
            "io.modelcontextprotocol/clientCapabilities": "all",
          },
        },
        400,
        -32602,
      ],
      [
        "envelope names an unknown revision",
        "tools/call",
        call,
        {
          headers: { "mcp-protocol-version": "2099-01-01" },
          envelope: {
            "io.modelcontextprotocol/protocolVersion": "2099-01-01",
            "io.modelcontextprotocol/clientInfo": { name: "x", version: "1" },
            "io.modelcontextprotocol/clientCapabilities": {},
          },
        },
        400,
        -32022,
      ],
      ["tasks/get without the extension", "tasks/get", get, {}, 400, -32021],
      ["not JSON", "tools/call", call, { headers: { "content-type": "text/plain" } }, 415, -32000],
    ];
    for (const [what, method, params, options, status, code] of cases) {
      const answer = await raw(http.url, method, params, options);
      expect({ what, status: answer.status, code: answer.messages[0]?.error?.code }).toEqual({ what, status, code });
    }
  });
});

// Instances are reused one request at a time; nothing of one request may reach the next: each answer
// carries its own tenant's data, its own log level and progress token, under the same JSON-RPC id.
describe("2026-07-28 instances reused across requests (per-user keys, --sandbox, SANDBOX_ACCOUNTS=2)", () => {
  let http: HttpServerProcess;

  beforeAll(async () => {
    const env = { PATH: process.env.PATH ?? "", MCP_CREDENTIALS: "caller", SANDBOX_ACCOUNTS: "2", LOG_LEVEL: "debug" };
    http = await spawnHttpServer({ ...env, BUILD_POLL_INTERVAL_MS: "40" }, ["--sandbox"]);
  });
  afterAll(async () => {
    await http?.stop();
  });

  it("keep nothing of a request: tenant keys, log level, progress token, capabilities, request id", async () => {
    const keys = /X-Build-Api-Key: (\S+) \(account 2: (\S+)\)/.exec(http.stderr())!;
    const tenants = [keys[1], keys[2]].map((key) => ({ "x-build-api-key": key }));
    // The two accounts start alike: the first one gets a project of its own, so that each tells its tenant.
    const create = { name: "build_create_project", arguments: { projectId: "reuse-test" } };
    const created = await raw(http.url, "tools/call", create, { headers: tenants[0] });
    expect(created.messages.at(-1)!.result?.isError ?? false, JSON.stringify(created.messages)).toBe(false);
    const hasOwnProject = (answer: Json) =>
      (answer.result.structuredContent.projects as Json[]).some((p) => p.projectId === "reuse-test");
    // A working agent run per tenant: build_wait on it polls (progress) until its timeout.
    const runs: string[] = [];
    for (const headers of tenants) {
      const listed = await raw(http.url, "tools/call", { name: "build_list_projects", arguments: {} }, { headers });
      const projectId = listed.messages[0].result.structuredContent.projects[0].projectId as string;
      const prompt = "Reuse test: keep working [minutes=100000]";
      await raw(http.url, "tools/call", { name: "build_start_agent", arguments: { projectId, prompt } }, { headers });
      runs.push(projectId);
    }
    const before = await instances(http.url);
    const round = (r: number) =>
      Array.from({ length: 12 }, async (_, i) => {
        const t = (i + r) % 2;
        const headers = tenants[t];
        const logs = i % 3 === 0;
        const meta = logs ? { "io.modelcontextprotocol/logLevel": "debug" } : {};
        if (i % 4 === 1) {
          const token = `progress-${r}-${i}`;
          const wait = { name: "build_wait", arguments: { projectId: runs[t], until: "agent", timeoutSeconds: 1 } };
          const answer = await raw(http.url, "tools/call", wait, { headers, meta: { ...meta, progressToken: token } });
          const progress = answer.messages.filter((m) => m.method === "notifications/progress");
          expect(progress.length, JSON.stringify(answer.messages)).toBeGreaterThan(0);
          for (const p of progress) expect(p.params.progressToken).toBe(token);
          expect(answer.messages.at(-1)!.id).toBe(7);
          return;
        }
        if (i % 4 === 3) {
          // Capabilities per request: the extension declared or not, on the same kind of instance.
          const declared = i % 8 === 3;
          const answer = await raw(
            http.url,
            "tasks/get",
            { taskId: `none-${i}` },
            {
              headers,
              capabilities: declared ? TASKS : {},
            },
          );
          expect(answer.messages[0].error.code).toBe(declared ? -32602 : -32021);
          return;
        }
        const answer = await raw(
          http.url,
          "tools/call",
          { name: "build_list_projects", arguments: {} },
          { headers, meta },
        );
        const result = answer.messages.at(-1)!;
        expect(result.id).toBe(7);
        expect(hasOwnProject(result)).toBe(t === 0);
        const logged = answer.messages.filter((m) => m.method === "notifications/message");
        if (logs) expect(logged.length).toBeGreaterThan(0);
        else expect(logged).toEqual([]);
        for (const m of answer.messages.slice(0, -1)) expect(m.params?.progressToken).toBeUndefined();
      });
    for (let r = 0; r < 4; r++) await Promise.all(round(r));
    const after = await instances(http.url);
    expect(after.reused - before.reused).toBeGreaterThan(10);
  });
});
