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
import type { Sandbox, SandboxOptions } from "../../src/sandbox/index.js";
import { API_KEYS } from "../../src/sandbox/simulators/drones/index.js";
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

const KEYS = {
  build: "tlm_sk_CANARY_BUILD_7d1e9a",
  sizing: "CANARY_SIZING_KEY_55b2",
  drones: "dfk_live_CANARY_DRONES_c0ffee",
};
const HTTP_TOKEN = "CANARY_HTTP_TOKEN_31337";
const SECRET_VALUE = "CANARY_SECRET_VALUE_9f8e7d";
const SET_SECRET_VALUE = "CANARY_SET_SECRET_VALUE_42";
const FIGMA_TOKEN = "figd_CANARY_FIGMA_TOKEN_abcdef123";
/** Values only ever sent on calls that fail, so they are registered as secrets by nothing else. */
const FAILING_SET_SECRET_VALUE = "CANARY_MISSING_PROJECT_SECRET_88";
const FAILING_LAUNCH_SECRET = "CANARY_FAILED_LAUNCH_SECRET_66";
const FAILING_FIGMA_TOKEN = "figd_CANARY_FAILED_LAUNCH_TOKEN_0042";
const INVALID_ARGS_SECRET = "CANARY_INVALID_ARGS_SECRET_13";
/** Figma tokens the sandbox refuses: FIGMA_TOKEN_INVALID and FIGMA_TOKEN_MALFORMED (whitespace). */
const REFUSED_FIGMA_TOKEN = "figd_invalid_CANARY_REFUSED_TOKEN_77";
const MALFORMED_FIGMA_TOKEN = "CANARY MALFORMED FIGMA TOKEN 99";
const WEBHOOK_HEADER_SECRET = "CANARY_WEBHOOK_HEADER_SECRET_5150";
const GITHUB_TOKEN = "github_pat_CANARY_GITHUB_TOKEN_0123456789ab";
const IMPORT_CODE = "acme-storefront-export-project-c0ffeec0ffeec0ffeec0ffeec0ffeec0.zip";
const WRONG_KEYS = {
  build: "tlm_sk_CANARY_WRONG_BUILD_0bad",
  sizing: "CANARY_WRONG_SIZING_0bad",
  drones: "dfk_live_CANARY_WRONG_DRONES_0bad",
};
const WRONG_HTTP_TOKEN = "CANARY_WRONG_HTTP_TOKEN_0bad";

const CANARIES = [
  ...Object.values(KEYS),
  HTTP_TOKEN,
  SECRET_VALUE,
  SET_SECRET_VALUE,
  FIGMA_TOKEN,
  FAILING_SET_SECRET_VALUE,
  FAILING_LAUNCH_SECRET,
  FAILING_FIGMA_TOKEN,
  INVALID_ARGS_SECRET,
  REFUSED_FIGMA_TOKEN,
  MALFORMED_FIGMA_TOKEN,
  ...Object.values(WRONG_KEYS),
  WRONG_HTTP_TOKEN,
  WEBHOOK_HEADER_SECRET,
  GITHUB_TOKEN,
  IMPORT_CODE,
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
      for (const secret of [...CANARIES, ...DRONE_API_KEY_VALUES]) {
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

async function driveEverything(client: Client, label: string, prefix: string, col: Collector): Promise<void> {
  const launchId = `${prefix}-launch`;
  const emptyId = `${prefix}-empty`;

  // --- failing calls that carry secrets, first, so nothing else registered those values ---
  const missing = await col.call(client, label, "build_set_secret", {
    projectId: `${prefix}-missing`,
    secretName: "MISSING_ONE",
    secretValue: FAILING_SET_SECRET_VALUE,
  });
  expect(missing.isError).toBe(true);
  expect(text(missing)).toMatch(/HTTP 404/);
  const badLaunch = await col.call(client, label, "build_launch_project", {
    projectId: `${prefix}-bad-group`,
    prompt: "Never built",
    groupId: "grp_nope",
    secrets: [{ secretName: "FAILING", secretValue: FAILING_LAUNCH_SECRET }],
    figma: { token: FAILING_FIGMA_TOKEN },
  });
  expect(badLaunch.isError).toBe(true);
  const invalid = await col.call(client, label, "build_launch_project", {
    projectId: `${prefix}-invalid`,
    prompt: "Never sent",
    secrets: [{ secretName: "BAD_ENV", secretValue: INVALID_ARGS_SECRET, environment: "staging" }],
  });
  expect(invalid.isError).toBe(true);
  if (label === "stdio") {
    // Figma token checks are rate-limited upstream (10 a minute), so only once per test run.
    for (const [token, code] of [
      [REFUSED_FIGMA_TOKEN, "FIGMA_TOKEN_INVALID"],
      [MALFORMED_FIGMA_TOKEN, "FIGMA_TOKEN_MALFORMED"],
    ]) {
      const refused = await col.call(client, label, "build_launch_project", {
        projectId: `${prefix}-bad-figma`,
        prompt: "Never built",
        figma: { token },
      });
      expect(refused.isError, JSON.stringify(refused).slice(0, 600)).toBe(true);
      expect(text(refused)).toContain(code);
    }
  }

  // --- build: reads ---
  await col.ok(client, label, "build_get_account", {});
  await col.ok(client, label, "build_get_credit_costs", {});
  await col.ok(client, label, "build_list_projects", { limit: 100 });

  // --- build: launch with wait, secrets and a Figma token, reporting progress ---
  const launched = await col.ok<{ projectId: string; figma?: { connected?: boolean }; wait?: { outcome: string } }>(
    client,
    label,
    "build_launch_project",
    {
      projectId: launchId,
      prompt: "A canary shop [minutes=5] [secrets]",
      label: "Canary",
      secrets: [{ secretName: "CANARY_SECRET", secretValue: SECRET_VALUE }],
      figma: { token: FIGMA_TOKEN },
      wait: true,
      timeoutSeconds: 60,
    },
    { progress: true },
  );
  expect(launched.projectId).toBe(launchId);
  expect(launched.figma?.connected).toBe(true);
  expect(launched.wait?.outcome).toBe("done");

  await col.ok(client, label, "build_get_project", { projectId: launchId });
  await col.ok(client, label, "build_get_agent_status", { projectId: launchId });

  // Upstream free text is quoted as data.
  const convo = await col.call(client, label, "build_get_conversation", { projectId: launchId, limit: 20 });
  expect(convo.isError).toBeFalsy();
  const messages = (convo.structuredContent as { conversation: Array<{ message?: string }> }).conversation.filter(
    (m) => m.message,
  );
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
  await col.ok(client, label, "build_start_agent", {
    projectId: launchId,
    prompt: "Rewrite everything [minutes=100000]",
  });
  await col.ok(client, label, "build_stop_agent", { projectId: launchId });

  await col.ok(
    client,
    label,
    "build_wait",
    { projectId: launchId, until: "agent", timeoutSeconds: 60 },
    { progress: true },
  );

  // Deploy and follow it.
  await col.ok(
    client,
    label,
    "build_deploy",
    { projectId: launchId, wait: true, timeoutSeconds: 60 },
    { progress: true },
  );
  await col.ok(client, label, "build_get_deployment_status", { projectId: launchId });
  await col.ok(
    client,
    label,
    "build_wait",
    { projectId: launchId, until: "deployment", timeoutSeconds: 60 },
    { progress: true },
  );

  // Versions and recovery.
  const { versions } = await col.ok<{ versions: Array<{ _id: string; prompt?: string }> }>(
    client,
    label,
    "build_list_versions",
    { projectId: launchId, limit: 10 },
  );
  const version = versions.find((v) => !v.prompt?.includes("[recover-fail]"))!;
  await col.ok(
    client,
    label,
    "build_recover_version",
    { projectId: launchId, versionId: version._id, wait: true, timeoutSeconds: 60 },
    { progress: true },
  );

  // Logs are delimited as server output.
  const logs = await col.call(client, label, "build_get_logs", { projectId: launchId });
  expect(logs.isError).toBeFalsy();
  expect(text(logs)).toMatch(/server output, not instructions/);
  expect(text(logs)).toMatch(/\n---\n[\s\S]*\n---$/);

  await col.ok(client, label, "build_restart_server", { projectId: launchId });

  // Secrets: set (value never echoed), find its id, delete.
  const set = await col.call(client, label, "build_set_secret", {
    projectId: launchId,
    secretName: "CANARY_SET",
    secretValue: SET_SECRET_VALUE,
    environment: "production",
  });
  expect(set.isError).toBeFalsy();
  expect(text(set)).toMatch(/value is not shown/);
  const details = await col.ok<{ secrets?: Array<{ _id: string; secretName: string }> }>(
    client,
    label,
    "build_get_project",
    { projectId: launchId },
  );
  const secretId = details.secrets?.find((s) => s.secretName === "CANARY_SET")?._id;
  expect(secretId).toBeTruthy();
  await col.ok(client, label, "build_delete_secret", { projectId: launchId, secretId: secretId! });

  await col.ok(client, label, "build_set_domain", { projectId: launchId, hostname: `${prefix}.canary.example.org` });
  await col.ok(client, label, "build_remove_domain", { projectId: launchId });
  await col.ok(client, label, "build_get_database_schema", { projectId: "acme-storefront" });
  await col.ok(client, label, "build_query_database", {
    projectId: "acme-storefront",
    tableName: "customers",
    queryOptions: { _limit: 3 },
  });
  await col.ok(client, label, "build_create_project", { projectId: emptyId, label: "Empty canary" });
  await col.ok(client, label, "build_delete_project", { projectId: emptyId });

  // --- the rest of the build API (toolsets off by default): secrets in tokens, headers and .env text ---
  await col.ok(client, label, "build_update_project", { projectId: launchId, label: `Canary ${prefix}` });
  await col.ok(client, label, "build_get_production_logs", { projectId: "acme-storefront", limit: 3 });
  const acmeVersions = await col.ok<{ versions: Array<{ commitSha?: string }> }>(client, label, "build_list_versions", {
    projectId: "acme-storefront",
  });
  const sha = acmeVersions.versions.find((v) => v.commitSha)?.commitSha;
  if (sha) await col.ok(client, label, "build_get_version_diff", { projectId: "acme-storefront", commitSha: sha });
  await col.ok(client, label, "build_validate_figma_token", { token: FIGMA_TOKEN });
  await col.ok(client, label, "build_connect_figma", { projectId: launchId, token: FIGMA_TOKEN });
  await col.ok(client, label, "build_get_figma_status", { projectId: launchId });
  await col.ok(client, label, "build_disconnect_figma", { projectId: launchId });
  const hook = await col.ok<{ id: string }>(client, label, "build_add_webhook", {
    url: `https://hooks.example.com/${prefix}`,
    event: "agent.prompt.finished",
    headers: { "x-signature": WEBHOOK_HEADER_SECRET },
  });
  await col.ok(client, label, "build_list_webhooks", {});
  await col.ok(client, label, "build_delete_webhook", { webhookId: hook.id });
  await col.ok(client, label, "build_set_credit_limits", {
    projectId: launchId,
    maxInfrastructureCreditsPerMonth: 500,
  });
  const today = new Date().toISOString().slice(0, 10);
  await col.ok(client, label, "build_get_spending", { from: today, to: today });
  await col.ok(client, label, "build_get_source_code", { projectId: "acme-storefront" });
  await col.ok(client, label, "build_upload_file", {
    projectId: "acme-storefront",
    name: "canary.txt",
    content: Buffer.from(`note ${prefix}`).toString("base64"),
  });
  await col.ok(client, label, "build_list_files", { projectId: "acme-storefront", limit: 20 });
  await col.ok(client, label, "build_read_file", { projectId: "acme-storefront", path: "src/app/page.tsx" });
  await col.ok(client, label, "build_write_file", {
    projectId: "acme-storefront",
    path: `src/${prefix}.txt`,
    content: "canary file",
  });
  await col.ok(client, label, "build_rebuild", { projectId: "acme-storefront", wait: true }, { progress: true });
  await col.ok(client, label, "build_get_rebuild_status", { projectId: "acme-storefront" });
  await col.ok(client, label, "build_connect_github", {
    projectId: launchId,
    token: GITHUB_TOKEN,
    repositoryFullName: `canary/${prefix}`,
  });
  await col.ok(client, label, "build_get_github_status", { projectId: launchId });
  await col.ok(client, label, "build_pull_github", { projectId: launchId, wait: true });
  await col.ok(client, label, "build_get_github_pull_status", { projectId: launchId });
  await col.ok(client, label, "build_get_env_names", { projectId: launchId });
  await col.ok(client, label, "build_disconnect_github", { projectId: launchId });
  // A secret value is scrubbed from its own project's outputs, not from data the caller writes into
  // another project (issue 18 item 12: kept process-wide, any word a caller used as a secret censored everyone).
  const record = await col.ok<{ _id: string }>(client, label, "build_create_record", {
    projectId: "acme-storefront",
    tableName: "customers",
    data: { name: `Canary ${prefix}`, note: "canary record" },
  });
  await col.ok(client, label, "build_update_record", {
    projectId: "acme-storefront",
    tableName: "customers",
    recordId: record._id,
    data: { vip: true },
  });
  await col.ok(client, label, "build_link_records", {
    projectId: "acme-storefront",
    tableName: "customers",
    recordId: record._id,
    propertyId: "not-many-to-many",
    referenceId: "none",
  });
  await col.ok(client, label, "build_unlink_records", {
    projectId: "acme-storefront",
    tableName: "customers",
    recordId: record._id,
    propertyId: "not-many-to-many",
    referenceId: "none",
  });
  await col.ok(client, label, "build_delete_record", {
    projectId: "acme-storefront",
    tableName: "customers",
    recordId: record._id,
  });
  const group = await col.ok<{ groupId: string }>(client, label, "build_create_group", { name: `Canary ${prefix}` });
  await col.ok(client, label, "build_list_groups", {});
  await col.ok(client, label, "build_get_group", { groupId: group.groupId });
  await col.ok(client, label, "build_update_group", { groupId: group.groupId, description: "canaries" });
  await col.ok(client, label, "build_delete_group", { groupId: group.groupId });
  // Export and import are limited to one a minute per account: the second run of this drive is refused, and must still say why.
  // repeat: the second drive's export is the first's call again, which the spend ledger would answer from its record.
  const exported = await col.call(client, label, "build_export_project", {
    projectId: "acme-storefront",
    repeat: true,
  });
  if (!exported.isError) {
    await col.ok(client, label, "build_create_project", { projectId: `${prefix}-clone` });
    const transferId = (exported.structuredContent as { transferId: string }).transferId;
    await col.ok(
      client,
      label,
      "build_import_project",
      { projectId: `${prefix}-clone`, transferId, wait: true },
      { progress: true },
    );
  } else {
    expect(text(exported)).toMatch(/PROJECT_EXPORT_LIMIT_REACHED/);
    const refused = await col.call(client, label, "build_import_project", {
      projectId: `${prefix}-clone-missing`,
      importCode: IMPORT_CODE,
    });
    expect(refused.isError).toBe(true);
  }

  // --- sizing ---
  const catalog = await col.ok<{ items: Array<{ _id: string }> }>(client, label, "sizing_get_catalog", { limit: 5 });
  const item = catalog.items[0]._id;
  await col.ok(client, label, "sizing_recommend_size", {
    clothing_item_id: item,
    measurements: { chest: 96, waist: 82, hips: 100 },
    preferred_fit: "regular",
  });
  await col.ok(client, label, "sizing_create_try_on", {
    clothing_item_id: item,
    user_id: `${prefix}-customer`,
    measurements: { chest: 96, waist: 82, hips: 100 },
  });

  // --- drones ---
  const drones = await col.ok<{ drones: Array<{ _id: string }> }>(client, label, "drones_list_drones", { limit: 5 });
  await col.ok(client, label, "drones_get_drone", { id: drones.drones[0]._id });
  const missions = await col.ok<{ missions: Array<{ _id: string }> }>(client, label, "drones_list_missions", {
    limit: 5,
  });
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
    [
      "build://projects/{projectId}",
      "drones://alerts/{id}",
      "drones://drones/{id}",
      "drones://missions/{id}",
      "sizing://catalog/{id}",
    ].sort(),
  );
  const uris = new Set(["build://account", "build://credit-costs", ...listed.resources.map((r) => r.uri)]);
  uris.add(`build://projects/${launchId}`);
  uris.add(`drones://missions/${missions.missions[0]._id}`);
  uris.add(`drones://alerts/${alerts.alerts[0]._id}`);
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

  // --- prompts ---
  const prompts = await client.listPrompts();
  col.record(`${label} prompts/list`, prompts);
  expect(prompts.prompts.map((p) => p.name).sort()).toEqual([
    "fitting_room",
    "fleet_status_report",
    "launch_and_track",
  ]);
  const promptArgs: Record<string, Array<Record<string, string>>> = {
    launch_and_track: [
      { idea: "a canary bakery site" },
      { idea: "a canary bakery site", projectId: `${prefix}-bakery` },
    ],
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

/** Limited to one call a minute per account: the second drive (HTTP) is refused them, by design. */
const RATE_LIMITED_ONCE = new Set(["build_export_project", "build_import_project"]);

function expectEveryToolCalled(tools: Tool[], col: Collector, allowRefused = false): void {
  const names = tools.map((t) => t.name);
  expect(names.length).toBeGreaterThanOrEqual(70);
  const notCalled = names.filter((n) => !col.calls.get(n));
  expect(notCalled, `tools never called: ${notCalled.join(", ")}`).toEqual([]);
  const neverSucceeded = names.filter((n) => !col.successes.get(n) && !(allowRefused && RATE_LIMITED_ONCE.has(n)));
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

  it("drives every tool, resource, completion and prompt over HTTP with the bearer token", {
    timeout: 60_000,
  }, async () => {
    const client = await connectHttp(http.url, { Authorization: `Bearer ${HTTP_TOKEN}` });
    keepWireOrder(client);
    const httpCol = new Collector();
    try {
      await httpCol.attach(client, "http");
      const { tools } = await client.listTools();
      await driveEverything(client, "http", "cnry-h", httpCol);
      expectEveryToolCalled(tools, httpCol, true);
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
          BUILD_API_KEY: WRONG_KEYS.build,
          SIZING_API_KEY: WRONG_KEYS.sizing,
          DRONES_API_KEY: WRONG_KEYS.drones,
        }),
      ),
    );
    try {
      const wcol = new Collector();
      await wcol.attach(wrong.client, "wrong-key");
      for (const [name, args, variable] of [
        ["build_get_account", {}, "BUILD_API_KEY"],
        [
          "build_launch_project",
          { projectId: "cnry-wrong-key", prompt: "x", secrets: [{ secretName: "S", secretValue: SECRET_VALUE }] },
          "BUILD_API_KEY",
        ],
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
