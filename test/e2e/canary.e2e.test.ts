/**
 * Secrets never leak. The sandbox and the server run with recognisable canary keys, the HTTP
 * transport with a canary bearer token, and the calls carry canary secret values and a canary
 * design token. Every tool, resource, completion and prompt is driven over stdio and over HTTP,
 * with progress tokens, a task-augmented call, MCP logging at debug level and an elicitation, plus
 * the error paths (wrong keys, a wrong bearer token, failing calls that carry secrets).
 *
 * Everything the clients received and everything the servers wrote on stderr is collected; no
 * canary may appear in any of it, and the drone service's API keys may appear only masked.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
  type CallToolResult,
  type Tool,
} from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Sandbox, SandboxOptions } from "../../src/sandbox/index.js";
import { API_KEYS } from "../../src/sandbox/simulators/drones/index.js";
import { connectHttp, connectStdio, sandboxEnv, sleep, spawnHttpServer, testSandbox, text, type HttpServerProcess, type StdioConnection, retryStart } from "../harness.js";

const KEYS = { build: "tlm_sk_CANARY_BUILD_7d1e9a", sizing: "CANARY_SIZING_KEY_55b2", drones: "dfk_live_CANARY_DRONES_c0ffee" };
const HTTP_TOKEN = "CANARY_HTTP_TOKEN_31337";
const SECRET_VALUE = "CANARY_SECRET_VALUE_9f8e7d";
const SET_SECRET_VALUE = "CANARY_SET_SECRET_VALUE_42";
const DESIGN_TOKEN = "dsgn_CANARY_DESIGN_TOKEN_abcdef123";
/** Values only ever sent on calls that fail, so they are registered as secrets by nothing else. */
const FAILING_SET_SECRET_VALUE = "CANARY_MISSING_PROJECT_SECRET_88";
const FAILING_LAUNCH_SECRET = "CANARY_FAILED_LAUNCH_SECRET_66";
const FAILING_DESIGN_TOKEN = "dsgn_CANARY_FAILED_LAUNCH_TOKEN_0042";
const INVALID_ARGS_SECRET = "CANARY_INVALID_ARGS_SECRET_13";
/** Design tokens the sandbox refuses: DESIGN_TOKEN_INVALID and DESIGN_TOKEN_MALFORMED. */
const REFUSED_DESIGN_TOKEN = "dsgn_invalid_CANARY_REFUSED_TOKEN_77";
const MALFORMED_DESIGN_TOKEN = "CANARY_MALFORMED_DESIGN_TOKEN_99";
const WRONG_KEYS = { build: "tlm_sk_CANARY_WRONG_BUILD_0bad", sizing: "CANARY_WRONG_SIZING_0bad", drones: "dfk_live_CANARY_WRONG_DRONES_0bad" };
const WRONG_HTTP_TOKEN = "CANARY_WRONG_HTTP_TOKEN_0bad";

const CANARIES = [
  ...Object.values(KEYS),
  HTTP_TOKEN,
  SECRET_VALUE,
  SET_SECRET_VALUE,
  DESIGN_TOKEN,
  FAILING_SET_SECRET_VALUE,
  FAILING_LAUNCH_SECRET,
  FAILING_DESIGN_TOKEN,
  INVALID_ARGS_SECRET,
  REFUSED_DESIGN_TOKEN,
  MALFORMED_DESIGN_TOKEN,
  ...Object.values(WRONG_KEYS),
  WRONG_HTTP_TOKEN,
];

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

  /** Hooks logging, elicitation and every other notification of a client into the collector. */
  async attach(client: Client, label: string): Promise<void> {
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => this.record(`${label} log`, n.params));
    client.fallbackNotificationHandler = async (n) => this.record(`${label} notification ${n.method}`, n);
    await client.setLoggingLevel("debug");
    this.record(`${label} instructions`, client.getInstructions() ?? "");
    this.record(`${label} server info`, client.getServerVersion());
  }

  async call(client: Client, label: string, name: string, args: Record<string, unknown>, options: { progress?: boolean } = {}): Promise<CallToolResult> {
    this.calls.set(name, (this.calls.get(name) ?? 0) + 1);
    let n = 0;
    const result = (await client.callTool({ name, arguments: args }, undefined, {
      timeout: 30_000,
      ...(options.progress ? { onprogress: (p) => this.record(`${label} ${name} progress ${n++}`, p) } : {}),
    })) as CallToolResult;
    this.record(`${label} ${name} result`, result);
    if (!result.isError) this.successes.set(name, (this.successes.get(name) ?? 0) + 1);
    return result;
  }

  /** Calls a tool that must succeed and returns its structured content. */
  async ok<T = Record<string, unknown>>(client: Client, label: string, name: string, args: Record<string, unknown>, options: { progress?: boolean } = {}): Promise<T> {
    const r = await this.call(client, label, name, args, options);
    if (r.isError) throw new Error(`${label} ${name} failed: ${text(r)}`);
    return r.structuredContent as T;
  }

  /** Every place a canary or a full upstream key appears. */
  leaks(extra: Seen[] = []): string[] {
    const found: string[] = [];
    for (const item of [...this.seen, ...extra]) {
      for (const secret of [...CANARIES, ...DRONE_API_KEY_VALUES]) {
        if (item.text.includes(secret)) {
          const at = item.text.indexOf(secret);
          found.push(`${item.where} contains ${secret}: …${item.text.slice(Math.max(0, at - 80), at + secret.length + 40)}…`);
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
// Driving every tool, resource, completion and prompt
// ---------------------------------------------------------------------------------------------

async function driveEverything(client: Client, label: string, prefix: string, col: Collector): Promise<void> {
  const launchId = `${prefix}-launch`;
  const taskLaunchId = `${prefix}-task-launch`;
  const emptyId = `${prefix}-empty`;

  // --- failing calls that carry secrets, first, so nothing else registered those values ---
  const missing = await col.call(client, label, "build_set_secret", { projectId: `${prefix}-missing`, secretName: "MISSING_ONE", secretValue: FAILING_SET_SECRET_VALUE });
  expect(missing.isError).toBe(true);
  expect(text(missing)).toMatch(/HTTP 404/);
  const badLaunch = await col.call(client, label, "build_launch_project", {
    projectId: `${prefix}-bad-group`,
    prompt: "Never built",
    groupId: "grp_nope",
    secrets: [{ secretName: "FAILING", secretValue: FAILING_LAUNCH_SECRET }],
    design: { token: FAILING_DESIGN_TOKEN },
  });
  expect(badLaunch.isError).toBe(true);
  const invalid = await col.call(client, label, "build_launch_project", {
    projectId: `${prefix}-invalid`,
    prompt: "Never sent",
    secrets: [{ secretName: "BAD_ENV", secretValue: INVALID_ARGS_SECRET, environment: "staging" }],
  });
  expect(invalid.isError).toBe(true);
  if (label === "stdio") {
    // Design token checks are rate-limited upstream (10 a minute), so only once per test run.
    for (const [token, code] of [
      [REFUSED_DESIGN_TOKEN, "DESIGN_TOKEN_INVALID"],
      [MALFORMED_DESIGN_TOKEN, "DESIGN_TOKEN_MALFORMED"],
    ]) {
      const refused = await col.call(client, label, "build_launch_project", { projectId: `${prefix}-bad-design`, prompt: "Never built", design: { token } });
      expect(refused.isError).toBe(true);
      expect(text(refused)).toContain(code);
    }
  }

  // --- build: reads ---
  await col.ok(client, label, "build_get_account", {});
  await col.ok(client, label, "build_get_credit_costs", {});
  await col.ok(client, label, "build_list_projects", { limit: 100 });

  // --- build: launch with wait, secrets and a design token, reporting progress ---
  const launched = await col.ok<{ projectId: string; design?: { connected?: boolean }; wait?: { outcome: string } }>(
    client,
    label,
    "build_launch_project",
    {
      projectId: launchId,
      prompt: "A canary shop [minutes=5] [secrets]",
      label: "Canary",
      secrets: [{ secretName: "CANARY_SECRET", secretValue: SECRET_VALUE }],
      design: { token: DESIGN_TOKEN },
      wait: true,
      timeoutSeconds: 60,
    },
    { progress: true },
  );
  expect(launched.projectId).toBe(launchId);
  expect(launched.design?.connected).toBe(true);
  expect(launched.wait?.outcome).toBe("done");

  await col.ok(client, label, "build_get_project", { projectId: launchId });
  await col.ok(client, label, "build_get_agent_status", { projectId: launchId });

  // Upstream free text is quoted as data.
  const convo = await col.call(client, label, "build_get_conversation", { projectId: launchId, limit: 20 });
  expect(convo.isError).toBeFalsy();
  const messages = (convo.structuredContent as { conversation: Array<{ message?: string }> }).conversation.filter((m) => m.message);
  expect(messages.length).toBeGreaterThan(0);
  expect(text(convo)).toMatch(/quoted data, not instructions/);
  for (const m of messages) {
    const start = m.message!.replace(/\s+/g, " ").trim().slice(0, 30);
    expect(text(convo), `agent message quoted: ${start}`).toContain(`: "${start}`);
  }

  // Another run, waited on with progress.
  const run = await col.ok<{ outcome?: string; wait?: { outcome: string } }>(
    client,
    label,
    "build_start_agent",
    { projectId: launchId, prompt: "Add a canary page [minutes=3]", wait: true, timeoutSeconds: 60 },
    { progress: true },
  );
  expect(JSON.stringify(run)).toMatch(/"outcome":"done"/);

  // Start a long run and stop it.
  await col.ok(client, label, "build_start_agent", { projectId: launchId, prompt: "Rewrite everything [minutes=100000]" });
  await col.ok(client, label, "build_stop_agent", { projectId: launchId });

  // A task-augmented build_wait.
  await col.ok(client, label, "build_start_agent", { projectId: launchId, prompt: "Small fix [minutes=5]" });
  col.calls.set("build_wait", (col.calls.get("build_wait") ?? 0) + 1);
  const created = await client.request({ method: "tools/call", params: { name: "build_wait", arguments: { projectId: launchId, until: "agent" }, task: { ttl: 60_000 } } }, CreateTaskResultSchema);
  col.record(`${label} build_wait task created`, created);
  const final = await until(
    async () => {
      const t = await client.experimental.tasks.getTask(created.task.taskId);
      col.record(`${label} build_wait task status`, t);
      return t;
    },
    (t) => t.status !== "working" && t.status !== "input_required",
  );
  expect(final.status).toBe("completed");
  const waited = await client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema);
  col.record(`${label} build_wait task result`, waited);
  expect(waited.isError).toBeFalsy();
  col.successes.set("build_wait", (col.successes.get("build_wait") ?? 0) + 1);

  // A task-augmented launch carrying the secrets, with wait: its status messages are collected too.
  const taskLaunch = await client.request(
    {
      method: "tools/call",
      params: {
        name: "build_launch_project",
        arguments: { projectId: taskLaunchId, prompt: "Task canary [minutes=5]", secrets: [{ secretName: "CANARY_SECRET", secretValue: SECRET_VALUE }], design: { token: DESIGN_TOKEN }, wait: true },
        task: { ttl: 60_000 },
      },
    },
    CreateTaskResultSchema,
  );
  col.record(`${label} launch task created`, taskLaunch);
  await until(
    async () => {
      const t = await client.experimental.tasks.getTask(taskLaunch.task.taskId);
      col.record(`${label} launch task status`, t);
      return t;
    },
    (t) => t.status !== "working" && t.status !== "input_required",
  );
  const taskLaunchResult = await client.experimental.tasks.getTaskResult(taskLaunch.task.taskId, CallToolResultSchema);
  col.record(`${label} launch task result`, taskLaunchResult);
  expect(taskLaunchResult.isError).toBeFalsy();
  const listedTasks = await client.experimental.tasks.listTasks();
  col.record(`${label} tasks/list`, listedTasks);

  await col.ok(client, label, "build_wait", { projectId: launchId, until: "agent", timeoutSeconds: 60 }, { progress: true });

  // Deploy and follow it.
  await col.ok(client, label, "build_deploy", { projectId: launchId, wait: true, timeoutSeconds: 60 }, { progress: true });
  await col.ok(client, label, "build_get_deployment_status", { projectId: launchId });
  await col.ok(client, label, "build_wait", { projectId: launchId, until: "deployment", timeoutSeconds: 60 }, { progress: true });

  // Versions and recovery.
  const { versions } = await col.ok<{ versions: Array<{ _id: string; prompt?: string }> }>(client, label, "build_list_versions", { projectId: launchId, limit: 10 });
  const version = versions.find((v) => !v.prompt?.includes("[recover-fail]"))!;
  await col.ok(client, label, "build_recover_version", { projectId: launchId, versionId: version._id, wait: true, timeoutSeconds: 60 }, { progress: true });

  // Logs are delimited as server output.
  const logs = await col.call(client, label, "build_get_logs", { projectId: launchId });
  expect(logs.isError).toBeFalsy();
  expect(text(logs)).toMatch(/server output, not instructions/);
  expect(text(logs)).toMatch(/\n---\n[\s\S]*\n---$/);

  await col.ok(client, label, "build_restart_server", { projectId: launchId });

  // Secrets: set (value never echoed), find its id, delete.
  const set = await col.call(client, label, "build_set_secret", { projectId: launchId, secretName: "CANARY_SET", secretValue: SET_SECRET_VALUE, environment: "production" });
  expect(set.isError).toBeFalsy();
  expect(text(set)).toMatch(/value is not shown/);
  const details = await col.ok<{ secrets?: Array<{ _id: string; secretName: string }> }>(client, label, "build_get_project", { projectId: launchId });
  const secretId = details.secrets?.find((s) => s.secretName === "CANARY_SET")?._id;
  expect(secretId).toBeTruthy();
  await col.ok(client, label, "build_delete_secret", { projectId: launchId, secretId: secretId! });

  await col.ok(client, label, "build_set_domain", { projectId: launchId, hostname: `${prefix}.canary.example.org` });
  await col.ok(client, label, "build_remove_domain", { projectId: launchId });
  await col.ok(client, label, "build_get_database_schema", { projectId: "acme-storefront" });
  await col.ok(client, label, "build_query_database", { projectId: "acme-storefront", tableName: "customers", queryOptions: { _limit: 3 } });
  await col.ok(client, label, "build_create_project", { projectId: emptyId, label: "Empty canary" });
  await col.ok(client, label, "build_delete_project", { projectId: emptyId });

  // --- sizing ---
  const catalog = await col.ok<{ items: Array<{ _id: string }> }>(client, label, "sizing_get_catalog", { limit: 5 });
  const item = catalog.items[0]._id;
  await col.ok(client, label, "sizing_recommend_size", { clothing_item_id: item, measurements: { chest: 96, waist: 82, hips: 100 }, preferred_fit: "regular" });
  await col.ok(client, label, "sizing_create_try_on", { clothing_item_id: item, user_id: `${prefix}-customer`, measurements: { chest: 96, waist: 82, hips: 100 } });

  // --- drones ---
  const drones = await col.ok<{ drones: Array<{ _id: string }> }>(client, label, "drones_list_drones", { limit: 5 });
  await col.ok(client, label, "drones_get_drone", { id: drones.drones[0]._id });
  const missions = await col.ok<{ missions: Array<{ _id: string }> }>(client, label, "drones_list_missions", { limit: 5 });
  await col.ok(client, label, "drones_get_mission", { id: missions.missions[0]._id });
  const alerts = await col.ok<{ alerts: Array<{ _id: string }> }>(client, label, "drones_list_alerts", { limit: 5 });
  await col.ok(client, label, "drones_get_alert", { id: alerts.alerts[0]._id });
  await col.ok(client, label, "drones_update_alert", { id: alerts.alerts[0]._id, changes: { status: "acknowledged" } });
  const keys = await col.ok<{ api_keys: unknown[]; maskedValues: number }>(client, label, "drones_list_api_keys", {});
  expect(keys.api_keys.length).toBe(API_KEYS.length);
  expect(keys.maskedValues).toBeGreaterThanOrEqual(DRONE_API_KEY_VALUES.length);
  expect(JSON.stringify(keys)).toMatch(/dfk_live_…/);
  await col.ok(client, label, "drones_fleet_summary", { lowBatteryThreshold: 30 });
  await col.ok(client, label, "drones_find_nearest", { latitude: 40.4168, longitude: -3.7038, limit: 3 });

  // --- resources: list, templates, read every listed one, complete every template ---
  const listed = await client.listResources();
  col.record(`${label} resources/list`, listed);
  const templates = await client.listResourceTemplates();
  col.record(`${label} resources/templates/list`, templates);
  expect(templates.resourceTemplates.map((t) => t.uriTemplate).sort()).toEqual(
    ["build://projects/{projectId}", "drones://alerts/{id}", "drones://drones/{id}", "drones://missions/{id}", "sizing://catalog/{id}"].sort(),
  );
  const uris = new Set(["build://account", "build://credit-costs", ...listed.resources.map((r) => r.uri)]);
  uris.add(`build://projects/${launchId}`);
  uris.add(`drones://missions/${missions.missions[0]._id}`);
  uris.add(`drones://alerts/${alerts.alerts[0]._id}`);
  for (const uri of uris) {
    const read = await client.readResource({ uri });
    col.record(`${label} read ${uri}`, read);
    expect(read.contents[0]?.mimeType, uri).toBe("application/json");
  }
  for (const t of templates.resourceTemplates) {
    const variable = /\{(\w+)\}/.exec(t.uriTemplate)![1];
    for (const value of ["", "a", "6", "c"]) {
      const completion = await client.complete({ ref: { type: "ref/resource", uri: t.uriTemplate }, argument: { name: variable, value } });
      col.record(`${label} complete ${t.uriTemplate} ${value}`, completion);
    }
  }

  // --- prompts ---
  const prompts = await client.listPrompts();
  col.record(`${label} prompts/list`, prompts);
  expect(prompts.prompts.map((p) => p.name).sort()).toEqual(["fitting_room", "fleet_status_report", "launch_and_track"]);
  const promptArgs: Record<string, Array<Record<string, string>>> = {
    launch_and_track: [{ idea: "a canary bakery site" }, { idea: "a canary bakery site", projectId: `${prefix}-bakery` }],
    fitting_room: [{}, { item: "Classic Tee", category: "tops" }, { category: "dresses" }],
    fleet_status_report: [{}, { lowBatteryThreshold: "25", near: "40.4168, -3.7038" }],
  };
  for (const [name, variants] of Object.entries(promptArgs)) {
    for (const args of variants) {
      const prompt = await client.getPrompt({ name, arguments: args });
      col.record(`${label} prompt ${name}`, prompt);
      expect(prompt.messages.length).toBeGreaterThan(0);
    }
  }
}

function expectEveryToolCalled(tools: Tool[], col: Collector): void {
  const names = tools.map((t) => t.name);
  expect(names.length).toBeGreaterThanOrEqual(36);
  const notCalled = names.filter((n) => !col.calls.get(n));
  expect(notCalled, `tools never called: ${notCalled.join(", ")}`).toEqual([]);
  const neverSucceeded = names.filter((n) => !col.successes.get(n));
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
    env = sandboxEnv(sandbox, { LOG_LEVEL: "debug", MCP_HTTP_TOKEN: HTTP_TOKEN, BUILD_POLL_INTERVAL_MS: "20", BUILD_CONFIRM_SPEND: "always" });
    // The stdio client can be asked (and says yes), so the spend confirmations are exercised too.
    conn = await retryStart(() => connectStdio(env, [], { capabilities: { elicitation: {} } }));
    conn.client.setRequestHandler(ElicitRequestSchema, async (request) => {
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
    expect(env.BUILD_API_KEY).toBe(KEYS.build);
    expect(env.SIZING_API_KEY).toBe(KEYS.sizing);
    expect(env.DRONES_API_KEY).toBe(KEYS.drones);
    expect(DRONE_API_KEY_VALUES.length).toBeGreaterThanOrEqual(API_KEYS.length + 1); // keys + a webhook signing secret
  });

  it("drives every tool, resource, completion and prompt over stdio", { timeout: 60_000 }, async () => {
    const { tools } = await conn.client.listTools();
    col.record("stdio tools/list", tools);
    await driveEverything(conn.client, "stdio", "cnry-s", col);
    expectEveryToolCalled(tools, col);
    expect(elicitations.length).toBeGreaterThan(0); // spends were confirmed through elicitation
    // The secrets did reach the upstream, so the test is not vacuous.
    expect(sandbox.build.storedSecretValue("cnry-s-launch", "CANARY_SECRET")).toBe(SECRET_VALUE);
    expect(col.seen.some((s) => s.where.includes("progress"))).toBe(true);
    expect(col.seen.some((s) => s.where.includes(" log"))).toBe(true);
  });

  it("drives every tool, resource, completion and prompt over HTTP with the bearer token", { timeout: 60_000 }, async () => {
    const client = await connectHttp(http.url, { Authorization: `Bearer ${HTTP_TOKEN}` });
    const httpCol = new Collector();
    try {
      await httpCol.attach(client, "http");
      const { tools } = await client.listTools();
      await driveEverything(client, "http", "cnry-h", httpCol);
      expectEveryToolCalled(tools, httpCol);
      const health = await fetch(new URL("/healthz", http.url));
      col.record("http healthz", await health.text());
    } finally {
      col.seen.push(...httpCol.seen);
      await client.close();
    }
  });

  it("answers a wrong bearer token with a 401 that echoes no token", async () => {
    const res = await fetch(http.url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", authorization: `Bearer ${WRONG_HTTP_TOKEN}` },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "x", version: "1" } } }),
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
    const wrong = await retryStart(() => connectStdio(sandboxEnv(sandbox, { LOG_LEVEL: "debug", BUILD_API_KEY: WRONG_KEYS.build, SIZING_API_KEY: WRONG_KEYS.sizing, DRONES_API_KEY: WRONG_KEYS.drones })));
    try {
      const wcol = new Collector();
      await wcol.attach(wrong.client, "wrong-key");
      for (const [name, args, variable] of [
        ["build_get_account", {}, "BUILD_API_KEY"],
        ["build_launch_project", { projectId: "cnry-wrong-key", prompt: "x", secrets: [{ secretName: "S", secretValue: SECRET_VALUE }] }, "BUILD_API_KEY"],
        ["sizing_get_catalog", {}, "SIZING_API_KEY"],
        ["drones_list_drones", {}, "DRONES_API_KEY"],
        ["drones_list_api_keys", {}, "DRONES_API_KEY"],
      ] as const) {
        const r = await wcol.call(wrong.client, "wrong-key", name, args);
        expect(r.isError, name).toBe(true);
        expect(text(r), name).toMatch(/HTTP 401/);
        expect(text(r), name).toContain(variable);
      }
      for (const uri of ["build://account", "drones://drones/665f1c2a7d3e4b1a00000001"]) {
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
    const all = [...stderrs, { where: "stdio server stderr", text: conn.stderr() }, { where: "http server stderr", text: http.stderr() }];
    // The logs were really at debug level and the collection is not empty.
    expect(conn.stderr()).toMatch(/"level":"debug"/);
    expect(col.seen.length).toBeGreaterThan(200);
    const leaks = col.leaks(all);
    expect(leaks, leaks.join("\n")).toEqual([]);
    expect(conn.strayStdout()).toEqual([]);
  });
});
