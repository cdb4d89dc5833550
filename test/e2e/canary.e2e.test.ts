/**
 * Secrets never leak. The sandbox and the server run with recognisable canary keys, the HTTP
 * transport with a canary bearer token, and the calls carry canary secret values and a canary
 * Figma token. Every tool, resource, completion and prompt is driven over stdio and over HTTP,
 * with progress tokens, MCP logging at debug level (2025: logging/setLevel; 2026-07-28: the
 * logLevel of each request's envelope) and an elicitation (2026-07-28: an input_required round
 * trip), plus the error paths (wrong keys, a wrong bearer token, failing calls that carry secrets).
 * 2026-07-28 also runs tasks (the io.modelcontextprotocol/tasks extension) carrying secrets over
 * HTTP; the 2025-11-25 task-augmented calls are in tasks.2025.e2e.test.ts.
 *
 * Everything the clients received and everything the servers wrote on stderr is collected; no
 * canary may appear in any of it, and the drone service's API keys may appear only masked.
 */
import { LOG_LEVEL_META_KEY, type CallToolResult, type Client, type Tool } from "@modelcontextprotocol/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SampleRun, ToolSample } from "../../src/core/service/samples.js";
import type { Sandbox, SandboxOptions } from "../../src/sandbox/index.js";
import { SIMULATORS } from "../../src/sandbox/registry.js";
import { API_KEYS } from "../../src/sandbox/simulators/drones/index.js";
import { SERVICES } from "../../src/services/registry.js";
import {
  connectHttp,
  connectStdio,
  MODERN,
  request2026,
  sandboxEnv,
  sleep,
  spawnHttpServer,
  testSandbox,
  text,
  type HttpServerProcess,
  type StdioConnection,
  retryStart,
} from "../harness.js";
import { keepWireOrder } from "./in-order.js";

/** A canary key for each simulator, shaped like its demo key (the part before "sandbox"). */
const canaryKeys = (tag: string) =>
  Object.fromEntries(
    SIMULATORS.map((s) => [s.name, `${s.demoKey.split("sandbox")[0]}CANARY_${tag}${s.name.toUpperCase()}_7d1e9a`]),
  );
const KEYS = canaryKeys("");
const HTTP_TOKEN = "CANARY_HTTP_TOKEN_31337";
const SECRET_VALUE = "CANARY_SECRET_VALUE_9f8e7d";
const FIGMA_TOKEN = "figd_CANARY_FIGMA_TOKEN_abcdef123";
const WRONG_KEYS = canaryKeys("WRONG_");
const WRONG_HTTP_TOKEN = "CANARY_WRONG_HTTP_TOKEN_0bad";

const CANARIES = [...Object.values(KEYS), HTTP_TOKEN, SECRET_VALUE, FIGMA_TOKEN, ...Object.values(WRONG_KEYS)];
/** The secrets the samples sent (SampleRun.secret), added as the drives make them. */
const SAMPLE_SECRETS = new Set<string>();

/** Full secret values the drone service lists: key values and webhook signing secrets. */
function upstreamSecrets(value: unknown, name = ""): string[] {
  if (typeof value === "string") return /(^key$|secret)/i.test(name) ? [value] : [];
  if (Array.isArray(value)) return value.flatMap((v) => upstreamSecrets(v, name));
  if (value && typeof value === "object") return Object.entries(value).flatMap(([k, v]) => upstreamSecrets(v, k));
  return [];
}
const DRONE_API_KEY_VALUES = upstreamSecrets(API_KEYS);

// ---------------------------------------------------------------------------------------------
// Collecting what the clients see
// ---------------------------------------------------------------------------------------------

interface Seen {
  where: string;
  text: string;
}

class Collector {
  readonly seen: Seen[] = [];
  readonly calls = new Map<string, number>();
  readonly successes = new Map<string, number>();

  record(where: string, value: unknown): void {
    let t: string;
    try {
      t = typeof value === "string" ? value : (JSON.stringify(value) ?? String(value));
    } catch {
      t = String(value);
    }
    this.seen.push({ where, text: t });
  }

  /**
   * Hooks logging and every other notification of a client into the collector. 2025: the session
   * asks for debug logs; 2026-07-28: every call carries logLevel debug in its envelope (`call`).
   */
  async attach(client: Client, label: string): Promise<void> {
    client.setNotificationHandler("notifications/message", (n) => this.record(`${label} log`, n.params));
    client.fallbackNotificationHandler = async (n) => this.record(`${label} notification ${n.method}`, n);
    if (!MODERN) await client.setLoggingLevel("debug");
    this.record(`${label} instructions`, client.getInstructions() ?? "");
    this.record(`${label} server info`, client.getServerVersion());
  }

  async call(
    client: Client,
    label: string,
    name: string,
    args: Record<string, unknown>,
    options: { progress?: boolean } = {},
  ): Promise<CallToolResult> {
    this.calls.set(name, (this.calls.get(name) ?? 0) + 1);
    let n = 0;
    const result = (await client.callTool(
      { name, arguments: args, ...(MODERN ? { _meta: { [LOG_LEVEL_META_KEY]: "debug" as const } } : {}) },
      {
        timeout: 30_000,
        ...(options.progress ? { onprogress: (p) => this.record(`${label} ${name} progress ${n++}`, p) } : {}),
      },
    )) as CallToolResult;
    this.record(`${label} ${name} result`, result);
    if (!result.isError) this.successes.set(name, (this.successes.get(name) ?? 0) + 1);
    return result;
  }

  /** Calls a tool that must succeed and returns its structured content. */
  async ok<T = Record<string, unknown>>(
    client: Client,
    label: string,
    name: string,
    args: Record<string, unknown>,
    options: { progress?: boolean } = {},
  ): Promise<T> {
    const r = await this.call(client, label, name, args, options);
    if (r.isError) throw new Error(`${label} ${name} failed: ${text(r)}`);
    return r.structuredContent as T;
  }

  /** Every place a canary or a full upstream key appears. */
  leaks(extra: Seen[] = []): string[] {
    const found: string[] = [];
    for (const item of [...this.seen, ...extra]) {
      for (const secret of [...CANARIES, ...SAMPLE_SECRETS, ...DRONE_API_KEY_VALUES]) {
        if (item.text.includes(secret)) {
          const at = item.text.indexOf(secret);
          found.push(
            `${item.where} contains ${secret}: …${item.text.slice(Math.max(0, at - 80), at + secret.length + 40)}…`,
          );
        }
      }
    }
    return found;
  }
}

async function until<T>(probe: () => Promise<T>, accept: (v: T) => boolean, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (accept(v)) return v;
    if (Date.now() > deadline) throw new Error(`condition not met: ${JSON.stringify(v).slice(0, 500)}`);
    await sleep(20);
  }
}

// ---------------------------------------------------------------------------------------------
// 2026-07-28 tasks (the io.modelcontextprotocol/tasks extension), driven raw over HTTP
// ---------------------------------------------------------------------------------------------

const TASKS = "io.modelcontextprotocol/tasks";
type Json = Record<string, any>;

/** One 2026-07-28 request over HTTP declaring the tasks extension, at log level debug; answered as JSON or SSE. */
async function rpc(
  url: string,
  token: string,
  method: string,
  params: Json,
  col: Collector,
  label: string,
): Promise<Json> {
  const request = request2026(
    method,
    { ...params, _meta: { [LOG_LEVEL_META_KEY]: "debug" } },
    { capabilities: { extensions: { [TASKS]: {} } }, headers: { authorization: `Bearer ${token}` } },
  );
  const { id } = request;
  const res = await fetch(url, { method: "POST", headers: request.headers, body: request.body });
  const body = await res.text();
  col.record(`${label} ${method} raw answer`, body);
  const messages = res.headers.get("content-type")?.includes("text/event-stream")
    ? body
        .split("\n")
        .filter((l) => l.startsWith("data:"))
        .map((l) => JSON.parse(l.slice(5)) as Json)
    : [JSON.parse(body) as Json];
  const answer = messages.find((m) => m.id === id);
  if (!answer) throw new Error(`no answer to ${method}: ${body.slice(0, 500)}`);
  if (answer.error) throw new Error(`${method} failed: ${JSON.stringify(answer.error)}`);
  return answer.result as Json;
}

/** A launch carrying the secrets and a build_wait, both as tasks: creation, statuses and results are collected. */
async function driveModernTasks(
  url: string,
  token: string,
  label: string,
  prefix: string,
  col: Collector,
  sandbox: Sandbox,
): Promise<void> {
  const projectId = `${prefix}-task-launch`;
  const runTask = async (name: string, args: Json) => {
    const created = await rpc(url, token, "tools/call", { name, arguments: args }, col, label);
    expect(created.resultType, JSON.stringify(created).slice(0, 300)).toBe("task");
    const done = await until(
      () => rpc(url, token, "tasks/get", { taskId: created.taskId }, col, label),
      (t) => t.status !== "working" && t.status !== "input_required",
    );
    expect(done.status).toBe("completed");
    expect(done.result.isError).toBeFalsy();
    return done.result as Json;
  };
  const launched = await runTask("build_launch_project", {
    projectId,
    prompt: "Task canary [minutes=5] [secrets]",
    secrets: [{ secretName: "CANARY_SECRET", secretValue: SECRET_VALUE }],
    figma: { token: FIGMA_TOKEN },
    wait: true,
  });
  expect(launched.structuredContent).toMatchObject({ projectId, wait: { outcome: "done" } });
  expect(sandbox.build.storedSecretValue(projectId, "CANARY_SECRET")).toBe(SECRET_VALUE); // not vacuous
  await rpc(
    url,
    token,
    "tools/call",
    { name: "build_start_agent", arguments: { projectId, prompt: "Small fix [minutes=5]" } },
    col,
    label,
  );
  const waited = await runTask("build_wait", { projectId, until: "agent" });
  expect(waited.structuredContent).toMatchObject({ outcome: "done", until: "agent" });
}

// ---------------------------------------------------------------------------------------------
// Driving every tool, resource, completion and prompt
// ---------------------------------------------------------------------------------------------

/** Every registered service with its samples (src/services/<name>/samples.ts), loaded once. */
const SAMPLED = Promise.all(
  SERVICES.map(async (service) => {
    if (!service.samples) throw new Error(`service ${service.name} declares no samples()`);
    return { service, samples: await service.samples() };
  }),
);

/** A drive's values: its prefix, the secrets it sent (all watched for) and the results it kept. */
class Drive implements SampleRun {
  private readonly results = new Map<string, unknown>();
  constructor(
    readonly prefix: string,
    readonly first: boolean,
  ) {}

  secret(name: string, shape = ""): string {
    const value = `${shape}CANARY_${name.toUpperCase().replace(/\W+/g, "_")}_${this.prefix.replace(/\W/g, "")}`;
    SAMPLE_SECRETS.add(value);
    return value;
  }

  result<T>(key: string): T | undefined {
    return this.results.get(key) as T | undefined;
  }

  keep(key: string, value: unknown): void {
    this.results.set(key, value);
  }
}

/** One sample call, with what the service says of its answer. */
async function callSample(
  client: Client,
  label: string,
  run: Drive,
  sample: ToolSample,
  col: Collector,
): Promise<void> {
  const args = sample.args(run);
  if (!args) return;
  const name = `${label} ${sample.tool}`;
  const result = await col.call(client, label, sample.tool, args, { progress: sample.progress });
  const answer = { text: text(result), structured: result.structuredContent };
  if (sample.fails) {
    expect(result.isError, `${name} must fail: ${answer.text.slice(0, 300)}`).toBe(true);
    expect(answer.text, name).toMatch(sample.fails);
    return;
  }
  if (result.isError && sample.limited && !run.first) {
    expect(answer.text, name).toMatch(sample.limited);
    return;
  }
  expect(result.isError, `${name} failed: ${answer.text.slice(0, 600)}`).toBeFalsy();
  const seen = answer.text + JSON.stringify(answer.structured ?? null);
  for (const pattern of sample.shows ?? []) expect(seen, name).toMatch(pattern);
  expect(sample.check?.(answer), name).toBeUndefined();
  run.keep(sample.as ?? sample.tool, answer.structured);
}

async function driveEverything(
  client: Client,
  label: string,
  prefix: string,
  col: Collector,
  first: boolean,
): Promise<void> {
  const run = new Drive(prefix, first);
  const sampled = await SAMPLED;

  // --- every tool of every service, as the service's samples say ---
  for (const { samples } of sampled)
    for (const sample of samples.tools)
      if (first || !sample.firstOnly) await callSample(client, label, run, sample, col);

  // --- resources: list, templates, read every listed one and the samples' others, complete every template ---
  const listed = await client.listResources();
  col.record(`${label} resources/list`, listed);
  const templates = await client.listResourceTemplates();
  col.record(`${label} resources/templates/list`, templates);
  const uris = new Set([
    ...listed.resources.map((r) => r.uri),
    ...sampled.flatMap(({ samples }) => samples.resources?.(run) ?? []),
  ]);
  // Every template has an instance read.
  for (const t of templates.resourceTemplates) {
    const scheme = t.uriTemplate.slice(0, t.uriTemplate.indexOf("{"));
    expect(
      [...uris].some((uri) => uri.startsWith(scheme)),
      `no read of ${t.uriTemplate}`,
    ).toBe(true);
  }
  for (const uri of uris) {
    const read = await client.readResource({ uri });
    col.record(`${label} read ${uri}`, read);
    // MCP Apps views (ui://) are HTML; every data resource is JSON.
    expect(read.contents[0]?.mimeType, uri).toBe(
      uri.startsWith("ui://") ? "text/html;profile=mcp-app" : "application/json",
    );
  }
  for (const t of templates.resourceTemplates) {
    const variable = /\{(\w+)\}/.exec(t.uriTemplate)![1];
    for (const value of ["", "a", "6", "c"]) {
      const completion = await client.complete({
        ref: { type: "ref/resource", uri: t.uriTemplate },
        argument: { name: variable, value },
      });
      col.record(`${label} complete ${t.uriTemplate} ${value}`, completion);
    }
  }

  // --- prompts: every listed one, with each of its service's argument sets ---
  const prompts = await client.listPrompts();
  col.record(`${label} prompts/list`, prompts);
  const promptArgs = Object.assign({}, ...sampled.map(({ samples }) => samples.prompts ?? {})) as Record<
    string,
    Array<Record<string, string>>
  >;
  expect(prompts.prompts.map((p) => p.name).sort()).toEqual(Object.keys(promptArgs).sort());
  for (const [name, variants] of Object.entries(promptArgs)) {
    for (const args of variants) {
      const prompt = await client.getPrompt({ name, arguments: args });
      col.record(`${label} prompt ${name}`, prompt);
      expect(prompt.messages.length).toBeGreaterThan(0);
    }
  }
}

/** Tools an upstream allows once a minute: the second drive (HTTP) may be refused them, by design. */
async function limitedTools(): Promise<Set<string>> {
  return new Set((await SAMPLED).flatMap(({ samples }) => samples.tools.filter((s) => s.limited).map((s) => s.tool)));
}

async function expectEveryToolCalled(tools: Tool[], col: Collector, allowRefused = false): Promise<void> {
  const names = tools.map((t) => t.name);
  const sampled = new Set((await SAMPLED).flatMap(({ samples }) => samples.tools.map((s) => s.tool)));
  expect(
    names.filter((n) => !sampled.has(n)),
    "tools with no sample in their service's samples.ts",
  ).toEqual([]);
  const notCalled = names.filter((n) => !col.calls.get(n));
  expect(notCalled, `tools never called: ${notCalled.join(", ")}`).toEqual([]);
  const limited = allowRefused ? await limitedTools() : new Set<string>();
  const neverSucceeded = names.filter((n) => !col.successes.get(n) && !limited.has(n));
  expect(neverSucceeded, `tools that never succeeded: ${neverSucceeded.join(", ")}`).toEqual([]);
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

describe("secrets never leak", () => {
  let sandbox: Sandbox;
  let conn: StdioConnection;
  let http: HttpServerProcess;
  const col = new Collector();
  const elicitations: unknown[] = [];
  const stderrs: Seen[] = [];
  let env: Record<string, string>;

  beforeAll(async () => {
    // SandboxOptions types `keys` as the literal demo keys, so custom keys need a cast.
    sandbox = await testSandbox({ keys: KEYS as unknown as SandboxOptions["keys"], timeScale: 20_000 });
    env = sandboxEnv(sandbox, {
      LOG_LEVEL: "debug",
      MCP_HTTP_TOKEN: HTTP_TOKEN,
      BUILD_POLL_INTERVAL_MS: "20",
      BUILD_CONFIRM_SPEND: "always",
    });
    // The stdio client can be asked (and says yes), so the spend confirmations are exercised too
    // (2025: elicitation/create from the server; 2026-07-28: input_required, fulfilled by the same handler).
    conn = await retryStart(() => connectStdio(env, [], { capabilities: { elicitation: {} } }));
    keepWireOrder(conn.client); // otherwise a progress line that precedes a result is reported as stray
    conn.client.setRequestHandler("elicitation/create", async (request) => {
      elicitations.push(request.params);
      col.record("stdio elicitation", request.params);
      return { action: "accept", content: { confirm: true } };
    });
    await col.attach(conn.client, "stdio");
    http = await retryStart(() => spawnHttpServer(env));
  });
  afterAll(async () => {
    await conn?.close();
    await http?.stop();
    await sandbox?.close();
  });

  it("the sandbox really uses the canary keys", () => {
    expect(sandbox.keys).toEqual(KEYS);
    for (const service of SERVICES) expect(env[service.apiKeyVar], service.name).toBe(KEYS[service.name]);
    expect(DRONE_API_KEY_VALUES.length).toBeGreaterThanOrEqual(API_KEYS.length + 1); // keys + a webhook signing secret
  });

  it("drives every tool, resource, completion and prompt over stdio", { timeout: 60_000 }, async () => {
    const { tools } = await conn.client.listTools();
    col.record("stdio tools/list", tools);
    await driveEverything(conn.client, "stdio", "cnry-s", col, true);
    await expectEveryToolCalled(tools, col);
    expect(elicitations.length).toBeGreaterThan(0); // spends were confirmed through elicitation
    // The secrets did reach the upstream, so the test is not vacuous.
    const stored = sandbox.build.storedSecretValue("cnry-s-launch", "CANARY_SECRET");
    expect(SAMPLE_SECRETS.has(stored!), String(stored)).toBe(true);
    expect(col.seen.some((s) => s.where.includes("progress"))).toBe(true);
    expect(col.seen.some((s) => s.where.includes(" log"))).toBe(true);
  });

  it("drives every tool, resource, completion and prompt over HTTP with the bearer token", {
    timeout: 60_000,
  }, async () => {
    const client = await connectHttp(http.url, { Authorization: `Bearer ${HTTP_TOKEN}` });
    keepWireOrder(client);
    const httpCol = new Collector();
    try {
      await httpCol.attach(client, "http");
      const { tools } = await client.listTools();
      await driveEverything(client, "http", "cnry-h", httpCol, false);
      await expectEveryToolCalled(tools, httpCol, true);
      if (MODERN) await driveModernTasks(http.url, HTTP_TOKEN, "http", "cnry-h", httpCol, sandbox);
      const health = await fetch(new URL("/healthz", http.url));
      col.record("http healthz", await health.text());
    } finally {
      col.seen.push(...httpCol.seen);
      await client.close();
    }
  });

  it("answers a wrong bearer token with a 401 that echoes no token", async () => {
    const opening = MODERN
      ? {
          headers: { "mcp-protocol-version": "2026-07-28", "mcp-method": "server/discover" } as Record<string, string>,
          body: {
            jsonrpc: "2.0",
            id: 1,
            method: "server/discover",
            params: {
              _meta: {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": { name: "x", version: "1" },
                "io.modelcontextprotocol/clientCapabilities": {},
              },
            },
          },
        }
      : {
          headers: {} as Record<string, string>,
          body: {
            jsonrpc: "2.0",
            id: 1,
            method: "initialize",
            params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "x", version: "1" } },
          },
        };
    const res = await fetch(http.url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        authorization: `Bearer ${WRONG_HTTP_TOKEN}`,
        ...opening.headers,
      },
      body: JSON.stringify(opening.body),
    });
    expect(res.status).toBe(401);
    const body = await res.text();
    col.record("http 401 body", body);
    col.record("http 401 headers", [...res.headers.entries()]);
    await expect(connectHttp(http.url, { Authorization: `Bearer ${WRONG_HTTP_TOKEN}` })).rejects.toThrow();
    try {
      await connectHttp(http.url, { Authorization: `Bearer ${WRONG_HTTP_TOKEN}` });
    } catch (err) {
      col.record("http wrong-token client error", String(err));
    }
  });

  it("names the rejected key's variable on a 401 without echoing the wrong keys", { timeout: 30_000 }, async () => {
    const wrong = await retryStart(() =>
      connectStdio(
        sandboxEnv(sandbox, {
          LOG_LEVEL: "debug",
          ...Object.fromEntries(SERVICES.map((s) => [s.apiKeyVar, WRONG_KEYS[s.name]])),
        }),
      ),
    );
    try {
      const wcol = new Collector();
      await wcol.attach(wrong.client, "wrong-key");
      // Each service's key check, and its first sample that sends a secret.
      const run = new Drive("cnry-wrong-key", false);
      for (const { service, samples } of await SAMPLED) {
        const check = service.keyCheck ?? { tool: samples.tools[0].tool, input: samples.tools[0].args(run) };
        const carrying = samples.tools.find((s) => !s.fails && JSON.stringify(s.args(run) ?? {}).includes("CANARY_"));
        const calls = [[check.tool, check.input ?? {}] as const];
        if (carrying) calls.push([carrying.tool, carrying.args(run)!]);
        for (const [name, args] of calls) {
          const r = await wcol.call(wrong.client, "wrong-key", name, args as Record<string, unknown>);
          expect(r.isError, name).toBe(true);
          expect(text(r), name).toMatch(/HTTP 401/);
          expect(text(r), name).toContain(service.apiKeyVar);
        }
      }
      for (const uri of (await SAMPLED).flatMap(({ samples }) => samples.resources?.(run) ?? [])) {
        try {
          wcol.record(`wrong-key read ${uri}`, await wrong.client.readResource({ uri }));
        } catch (err) {
          wcol.record(`wrong-key read ${uri} error`, String(err));
        }
      }
      try {
        wcol.record("wrong-key resources/list", await wrong.client.listResources());
      } catch (err) {
        wcol.record("wrong-key resources/list error", String(err));
      }
      await sleep(50); // let the last log notifications arrive
      col.seen.push(...wcol.seen);
      stderrs.push({ where: "wrong-key server stderr", text: wrong.stderr() });
    } finally {
      await wrong.close();
    }
  });

  it("leaks no canary and no full upstream key anywhere the clients or the logs can see", async () => {
    await sleep(100);
    const all = [
      ...stderrs,
      { where: "stdio server stderr", text: conn.stderr() },
      { where: "http server stderr", text: http.stderr() },
    ];
    // The logs were really at debug level and the collection is not empty.
    expect(conn.stderr()).toMatch(/"level":"debug"/);
    expect(col.seen.length).toBeGreaterThan(200);
    const leaks = col.leaks(all);
    expect(leaks, leaks.join("\n")).toEqual([]);
    expect(conn.strayStdout()).toEqual([]);
  });
});
