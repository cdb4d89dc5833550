// The hosted topology (issue 13): three replicas behind nginx sharing one Redis, driven as clients
// drive it, through the balancer. A task outlives the replica that followed it; a listen stream
// hears a poll made on another replica; a hundred waits on one project cost one upstream poll per
// interval in all; two tenants with one project id never meet; keys never reach Redis in clear;
// a Redis restart leaves nothing hanging.
import { Redis } from "ioredis";
import { afterAll, beforeAll, expect, it } from "vitest";
import { connectHttp, ok, rpc2026, sleep, until } from "../harness.js";
import { describeCluster, startTestCluster, type TestCluster, open2025 } from "./harness.js";

const TASKS = { extensions: { "io.modelcontextprotocol/tasks": {} } };
const API = "/api/v1/vcaas";
const INTERVAL = 250;
const LEASE_MS = 2000;
/** UPSTREAM_TIMEOUT_MS of the issue-18 cluster: a request in flight lands by then or never. */
const REQUEST_DEADLINE_MS = 8000;

type Json = Record<string, any>;

const hitsOf = async (cluster: TestCluster, route: string) =>
  (await cluster.sandbox!.stats()).services["/build"]?.[route] ?? 0;

/** Polls a task through the balancer until it ends; every status line seen is kept. */
async function taskResult(
  url: string,
  taskId: string,
  headers: Record<string, string> = {},
  timeoutMs = 45_000,
): Promise<{ task: Json; lines: string[] }> {
  const lines: string[] = [];
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { body } = await rpc2026(url, "tasks/get", { taskId }, { headers, capabilities: TASKS });
    const task = body.result ?? {};
    if (task.statusMessage && lines.at(-1) !== task.statusMessage) lines.push(task.statusMessage);
    if (["completed", "failed", "cancelled"].includes(task.status)) return { task, lines };
    if (Date.now() > deadline)
      throw new Error(
        `task ${taskId} still ${task.status ?? JSON.stringify(body)} after ${timeoutMs} ms: ${lines.join(" | ")}`,
      );
    await sleep(200);
  }
}

/** The replica's log says it adopted this task. */
const tookOver = (log: string, taskId: string) =>
  log.split("\n").some((line) => line.includes("task taken over") && line.includes(taskId));

const startTask = async (url: string, name: string, args: Json, headers: Record<string, string> = {}) => {
  const { body } = await rpc2026(url, "tools/call", { name, arguments: args }, { headers, capabilities: TASKS });
  if (body.result?.resultType !== "task") throw new Error(`${name} did not become a task: ${JSON.stringify(body)}`);
  return body.result as Json;
};

/**
 * Starts `build_launch_project {wait: true}` as a task through the balancer and waits until the
 * task follows the agent run (its status line is the wait's "Agent running · …"): the launch was
 * confirmed and its checkpoint saved before that line. "Project … created" comes just before the
 * checkpoint is written; a replica stopped in between leaves a task without one, which another
 * replica rightly does not adopt before the request's deadline. Returns the replica following
 * it, and the launch count before, for a test that then stops that replica.
 */
async function launchConfirmed(cluster: TestCluster, projectId: string) {
  const before = await hitsOf(cluster, `POST ${API}/projects/launch`);
  const task = await startTask(cluster.url, "build_launch_project", {
    projectId,
    prompt: "Landing page [minutes=60]",
    wait: true,
  });
  const follower = cluster.replicas.find((r) => r.output().includes(task.taskId))!;
  expect(follower).toBeDefined();
  await until(
    async () =>
      (await rpc2026(cluster.url, "tasks/get", { taskId: task.taskId }, { capabilities: TASKS })).body.result
        ?.statusMessage ?? "",
    (m) => /^Agent running/.test(m),
  );
  return { before, task, follower };
}

describeCluster("three replicas, one Redis, nginx in front (single account)", () => {
  let cluster: TestCluster;

  beforeAll(async () => {
    cluster = await startTestCluster({
      replicas: 3,
      pollIntervalMs: INTERVAL,
      timeScale: 600,
      env: { MCP_LEASE_MS: LEASE_MS },
      args: ["--toolsets", "all"],
    });
    expect(cluster.state).toBe(true);
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it("finishes a task whose replica was killed with SIGKILL: another takes it over from its checkpoint", async () => {
    const { before, task, follower } = await launchConfirmed(cluster, "survives-a-crash");
    // Then its replica dies mid-wait.
    await follower.kill("SIGKILL");
    const { task: done, lines } = await taskResult(cluster.url, task.taskId);
    expect(done.status).toBe("completed");
    expect(done.result.structuredContent).toMatchObject({
      projectId: "survives-a-crash",
      wait: { outcome: "done", until: "agent" },
    });
    expect(lines.join("\n")).toMatch(/taken over by another replica/);
    // The launch spends credits: it went upstream once, never again on takeover.
    expect((await hitsOf(cluster, `POST ${API}/projects/launch`)) - before).toBe(1);
    expect(cluster.replicas.filter((r) => r !== follower && tookOver(r.output(), task.taskId))).toHaveLength(1);
    await follower.start();
  });

  it("a replica paused past its lease drops its task: the adopter finishes it; one launch went upstream", async () => {
    const { before, task, follower } = await launchConfirmed(cluster, "wakes-up-late");
    expect(follower.signal("SIGSTOP")).toBe(true);
    try {
      await until(
        async () => cluster.replicas.filter((r) => r !== follower && tookOver(r.output(), task.taskId)).length,
        (n) => n === 1,
        4 * LEASE_MS,
      );
    } finally {
      follower.signal("SIGCONT");
    }
    // Awake again, it learns at its next lease renewal that the task is followed elsewhere.
    await until(
      async () => follower.output(),
      (out) => out.split("\n").some((l) => l.includes("stopped following it here") && l.includes(task.taskId)),
      2 * LEASE_MS,
    );
    const { task: done } = await taskResult(cluster.url, task.taskId);
    expect(done.status).toBe("completed");
    expect(done.result.structuredContent).toMatchObject({ projectId: "wakes-up-late", wait: { outcome: "done" } });
    expect((await hitsOf(cluster, `POST ${API}/projects/launch`)) - before).toBe(1);
  });

  it("delivers to a listen stream on one replica the update a poll on another replica caused", async () => {
    const uri = "build://projects/spring-campaign";
    const [r1, r2] = cluster.replicas;
    const onR2 = await connectHttp(r2.url, {}, {}, "modern");
    const onR1 = await connectHttp(r1.url, {}, {}, "modern");
    const heard: string[] = [];
    onR1.setNotificationHandler("notifications/resources/updated", (n) => void heard.push(n.params.uri));
    const streams = [await onR2.listen({ resourceSubscriptions: [uri] })];
    try {
      // r2 follows the project first, so r2 holds its poll lease; r1 then only listens.
      const lease = await until(
        async () => (await cluster.redis.keys("sb:poll:lease:*:project:*spring-campaign")) as string[],
        (keys) => keys.length === 1,
      );
      expect(await cluster.redis.command("GET", lease[0])).toBe("r2");
      streams.push(await onR1.listen({ resourceSubscriptions: [uri] }));
      await sleep(INTERVAL * 2);
      await ok(onR2, "build_start_agent", { projectId: "spring-campaign", prompt: "New hero [minutes=5]" });
      await until(
        async () => heard.length,
        (n) => n >= 1,
        15_000,
      );
      expect(heard.every((u) => u === uri)).toBe(true);
      expect(await cluster.redis.command("GET", lease[0])).toBe("r2"); // r1 never polled it
    } finally {
      await Promise.all(streams.map((s) => s.close()));
      await Promise.all([onR1.close(), onR2.close()]);
    }
  });

  it("makes one upstream poll per interval for 100 waits on one project spread over three replicas", async () => {
    const client = await connectHttp(cluster.url, {}, {}, "modern");
    // Waits for a run started from now on: they poll while it has yet to show (20 s), so the count
    // below does not race a run's end, however long a loaded machine takes to start 100 tasks.
    const wait = { projectId: "booking-app", until: "agent", since: new Date().toISOString() };
    const tasks: Json[] = [];
    const tenWaits = () => Promise.all(Array.from({ length: 10 }, () => startTask(cluster.url, "build_wait", wait)));
    while (tasks.length < 100) tasks.push(...(await tenWaits()));
    const followers = cluster.replicas.filter((r) => tasks.some((t) => r.output().includes(t.taskId)));
    // nginx spread them; a replica restarted by an earlier test may still be in nginx's fail_timeout
    // (10 s after its SIGKILL), so at least two replicas follow, which is what a shared poll needs.
    expect(followers.length).toBeGreaterThanOrEqual(2);
    const route = `GET ${API}/projects/:projectId/agent/status`;
    // The replica that polls publishes the answer with its id: who polled, and when.
    const published: Array<{ from: string; startedAt: number }> = [];
    const listener = new Redis(cluster.redis.url);
    listener.on("pmessage", (_pattern: string, _channel: string, text: string) => published.push(JSON.parse(text)));
    await listener.psubscribe("sb:poll:result:*:agent:*:booking-app");
    await sleep(INTERVAL * 2);
    const opened = Date.now();
    const start = await hitsOf(cluster, route);
    // A window of 12 polls, however long a loaded machine makes each one take.
    const polls =
      (await until(
        () => hitsOf(cluster, route),
        (n) => n - start >= 12,
        20_000,
      )) - start;
    const elapsed = Date.now() - opened;
    await listener.quit();
    // One poller cluster-wide starts a poll at most once per interval (+2 for a lease handed over under
    // load); one per replica would poll two or three times as often, from replicas taking turns.
    expect(polls).toBeLessThanOrEqual(elapsed / INTERVAL + 2);
    const pollers = published.filter((p) => p.startedAt >= opened).sort((a, b) => a.startedAt - b.startedAt);
    expect(pollers.length).toBeGreaterThanOrEqual(polls - 3);
    expect(pollers.filter((p, i) => i > 0 && p.from !== pollers[i - 1].from).length).toBeLessThanOrEqual(2);
    await ok(client, "build_start_agent", { projectId: "booking-app", prompt: "Short work [minutes=5]" });
    const ends = await Promise.all(tasks.slice(0, 5).map((t) => taskResult(cluster.url, t.taskId)));
    expect(ends.every((e) => e.task.status === "completed")).toBe(true);
    await client.close();
  });

  it("drains on SIGTERM: a request in flight finishes, the replica exits 0, its tasks are handed over", async () => {
    const client = await connectHttp(cluster.url, {}, {}, "modern");
    await ok(client, "build_start_agent", { projectId: "acme-storefront", prompt: "Checkout [minutes=50]" });
    const task = await startTask(cluster.url, "build_wait", { projectId: "acme-storefront", until: "agent" });
    const follower = cluster.replicas.find((r) => r.output().includes(task.taskId))!;
    // A blocking call in flight on that replica (no progress token: a plain JSON answer in ~2 s).
    const inFlight = rpc2026(follower.url, "tools/call", {
      name: "build_wait",
      arguments: { projectId: "acme-storefront", until: "agent", timeoutSeconds: 2 },
    });
    await sleep(300);
    const stopping = follower.kill("SIGTERM", 20_000);
    const answer = await inFlight;
    expect(answer.body.result?.structuredContent).toMatchObject({ outcome: "timed_out" });
    expect(await stopping).toMatchObject({ code: 0 });
    const { task: done } = await taskResult(cluster.url, task.taskId);
    expect(done.status).toBe("completed");
    expect(cluster.replicas.filter((r) => r !== follower && tookOver(r.output(), task.taskId))).toHaveLength(1);
    await follower.start();
    await client.close();
  });

  it("survives a Redis restart: tasks in flight still end, nothing hangs, readiness says Redis is away", async () => {
    const client = await connectHttp(cluster.url, {}, {}, "modern");
    await ok(client, "build_start_agent", { projectId: "internal-dashboard", prompt: "Reports [minutes=40]" });
    const task = await startTask(cluster.url, "build_wait", { projectId: "internal-dashboard", until: "agent" });
    await cluster.redis.kill("SIGKILL");
    const started = Date.now();
    const during = await rpc2026(cluster.url, "tasks/get", { taskId: task.taskId }, { capabilities: TASKS });
    expect(Date.now() - started).toBeLessThan(3000);
    expect(during.body.error?.message).toMatch(/task store is unavailable right now.*retry/);
    expect((await cluster.replicas[0].readyz()).status).toBe(503);
    await cluster.redis.start();
    await until(
      async () => (await cluster.replicas[0].readyz()).status,
      (s) => s === 200,
      10_000,
    );
    // Redis came back empty; the replica following the task writes its end back when it comes.
    const { task: done } = await taskResult(cluster.url, task.taskId);
    expect(done.status).toBe("completed");
    expect(done.result.structuredContent).toMatchObject({ outcome: "done" });
    await client.close();
  });
});

describeCluster("money and state across Redis restarts and replica deaths (issue 18)", () => {
  let cluster: TestCluster;
  const elicit = { elicitation: { form: {} } };
  const accept = { confirm_spend: { action: "accept", content: { confirm: true } } };
  const launches = () => hitsOf(cluster, `POST ${API}/projects/launch`);
  const launch = (projectId: string, answer?: { requestState: string }, more: Json = {}) =>
    rpc2026(
      cluster.url,
      "tools/call",
      {
        name: "build_launch_project",
        arguments: { projectId, prompt: "Landing page", ...more },
        ...(answer ? { inputResponses: accept, ...answer } : {}),
      },
      { capabilities: elicit },
    );
  const redisBack = async () => {
    await cluster.redis.start();
    for (const replica of cluster.replicas)
      await until(
        async () => (await replica.readyz()).status,
        (s) => s === 200,
        15_000,
      );
  };

  beforeAll(async () => {
    cluster = await startTestCluster({
      replicas: 3,
      pollIntervalMs: INTERVAL,
      timeScale: 600,
      env: { MCP_LEASE_MS: LEASE_MS, UPSTREAM_TIMEOUT_MS: REQUEST_DEADLINE_MS },
    });
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it("refuses an answer issued before a Redis restart: a replayed launch confirmation spends nothing", async () => {
    const before = await launches();
    const asked = (await launch("replayed-launch")).body.result;
    expect(asked.resultType).toBe("input_required");
    const first = (await launch("replayed-launch", { requestState: asked.requestState })).body.result;
    expect(first.isError).toBeFalsy();
    expect((await launches()) - before).toBe(1);

    // Redis runs without persistence: the marker of that use is gone with the restart.
    await cluster.redis.kill("SIGKILL");
    await redisBack();
    // The replica that launched writes its spend record back (issue 28): the replay gets that outcome.
    await until(
      async () => cluster.replicas.some((r) => r.output().includes("spend records written back")),
      (written) => written,
      10_000,
    );
    const replay = (await launch("replayed-launch", { requestState: asked.requestState })).body.result;
    expect(replay.content[0].text).toMatch(/^Same call as the one at .*: nothing was sent again.*Launched project/s);
    expect((await launches()) - before).toBe(1);
  });

  it("refuses a used answer replayed with repeat: true after a Redis restart (maybe used): nothing sent", async () => {
    const before = await launches();
    const asked = (await launch("replayed-on-purpose")).body.result;
    expect(asked.resultType).toBe("input_required");
    expect((await launch("replayed-on-purpose", { requestState: asked.requestState })).body.result.isError).toBeFalsy();
    expect((await launches()) - before).toBe(1);
    await cluster.redis.kill("SIGKILL");
    await redisBack();
    // repeat: true steps past the ledger, so the confirmation itself must refuse: its use was lost with Redis.
    const replay = (await launch("replayed-on-purpose", { requestState: asked.requestState }, { repeat: true })).body
      .result;
    expect(replay.isError).toBe(true);
    expect(replay.content[0].text).toMatch(/issued before the state store lost its memory.*cannot be proven unused/s);
    expect(replay.content[0].text).toMatch(/Check first \(call build_list_projects with search "replayed-on-purpose"/);
    expect((await launches()) - before).toBe(1);
  });

  it("says a Redis outage while answering is transient and safe to retry, and spends nothing", async () => {
    const before = await launches();
    const asked = (await launch("asked-before-outage")).body.result;
    expect(asked.resultType).toBe("input_required");
    await cluster.redis.kill("SIGKILL");
    try {
      const during = (await launch("asked-before-outage", { requestState: asked.requestState })).body.result;
      expect(during.isError).toBe(true);
      expect(during.content[0].text).toMatch(
        /state store is unavailable.*nothing was sent or spent.*retrying is safe/s,
      );
      expect(during.content[0].text).not.toMatch(/This is a bug/);
    } finally {
      await redisBack();
    }
    expect((await launches()) - before).toBe(0);
    // Redis came back empty: that answer cannot be proven unused any more; asking again works.
    expect(
      (await launch("asked-before-outage", { requestState: asked.requestState })).body.result.content[0].text,
    ).toMatch(/cannot be proven unused/);
    const again = (await launch("asked-before-outage")).body.result;
    expect((await launch("asked-before-outage", { requestState: again.requestState })).body.result.isError).toBeFalsy();
    expect((await launches()) - before).toBe(1);
  });

  it("a launch whose replica dies mid-POST is not failed before its deadline, then names the exact check", async () => {
    const before = await launches();
    // The service takes 3 s to take the launch in: the POST is in flight when its replica dies.
    await cluster.sandbox!.faults([
      { service: "build", fault: "slow", arg: 3000, method: "POST", path: `${API}/projects/launch` },
    ]);
    const task = await startTask(cluster.url, "build_launch_project", {
      projectId: "mid-post",
      prompt: "Shop [minutes=60]",
      wait: true,
    });
    const follower = cluster.replicas.find((r) => r.output().includes(task.taskId))!;
    await sleep(300);
    await follower.kill("SIGKILL");
    try {
      await expectKnownByDeadline(task, before);
    } finally {
      await follower.start();
    }
  });

  async function expectKnownByDeadline(task: Json, before: number) {
    const seen: Array<{ at: number; status: string }> = [];
    let done: Json = {};
    await until(
      async () => {
        done =
          (await rpc2026(cluster.url, "tasks/get", { taskId: task.taskId }, { capabilities: TASKS })).body.result ?? {};
        seen.push({ at: Date.now() - Date.parse(task.createdAt), status: done.status });
        return done.status;
      },
      (status) => status === "failed",
      30_000,
    );
    // Nothing was declared before the request's own deadline had passed (the POST landed meanwhile).
    expect(seen.filter((s) => s.at < REQUEST_DEADLINE_MS).every((s) => s.status === "working")).toBe(true);
    expect(seen.find((s) => s.status === "failed")!.at).toBeGreaterThanOrEqual(REQUEST_DEADLINE_MS);
    expect((await launches()) - before).toBe(1);
    const message = String(done.error?.message);
    expect(message).toMatch(/outcome is unknown.*not sent again/s);
    expect(message).toMatch(
      new RegExp(
        /build_list_projects with search "mid-post" /.source +
          /and look for "mid-post" or "mid-post-" followed by 2-6 letters or digits/.source,
      ),
    );
    expect(message).not.toMatch(/call build_launch_project again/);
  }

  it("Redis restart: a running task is written back, adopted on replica death; 2025 tasks/result gets it", async () => {
    const [a, b] = cluster.replicas;
    const client = await connectHttp(a.url, {}, {}, "modern");
    // 55 minutes (5.5 s here): under the 60-minute limit of one prompt, long enough to outlive the restart.
    await ok(client, "build_start_agent", { projectId: "acme-storefront", prompt: "Reports [minutes=55]" });
    const task = await startTask(a.url, "build_wait", { projectId: "acme-storefront", until: "agent" });
    const session = await open2025(b.url);
    const blocking = session.request("tasks/result", { taskId: task.taskId });
    await sleep(500);
    await cluster.redis.kill("SIGKILL");
    await redisBack();
    const status = async () =>
      (await rpc2026(b.url, "tasks/get", { taskId: task.taskId }, { capabilities: TASKS })).body;
    // Its follower put it back as soon as Redis answered again, not at the task's end.
    await until(
      async () => (await status()).result?.status,
      (s) => s === "working",
      3000,
    );
    // Then the follower dies: another replica finds it in the working set and adopts it.
    await a.kill("SIGKILL");
    try {
      const answer = await blocking;
      expect(answer?.error).toBeUndefined();
      expect(answer?.structuredContent ?? answer?.result?.structuredContent).toMatchObject({
        project: { projectId: "acme-storefront" },
        outcome: "done",
      });
      expect(cluster.replicas.filter((r) => r !== a && tookOver(r.output(), task.taskId))).toHaveLength(1);
    } finally {
      await a.start();
      await client.close().catch(() => undefined);
    }
  });
});

describeCluster("per-user keys across replicas: two tenants, one project id", () => {
  let cluster: TestCluster;
  let keyA: string;
  let keyB: string;
  const as = (key: string) => ({ "x-build-api-key": key });

  beforeAll(async () => {
    cluster = await startTestCluster({
      replicas: 3,
      credentials: "caller",
      pollIntervalMs: INTERVAL,
      timeScale: 600,
      sandboxEnv: { SANDBOX_ACCOUNTS: 2 },
      env: { MCP_LEASE_MS: LEASE_MS },
      args: ["--toolsets", "all"],
    });
    [keyA, keyB] = cluster.sandbox!.accountKeys.build;
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it("keeps state, tasks and notifications apart, and never writes a key to Redis in clear", async () => {
    const a = await connectHttp(cluster.url, as(keyA), {}, "modern");
    const b = await connectHttp(cluster.url, as(keyB), {}, "modern");
    await ok(a, "build_update_project", { projectId: "acme-storefront", label: "Tenant A" });
    expect((await ok(b, "build_get_project", { projectId: "acme-storefront" })).label).toBe("Acme Storefront");

    // Notifications: B listens on r1, A on r3; A's change reaches A only.
    const bOnR1 = await connectHttp(cluster.replicas[0].url, as(keyB), {}, "modern");
    const aOnR3 = await connectHttp(cluster.replicas[2].url, as(keyA), {}, "modern");
    const heard = { a: 0, b: 0 };
    aOnR3.setNotificationHandler("notifications/resources/updated", () => void heard.a++);
    bOnR1.setNotificationHandler("notifications/resources/updated", () => void heard.b++);
    const uri = "build://projects/acme-storefront";
    const streams = [
      await aOnR3.listen({ resourceSubscriptions: [uri] }),
      await bOnR1.listen({ resourceSubscriptions: [uri] }),
    ];
    await sleep(INTERVAL * 3);

    // Tasks: A's wait, asked for from every replica by B, is nobody's; A sees it anywhere.
    await ok(a, "build_start_agent", { projectId: "acme-storefront", prompt: "Add a blog [minutes=100000]" });
    const task = await startTask(cluster.url, "build_wait", { projectId: "acme-storefront", until: "agent" }, as(keyA));
    for (const replica of cluster.replicas) {
      expect(
        (await rpc2026(replica.url, "tasks/get", { taskId: task.taskId }, { headers: as(keyB), capabilities: TASKS }))
          .body.error?.message,
      ).toMatch(/Task not found/);
      expect(
        (await rpc2026(replica.url, "tasks/get", { taskId: task.taskId }, { headers: as(keyA), capabilities: TASKS }))
          .body.result?.status,
      ).toBe("working");
    }
    await until(
      async () => heard.a,
      (n) => n >= 1,
      15_000,
    );
    await sleep(INTERVAL * 4);
    expect(heard.b).toBe(0);

    // At rest: the task is sealed (its keys are inside), and no key appears anywhere in Redis.
    const dump = await cluster.redis.dump("*");
    const everything = JSON.stringify(dump);
    const stored = Object.entries(dump)
      .filter(([k]) => k.startsWith("sb:task:"))
      .map(([, e]) => JSON.parse(String(e.value)) as Json);
    expect(stored.find((t) => t.taskId === task.taskId)?.sealed).toMatch(/^v1\./);
    for (const key of [keyA, keyB]) expect(everything).not.toContain(key);

    await Promise.all(streams.map((s) => s.close()));
    await ok(a, "build_stop_agent", { projectId: "acme-storefront" });
    const { task: done } = await taskResult(cluster.url, task.taskId, as(keyA));
    expect(done.status).toBe("completed");
    // Ended: its sealed work (and the keys in it) is erased.
    expect(await cluster.redis.command("GET", `sb:task:${task.taskId}`)).not.toMatch(/sealed/);
    await Promise.all([a, b, bOnR1, aOnR3].map((c) => c.close()));
  });
});
