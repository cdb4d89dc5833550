// 2025-11-25 tasks: `tools/call` with `params.task`, tasks/get, tasks/result, tasks/list,
// tasks/cancel and `execution.taskSupport` in tools/list. The SDK v2 client no longer speaks them,
// so these tests drive the server with the 2025 client of the SDK 1.x (still a dev dependency).
// The 2026-07-28 tasks extension is tested in tasks.2026.e2e.test.ts.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
  type CallToolResult,
} from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Sandbox, SandboxOptions } from "../../src/sandbox/index.js";
import {
  CLI,
  retryStart,
  sandboxEnv,
  settles,
  sleep,
  spawnHttpServer,
  testSandbox,
  text,
  until,
  type HttpServerProcess,
} from "../harness.js";

const API = "/api/v1/vcaas";
const AGENT_STATUS = `GET ${API}/projects/:projectId/agent/status`;
/** The tools that can block until their work ends (wait: true, or build_wait itself). */
const LONG_RUNNING = [
  "build_deploy",
  "build_import_project",
  "build_launch_project",
  "build_pull_github",
  "build_rebuild",
  "build_recover_version",
  "build_restart_server",
  "build_start_agent",
  "build_wait",
];

type ClientOptions = NonNullable<ConstructorParameters<typeof Client>[1]>;

interface V1Connection {
  client: Client;
  stderr(): string;
  close(): Promise<void>;
}

/**
 * Spawns `node dist/cli.js` with every toolset and connects the SDK 1.x client (2025-11-25,
 * initialize handshake) over stdio.
 */
async function connectV1Stdio(env: Record<string, string>, options: ClientOptions = {}): Promise<V1Connection> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, "--toolsets", "all"],
    env,
    stderr: "pipe",
  });
  let err = "";
  transport.stderr?.on("data", (chunk: Buffer) => (err += chunk.toString()));
  const client = new Client({ name: "switchboard-tests-2025", version: "1.0.0" }, options);
  await client.connect(transport);
  return { client, stderr: () => err, close: () => client.close() };
}

/** The SDK 1.x client over Streamable HTTP: a 2025 session. */
async function connectV1Http(
  url: string,
  headers: Record<string, string> = {},
  options: ClientOptions = {},
): Promise<Client> {
  const client = new Client({ name: "switchboard-tests-2025", version: "1.0.0" }, options);
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  return client;
}

function createTask(client: Client, name: string, args: Record<string, unknown>, ttl = 60_000) {
  return client.request(
    { method: "tools/call", params: { name, arguments: args, task: { ttl } } },
    CreateTaskResultSchema,
  );
}

async function ok<T = Record<string, unknown>>(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
): Promise<T> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  if (result.isError) throw new Error(`${name} failed: ${text(result)}`);
  return result.structuredContent as T;
}

describe("2025-11-25 tasks", () => {
  let sandbox: Sandbox;
  let conn: V1Connection;
  let http: HttpServerProcess;
  const hits = (key: string) => sandbox.build.router.count(key);

  beforeAll(async () => {
    sandbox = await testSandbox();
    conn = await retryStart(() => connectV1Stdio(sandboxEnv(sandbox, { BUILD_POLL_INTERVAL_MS: "50" })));
    http = await retryStart(() => spawnHttpServer(sandboxEnv(sandbox, { BUILD_POLL_INTERVAL_MS: "50" })));
  });
  afterAll(async () => {
    await conn?.close();
    await http?.stop();
    await sandbox?.close();
  });

  it("advertises tasks for tools/call in the initialize result", () => {
    expect(conn.client.getServerCapabilities()?.tasks).toMatchObject({
      list: {},
      cancel: {},
      requests: { tools: { call: {} } },
    });
  });

  it("declares optional task support on every long-running tool", async () => {
    const { tools } = await conn.client.listTools();
    const withTasks = tools.filter((t) => t.execution?.taskSupport === "optional").map((t) => t.name);
    expect(withTasks.sort()).toEqual(LONG_RUNNING);
  });

  it("refuses a task request for a tool without task support with -32601, and makes no task", async () => {
    const before = (await conn.client.experimental.tasks.listTasks()).tasks.length;
    const accounts = hits(`GET ${API}/account`);
    await expect(createTask(conn.client, "build_get_account", {})).rejects.toMatchObject({
      code: -32601,
      message: expect.stringMatching(/build_get_account does not support task-augmented execution/),
    });
    expect((await conn.client.experimental.tasks.listTasks()).tasks.length).toBe(before);
    expect(hits(`GET ${API}/account`)).toBe(accounts);
    // The same tool called plainly is served as usual.
    expect(await ok(conn.client, "build_get_account")).toHaveProperty("credits");
  });

  it("creates a task at once, reports live status through tasks/get, and returns the result", async () => {
    await ok(conn.client, "build_start_agent", { projectId: "acme-storefront", prompt: "Add a blog [minutes=40]" });
    const started = Date.now();
    const { task } = await createTask(conn.client, "build_wait", { projectId: "acme-storefront", until: "agent" });
    expect(Date.now() - started).toBeLessThan(500);
    expect(task.status).toBe("working");
    expect(task.pollInterval).toBe(50);
    const live = await until(
      () => conn.client.experimental.tasks.getTask(task.taskId),
      (t) => /Agent running · .* credits/.test(t.statusMessage ?? ""),
    );
    expect(live.status).toBe("working");
    const done = await until(
      () => conn.client.experimental.tasks.getTask(task.taskId),
      (t) => t.status !== "working",
    );
    expect(done.status).toBe("completed");
    const result = await conn.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({
      outcome: "done",
      until: "agent",
      project: { agentProcessStatus: "done" },
    });
    expect(text(result)).toMatch(/The agent run has ended/);
  });

  it("a quick call made as a task comes back completed", async () => {
    const { task } = await createTask(
      conn.client,
      "build_start_agent",
      { projectId: "spring-campaign", prompt: "Tweak colours [minutes=5]" },
      5000,
    );
    const final = await until(
      () => conn.client.experimental.tasks.getTask(task.taskId),
      (t) => t.status !== "working",
    );
    expect(final.status).toBe("completed");
    const result = await conn.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.structuredContent).toMatchObject({ projectId: "spring-campaign", status: "init" });
    await ok(conn.client, "build_wait", { projectId: "spring-campaign", until: "agent" });
  });

  it("tasks/cancel stops the upstream polling", async () => {
    await ok(conn.client, "build_start_agent", { projectId: "booking-app", prompt: "Endless [minutes=100000]" });
    const { task } = await createTask(conn.client, "build_wait", { projectId: "booking-app", until: "agent" });
    await until(
      () => conn.client.experimental.tasks.getTask(task.taskId),
      (t) => /Agent running/.test(t.statusMessage ?? ""),
    );
    const cancelled = await conn.client.experimental.tasks.cancelTask(task.taskId);
    expect(cancelled.status).toBe("cancelled");
    await settles(() => hits(AGENT_STATUS), 400); // 8 poll intervals without a request
    expect((await conn.client.experimental.tasks.getTask(task.taskId)).status).toBe("cancelled");
  });

  it("works as a task over HTTP: launch with wait, fetched through tasks/result", async () => {
    const client = await connectV1Http(http.url);
    const { task } = await createTask(client, "build_launch_project", {
      projectId: "task-over-http",
      prompt: "Shop [minutes=20]",
      wait: true,
    });
    // blocks until terminal
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.structuredContent).toMatchObject({ projectId: "task-over-http", wait: { outcome: "done" } });
    await client.close();
  });

  it("a plain (non-task) call leaves no task behind once answered", async () => {
    const listed = async () => {
      const ids: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await conn.client.experimental.tasks.listTasks(cursor);
        ids.push(...page.tasks.map((t) => t.taskId));
        cursor = page.nextCursor;
      } while (cursor);
      return ids;
    };
    const before = await listed();
    await ok(conn.client, "build_wait", { projectId: "acme-storefront", until: "deployment" });
    await sleep(50 * 2 + 1_300);
    // Ids, not a count: an earlier test's task may reach its TTL meanwhile (on a loaded machine it did).
    expect((await listed()).filter((id) => !before.includes(id))).toEqual([]);
  });

  it("a task expires after its TTL and its polling stops", async () => {
    await ok(conn.client, "build_start_agent", { projectId: "internal-dashboard", prompt: "Forever [minutes=100000]" });
    const { task } = await createTask(
      conn.client,
      "build_wait",
      { projectId: "internal-dashboard", until: "agent" },
      400,
    );
    // Gone once its TTL passed (the sweep runs later under load), and its polling with it.
    const gone = await until(
      () => conn.client.experimental.tasks.getTask(task.taskId).then(() => "", String),
      (err) => err !== "",
    );
    expect(gone).toMatch(/not found/i);
    await settles(() => hits(AGENT_STATUS), 300); // 6 poll intervals without a request
    await ok(conn.client, "build_stop_agent", { projectId: "internal-dashboard" });
  });
});

describe("credit guard on 2025 tasks", () => {
  let sandbox: Sandbox;
  beforeAll(async () => {
    sandbox = await testSandbox();
  });
  afterAll(async () => sandbox?.close());

  it("asks for a task-augmented spend before the task starts", async () => {
    const asked: string[] = [];
    const conn = await connectV1Stdio(sandboxEnv(sandbox), { capabilities: { elicitation: {} } });
    conn.client.setRequestHandler(ElicitRequestSchema, async (req) => {
      asked.push(req.params.message);
      return { action: "decline" };
    });
    const deployments = sandbox.build.router.count(`POST ${API}/projects/:projectId/deployments/deploy`);
    const { task } = await createTask(conn.client, "build_deploy", { projectId: "acme-storefront", wait: true });
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatch(/Deploy acme-storefront: costs 1 credit \(CREATE_DEPLOYMENT 1\)/);
    const result = await conn.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.isError).toBe(true);
    expect(text(result)).toMatch(/did not approve/);
    expect(sandbox.build.router.count(`POST ${API}/projects/:projectId/deployments/deploy`)).toBe(deployments);
    await conn.close();
  });
});

describe("secrets never leak through 2025 tasks", () => {
  const KEYS = {
    build: "tlm_sk_CANARY_BUILD_TASKS_5e1f",
    sizing: "CANARY_SIZING_TASKS_77a0",
    drones: "dfk_live_CANARY_DRONES_TASKS_beef",
  };
  const HTTP_TOKEN = "CANARY_HTTP_TOKEN_TASKS_4242";
  const SECRET_VALUE = "CANARY_TASK_SECRET_VALUE_9a8b";
  const DESIGN_TOKEN = "dsgn_CANARY_TASK_DESIGN_TOKEN_7c6d";
  const CANARIES = [...Object.values(KEYS), HTTP_TOKEN, SECRET_VALUE, DESIGN_TOKEN];

  let sandbox: Sandbox;
  let env: Record<string, string>;
  let conn: V1Connection;
  let http: HttpServerProcess;
  const seen: Array<{ where: string; text: string }> = [];
  const record = (where: string, value: unknown): void =>
    void seen.push({ where, text: typeof value === "string" ? value : JSON.stringify(value) });

  beforeAll(async () => {
    sandbox = await testSandbox({ keys: KEYS as unknown as SandboxOptions["keys"], timeScale: 20_000 });
    env = sandboxEnv(sandbox, {
      LOG_LEVEL: "debug",
      MCP_HTTP_TOKEN: HTTP_TOKEN,
      BUILD_POLL_INTERVAL_MS: "20",
      BUILD_CONFIRM_SPEND: "never",
    });
    conn = await retryStart(() => connectV1Stdio(env));
    http = await retryStart(() => spawnHttpServer(env));
  });
  afterAll(async () => {
    await conn?.close();
    await http?.stop();
    await sandbox?.close();
  });

  /** A task-augmented build_wait and a launch carrying the secrets; everything the client sees is recorded. */
  async function driveTasks(client: Client, label: string, prefix: string): Promise<void> {
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => record(`${label} log`, n.params));
    client.fallbackNotificationHandler = async (n) => record(`${label} notification ${n.method}`, n);
    await client.setLoggingLevel("debug");
    const projectId = `${prefix}-task-launch`;

    const launch = await createTask(client, "build_launch_project", {
      projectId,
      prompt: "Task canary [minutes=5] [secrets]",
      secrets: [{ secretName: "CANARY_SECRET", secretValue: SECRET_VALUE }],
      design: { token: DESIGN_TOKEN },
      wait: true,
    });
    record(`${label} launch task created`, launch);
    const launched = await until(
      async () => {
        const t = await client.experimental.tasks.getTask(launch.task.taskId);
        record(`${label} launch task status`, t);
        return t;
      },
      (t) => t.status !== "working" && t.status !== "input_required",
      20_000,
    );
    expect(launched.status).toBe("completed");
    const launchResult = await client.experimental.tasks.getTaskResult(launch.task.taskId, CallToolResultSchema);
    record(`${label} launch task result`, launchResult);
    expect(launchResult.isError).toBeFalsy();
    expect(launchResult.structuredContent).toMatchObject({ projectId, wait: { outcome: "done" } });

    await ok(client, "build_start_agent", { projectId, prompt: "Small fix [minutes=5]" });
    const wait = await createTask(client, "build_wait", { projectId, until: "agent" });
    record(`${label} build_wait task created`, wait);
    const waited = await until(
      async () => {
        const t = await client.experimental.tasks.getTask(wait.task.taskId);
        record(`${label} build_wait task status`, t);
        return t;
      },
      (t) => t.status !== "working" && t.status !== "input_required",
      20_000,
    );
    expect(waited.status).toBe("completed");
    const waitResult = await client.experimental.tasks.getTaskResult(wait.task.taskId, CallToolResultSchema);
    record(`${label} build_wait task result`, waitResult);
    expect(waitResult.isError).toBeFalsy();
    record(`${label} tasks/list`, await client.experimental.tasks.listTasks());
    // The secret did reach the upstream, so the test is not vacuous.
    expect(sandbox.build.storedSecretValue(projectId, "CANARY_SECRET")).toBe(SECRET_VALUE);
  }

  it("over stdio", { timeout: 60_000 }, async () => {
    await driveTasks(conn.client, "stdio", "cnry-ts");
    expect(seen.some((s) => s.where.startsWith("stdio") && s.where.endsWith("task status"))).toBe(true);
    expect(seen.some((s) => s.where === "stdio log")).toBe(true);
  });

  it("over HTTP with the bearer token", { timeout: 60_000 }, async () => {
    const client = await connectV1Http(http.url, { Authorization: `Bearer ${HTTP_TOKEN}` });
    try {
      await driveTasks(client, "http", "cnry-th");
    } finally {
      await client.close();
    }
  });

  it("leaks no canary anywhere the clients or the logs can see", async () => {
    await sleep(100);
    const all = [
      ...seen,
      { where: "stdio server stderr", text: conn.stderr() },
      { where: "http server stderr", text: http.stderr() },
    ];
    expect(conn.stderr()).toMatch(/"level":"debug"/);
    expect(seen.length).toBeGreaterThan(10);
    const leaks = all.flatMap((item) =>
      CANARIES.filter((c) => item.text.includes(c)).map((c) => `${item.where} contains ${c}`),
    );
    expect(leaks, leaks.join("\n")).toEqual([]);
  });
});
