import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  ResourceListChangedNotificationSchema,
  ResourceUpdatedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Sandbox } from "../../src/sandbox/index.js";
import { call, connectHttp, connectStdio, ok, sandboxEnv, sleep, spawnHttpServer, testSandbox, text, type HttpServerProcess, type StdioConnection } from "../harness.js";

const API = "/api/v1/vcaas";
const AGENT_STATUS = `GET ${API}/projects/:projectId/agent/status`;
const DETAILS = `GET ${API}/projects/:projectId`;

function createTask(client: Client, name: string, args: Record<string, unknown>, ttl = 60_000) {
  return client.request({ method: "tools/call", params: { name, arguments: args, task: { ttl } } }, CreateTaskResultSchema);
}

async function until<T>(probe: () => Promise<T>, accept: (v: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (accept(v)) return v;
    if (Date.now() > deadline) throw new Error(`condition not met: ${JSON.stringify(v)}`);
    await sleep(25);
  }
}

describe("MCP tasks", () => {
  let sandbox: Sandbox;
  let conn: StdioConnection;
  let http: HttpServerProcess;
  const hits = (key: string) => sandbox.build.router.count(key);

  beforeAll(async () => {
    sandbox = await testSandbox();
    conn = await connectStdio(sandboxEnv(sandbox, { BUILD_POLL_INTERVAL_MS: "50" }));
    http = await spawnHttpServer(sandboxEnv(sandbox, { BUILD_POLL_INTERVAL_MS: "50" }));
  });
  afterAll(async () => {
    await conn?.close();
    await http?.stop();
    await sandbox?.close();
  });

  it("declares optional task support on every long-running tool", async () => {
    const { tools } = await conn.client.listTools();
    const withTasks = tools.filter((t) => t.execution?.taskSupport === "optional").map((t) => t.name);
    expect(withTasks.sort()).toEqual(["build_deploy", "build_launch_project", "build_recover_version", "build_start_agent", "build_wait"]);
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
    expect(result.structuredContent).toMatchObject({ outcome: "done", until: "agent", project: { agentProcessStatus: "done" } });
    expect(text(result)).toMatch(/The agent run has ended/);
  });

  it("a quick call made as a task comes back completed", async () => {
    const { task } = await createTask(conn.client, "build_start_agent", { projectId: "spring-campaign", prompt: "Tweak colours [minutes=5]" }, 5000);
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
    await sleep(150);
    const settled = hits(AGENT_STATUS);
    await sleep(400);
    expect(hits(AGENT_STATUS)).toBe(settled);
    expect((await conn.client.experimental.tasks.getTask(task.taskId)).status).toBe("cancelled");
  });

  it("works as a task over HTTP: launch with wait, fetched through tasks/result", async () => {
    const client = await connectHttp(http.url);
    const { task } = await createTask(client, "build_launch_project", { projectId: "task-over-http", prompt: "Shop [minutes=20]", wait: true });
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema); // blocks until terminal
    expect(result.structuredContent).toMatchObject({ projectId: "task-over-http", wait: { outcome: "done" } });
    await client.close();
  });

  it("a plain (non-task) call leaves no task behind once answered", async () => {
    const listed = async () => {
      let count = 0;
      let cursor: string | undefined;
      do {
        const page = await conn.client.experimental.tasks.listTasks(cursor);
        count += page.tasks.length;
        cursor = page.nextCursor;
      } while (cursor);
      return count;
    };
    const before = await listed();
    await ok(conn.client, "build_wait", { projectId: "acme-storefront", until: "deployment" });
    await sleep(50 * 2 + 1_300);
    expect(await listed()).toBe(before);
  });

  it("a task expires after its TTL and its polling stops", async () => {
    await ok(conn.client, "build_start_agent", { projectId: "internal-dashboard", prompt: "Forever [minutes=100000]" });
    const { task } = await createTask(conn.client, "build_wait", { projectId: "internal-dashboard", until: "agent" }, 400);
    await sleep(700);
    await expect(conn.client.experimental.tasks.getTask(task.taskId)).rejects.toThrow(/not found/i);
    const settled = hits(AGENT_STATUS);
    await sleep(300);
    expect(hits(AGENT_STATUS)).toBe(settled);
    await ok(conn.client, "build_stop_agent", { projectId: "internal-dashboard" });
  });
});

describe("shared polling and live resources", () => {
  let sandbox: Sandbox;
  let conn: StdioConnection;
  const hits = (key: string) => sandbox.build.router.count(key);
  const INTERVAL = 100;

  beforeAll(async () => {
    sandbox = await testSandbox();
    conn = await connectStdio(sandboxEnv(sandbox, { BUILD_POLL_INTERVAL_MS: String(INTERVAL) }));
  });
  afterAll(async () => {
    await conn?.close();
    await sandbox?.close();
  });

  it("100 concurrent waits on one project share one upstream poll per interval", async () => {
    await ok(conn.client, "build_start_agent", { projectId: "booking-app", prompt: "Long [minutes=100000]" });
    const controllers = Array.from({ length: 100 }, () => new AbortController());
    const progressed = new Set<number>();
    const waits = controllers.map((c, i) =>
      conn.client
        .callTool({ name: "build_wait", arguments: { projectId: "booking-app", until: "agent" } }, undefined, {
          signal: c.signal,
          onprogress: () => progressed.add(i),
          timeout: 60_000,
        })
        .catch(() => "cancelled"),
    );
    await until(async () => progressed.size, (n) => n === 100);
    const before = hits(AGENT_STATUS);
    const windowMs = 2000;
    await sleep(windowMs);
    const polls = hits(AGENT_STATUS) - before;
    // One request per interval (20 in the window), never one per waiter.
    expect(polls).toBeLessThanOrEqual(windowMs / INTERVAL + 2);
    expect(polls).toBeGreaterThanOrEqual(windowMs / INTERVAL / 2);
    for (const c of controllers) c.abort();
    expect(await Promise.all(waits)).toEqual(Array(100).fill("cancelled"));
    await sleep(INTERVAL * 3);
    const stopped = hits(AGENT_STATUS);
    await sleep(INTERVAL * 4);
    expect(hits(AGENT_STATUS)).toBe(stopped);
    await ok(conn.client, "build_stop_agent", { projectId: "booking-app" });
  });

  it("sends resources/updated while subscribed, and nothing after unsubscribing", async () => {
    const updates: string[] = [];
    conn.client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
      updates.push(n.params.uri);
    });
    const uri = "build://projects/spring-campaign";
    await conn.client.subscribeResource({ uri });
    await sleep(INTERVAL * 2); // the poller takes its baseline
    await ok(conn.client, "build_start_agent", { projectId: "spring-campaign", prompt: "New hero [minutes=5]" });
    await until(async () => updates.length, (n) => n >= 1);
    expect(updates.every((u) => u === uri)).toBe(true);
    await ok(conn.client, "build_wait", { projectId: "spring-campaign", until: "agent" });
    await conn.client.unsubscribeResource({ uri });
    const count = updates.length;
    const detailsAfter = hits(DETAILS);
    await ok(conn.client, "build_start_agent", { projectId: "spring-campaign", prompt: "Another [minutes=5]" });
    await sleep(INTERVAL * 5);
    expect(updates.length).toBe(count);
    expect(hits(DETAILS)).toBe(detailsAfter); // nobody watches it any more
  });

  it("accepts a subscription to a resource that never changes on its own, without polling for it", async () => {
    const before = sandbox.build.router.count();
    await expect(conn.client.subscribeResource({ uri: "build://credit-costs" })).resolves.toEqual({});
    await sleep(INTERVAL * 3);
    expect(sandbox.build.router.count()).toBe(before);
    await conn.client.unsubscribeResource({ uri: "build://credit-costs" });
  });

  it("announces list_changed after a create or launch", async () => {
    let changes = 0;
    conn.client.setNotificationHandler(ResourceListChangedNotificationSchema, () => {
      changes++;
    });
    await ok(conn.client, "build_create_project", { projectId: "listed-later" });
    await until(async () => changes, (n) => n >= 1);
    const { resources } = await conn.client.listResources();
    expect(resources.map((r) => r.uri)).toContain("build://projects/listed-later");
  });

  it("progress lines tell a person what is happening, secrets needed included", async () => {
    const messages: string[] = [];
    const r = await conn.client.callTool(
      { name: "build_launch_project", arguments: { projectId: "progress-demo", prompt: "Payments page [secrets] [minutes=40]", wait: true } },
      undefined,
      { onprogress: (p) => messages.push(p.message ?? "") },
    );
    expect(r.isError).toBeFalsy();
    expect(messages.some((m) => /^Agent running · \d+s · \d+ credits · agent: ".+"/.test(m))).toBe(true);
    expect(messages.some((m) => /needs secrets: STRIPE_API_KEY/.test(m))).toBe(true);
    expect(messages.at(-1)).toMatch(/^Agent finished · .* · preview: https?:\/\//);
  });
});

describe("credit guard", () => {
  let sandbox: Sandbox;
  beforeAll(async () => {
    sandbox = await testSandbox();
  });
  afterAll(async () => sandbox?.close());

  async function elicitingClient(answer: "accept" | "decline" | "cancel", env: Record<string, string> = {}) {
    const asked: string[] = [];
    const conn = await connectStdio(sandboxEnv(sandbox, env), [], { capabilities: { elicitation: {} } });
    conn.client.setRequestHandler(ElicitRequestSchema, async (req) => {
      asked.push(req.params.message);
      return answer === "accept" ? { action: "accept", content: { confirm: true } } : { action: answer };
    });
    return { conn, asked };
  }

  it("refuses an unaffordable launch with the numbers and no upstream call", async () => {
    const conn = await connectStdio(sandboxEnv(sandbox));
    sandbox.build.setCredits(0, 1.2);
    const launches = sandbox.build.router.count(`POST ${API}/projects/launch`);
    const r = await call(conn.client, "build_launch_project", {
      projectId: "too-dear",
      prompt: "x",
      files: [{ name: "a.png", content: "iVBORw0KGgo=" }],
    });
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(/Launch project too-dear costs 1.5 credits \(CREATE_PROJECT 1 \+ UPLOAD_FILE 0.5\) and the balance is 1.2/);
    expect(r.structuredContent).toMatchObject({ refused: true, cost: 1.5, balance: 1.2 });
    expect(sandbox.build.router.count(`POST ${API}/projects/launch`)).toBe(launches);
    sandbox.build.setCredits(200, 300);
    await conn.close();
  });

  it("asks before spending and proceeds when the user accepts", async () => {
    const { conn, asked } = await elicitingClient("accept");
    const before = sandbox.build.balance().credits;
    const r = await ok<{ projectId: string }>(conn.client, "build_create_project", { projectId: "approved-one" });
    expect(r.projectId).toBe("approved-one");
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatch(new RegExp(`Create project approved-one: costs 1 credits \\(CREATE_PROJECT 1\\)\\. Balance ${before} → ${before - 1} credits after`));
    await conn.close();
  });

  it("ends cleanly with nothing spent when the user declines", async () => {
    const { conn, asked } = await elicitingClient("decline");
    const creates = sandbox.build.router.count(`POST ${API}/projects`);
    const before = sandbox.build.balance().credits;
    const r = await call(conn.client, "build_create_project", { projectId: "declined-one" });
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(/the user did not approve spending 1 credits.*Nothing was sent or spent/);
    expect(asked).toHaveLength(1);
    expect(sandbox.build.router.count(`POST ${API}/projects`)).toBe(creates);
    expect(sandbox.build.balance().credits).toBe(before);
    await conn.close();
  });

  it("asks for a task-augmented spend before the task starts", async () => {
    const { conn, asked } = await elicitingClient("decline");
    const { task } = await createTask(conn.client, "build_deploy", { projectId: "acme-storefront", wait: true });
    expect(asked[0]).toMatch(/Deploy acme-storefront: costs 1 credits \(CREATE_DEPLOYMENT 1\)/);
    const result = await conn.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.isError).toBe(true);
    expect(text(result)).toMatch(/did not approve/);
    await conn.close();
  });

  it("proceeds without asking when the client cannot be asked", async () => {
    const conn = await connectStdio(sandboxEnv(sandbox));
    expect(await ok(conn.client, "build_create_project", { projectId: "no-elicitation" })).toMatchObject({ projectId: "no-elicitation" });
    await conn.close();
  });

  it("BUILD_CONFIRM_SPEND sets the threshold above which to ask, and never turns asking off", async () => {
    const threshold = await elicitingClient("accept", { BUILD_CONFIRM_SPEND: "5" });
    await ok(threshold.conn.client, "build_create_project", { projectId: "cheap-one" }); // 1 credit: below 5
    expect(threshold.asked).toHaveLength(0);
    await ok(threshold.conn.client, "build_start_agent", { projectId: "cheap-one", prompt: "Build it [minutes=5]" }); // up to 40
    expect(threshold.asked).toHaveLength(1);
    expect(threshold.asked[0]).toMatch(/Start an agent run on cheap-one: has no fixed price: the agent run \(typically 10-40 credits/);
    await threshold.conn.close();

    const never = await elicitingClient("decline", { BUILD_CONFIRM_SPEND: "never" });
    await ok(never.conn.client, "build_create_project", { projectId: "never-asked" });
    expect(never.asked).toHaveLength(0);
    await never.conn.close();
  });
});
