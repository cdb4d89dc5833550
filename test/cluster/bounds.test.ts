// Issue 18 items 6 and 7: what one caller can make a replica hold. A listen stream's URIs each
// started a poller (a Redis lease and a publish per interval, an upstream GET for a caller with a
// key) without limit, also for callers without any key; callers without keys share one tenant and
// could take every 2025 session slot. Two replicas on Redis (requests go to the first unless a test
// says otherwise), per-user keys, small caps. Issue 18 item 9: one pattern subscription per replica.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { connectHttp, ok, request2026, rpc2026, sleep, until } from "../harness.js";
import { describeCluster, startTestCluster, type TestCluster } from "./harness.js";

const INTERVAL = 200;
const CAPS = {
  MCP_MAX_LISTEN_URIS: 20,
  MCP_MAX_SUBSCRIPTIONS_PER_TENANT: 30,
  MCP_MAX_POLLERS: 40,
  MCP_MAX_SESSIONS_PER_TENANT: 3,
  MCP_MAX_TASKS_PER_TENANT: 5,
  MCP_MAX_SESSIONS: 14,
  MCP_MAX_TENANTS: 6,
};
const TASKS = { extensions: { "io.modelcontextprotocol/tasks": {} } };
const PROJECT_GET = "GET /api/v1/vcaas/projects/:projectId";
const COSTS_GET = "GET /api/v1/vcaas/credit-costs";

const uris = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `build://projects/${prefix}-${i}`);

/** A raw 2026-07-28 subscriptions/listen: its status and, when refused, the JSON-RPC error. A stream is cut at once. */
async function listenRaw(url: string, resourceSubscriptions: string[], headers: Record<string, string> = {}) {
  const controller = new AbortController();
  const listen = request2026("subscriptions/listen", { notifications: { resourceSubscriptions } }, { headers });
  const res = await fetch(url, {
    method: "POST",
    signal: controller.signal,
    headers: listen.headers,
    body: listen.body,
  });
  if (res.headers.get("content-type")?.includes("event-stream")) {
    controller.abort();
    return { status: res.status, error: undefined };
  }
  const body = (await res.json()) as { error?: { code: number; message: string } };
  return { status: res.status, error: body.error };
}

/** A raw 2025-11-25 initialize: the HTTP status and the error message, if any. */
async function initialize(url: string, headers: Record<string, string> = {}) {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "flood", version: "1.0.0" } },
    }),
  });
  const text = await res.text();
  return { status: res.status, text, sessionId: res.headers.get("mcp-session-id") };
}

/** A 2025-11-25 session opened with raw requests; returns its tasks/list (the SDK v2 client has no 2025 tasks). */
async function legacyTasksList(url: string, headers: Record<string, string>) {
  const opened = await initialize(url, headers);
  const session = {
    ...headers,
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "mcp-session-id": opened.sessionId!,
    "mcp-protocol-version": "2025-11-25",
  };
  await fetch(url, {
    method: "POST",
    headers: session,
    body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
  });
  let id = 1;
  return async (cursor?: string): Promise<{ result?: unknown; error?: { message: string } }> => {
    const res = await fetch(url, {
      method: "POST",
      headers: session,
      body: JSON.stringify({ jsonrpc: "2.0", id: ++id, method: "tasks/list", params: cursor ? { cursor } : {} }),
    });
    const text = await res.text();
    const data = res.headers.get("content-type")?.includes("event-stream")
      ? text
          .split("\n")
          .find((l) => l.startsWith("data:"))!
          .slice(5)
      : text;
    return JSON.parse(data);
  };
}

describeCluster("bounds: listen floods and sessions per tenant (one replica, Redis, per-user keys)", () => {
  let cluster: TestCluster;
  let keyA: string;
  let keyB: string;
  const as = (key: string) => ({ "x-build-api-key": key });
  const projectGets = async () => (await cluster.sandbox!.stats()).services["/build"]?.[PROJECT_GET] ?? 0;

  beforeAll(async () => {
    cluster = await startTestCluster({
      replicas: 2,
      nginx: false,
      credentials: "caller",
      pollIntervalMs: INTERVAL,
      sandboxEnv: { SANDBOX_ACCOUNTS: 2 },
      env: { ...CAPS, BUILD_CONFIRM_SPEND: "never" },
    });
    [keyA, keyB] = cluster.sandbox!.accountKeys.build;
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it("a listen stream without a key starts no poller: no lease, no publish, no upstream GET", async () => {
    const anonymous = await connectHttp(cluster.url, {}, {}, "modern");
    const gets = await projectGets();
    const stream = await anonymous.listen({ resourceSubscriptions: uris("keyless", 20) });
    try {
      await sleep(INTERVAL * 5);
      expect(await cluster.redis.keys("sb:poll:*")).toEqual([]);
      expect((await projectGets()) - gets).toBe(0);
      expect(((await cluster.replicas[0].healthz()).body as { pollers?: number }).pollers).toBe(0);
    } finally {
      await stream.close();
      await anonymous.close();
    }
  });

  it("refuses a listen naming more URIs than MCP_MAX_LISTEN_URIS with 429, before following any", async () => {
    const refused = await listenRaw(cluster.url, uris("too-many", 21), as(keyA));
    expect(refused.status).toBe(429);
    expect(refused.error?.message).toMatch(/21 resources.*at most 20 \(MCP_MAX_LISTEN_URIS\)/);
    expect(await cluster.redis.keys("sb:poll:*")).toEqual([]);
  });

  it("caps subscriptions per tenant and resources followed per replica, frees them when streams close", async () => {
    const a = await connectHttp(cluster.url, as(keyA), {}, "modern");
    const b = await connectHttp(cluster.url, as(keyB), {}, "modern");
    // Each key gets its own share once the upstream accepted it (until then it shares one with made-up keys).
    await ok(a, "build_get_account");
    await ok(b, "build_get_account");
    const streams = [await a.listen({ resourceSubscriptions: uris("a", 20) })];
    try {
      // A second stream of A's would hold 40 > 30.
      const overTenant = await listenRaw(cluster.url, uris("a2", 20), as(keyA));
      expect(overTenant.status).toBe(429);
      expect(overTenant.error?.message).toMatch(
        /hold 20 resource subscriptions.*at most 30 are allowed \(MCP_MAX_SUBSCRIPTIONS_PER_TENANT\)/,
      );
      // B fills the replica's 40 pollers; anyone with a key (even one no upstream knows) is refused the next.
      streams.push(await b.listen({ resourceSubscriptions: uris("b", 20) }));
      const overReplica = await listenRaw(cluster.url, uris("c", 1), as("tlm_sk_some_other_caller_0000000000"));
      expect(overReplica.status).toBe(429);
      expect(overReplica.error?.message).toMatch(/follows 40 resources.*\(MCP_MAX_POLLERS\)/);
      // Polling is bounded by the caps: about 40 upstream GETs per interval at most.
      await sleep(INTERVAL * 2);
      const before = await projectGets();
      await sleep(INTERVAL * 10);
      expect((await projectGets()) - before).toBeLessThanOrEqual(40 * 12);
    } finally {
      await Promise.all(streams.map((s) => s.close()));
    }
    await until(
      async () => ((await cluster.replicas[0].healthz()).body as { pollers?: number }).pollers,
      (n) => n === 0,
    );
    const c = await connectHttp(cluster.url, as("tlm_sk_some_other_caller_0000000000"), {}, "modern");
    const later = await c.listen({ resourceSubscriptions: uris("c", 1) });
    await later.close();
    await Promise.all([a, b, c].map((x) => x.close()));
  });

  it("caps 2025 sessions per tenant: keyless callers share one tenant and cap, keyed tenants keep theirs", async () => {
    const opened: string[] = [];
    for (let i = 0; i < CAPS.MCP_MAX_SESSIONS_PER_TENANT; i++) {
      const ok = await initialize(cluster.url);
      expect(ok.status).toBe(200);
      opened.push(ok.sessionId!);
    }
    const refused = await initialize(cluster.url);
    expect(refused.status).toBe(429);
    expect(refused.text).toMatch(/Callers without keys hold 3 open sessions.*MCP_MAX_SESSIONS_PER_TENANT/);
    expect((await initialize(cluster.url, as(keyA))).status).toBe(200);
    // Closing one frees its slot.
    const del = await fetch(cluster.url, {
      method: "DELETE",
      headers: { "mcp-session-id": opened[0], "mcp-protocol-version": "2025-11-25" },
    });
    expect(del.status).toBe(200);
    expect((await initialize(cluster.url)).status).toBe(200);
  });

  it("takes the tasks cap in one atomic step: 12 concurrent calls on both replicas start 5 tasks", async () => {
    const b = await connectHttp(cluster.url, as(keyB), {}, "modern");
    await ok(b, "build_start_agent", { projectId: "booking-app", prompt: "Long work [minutes=100000]" });
    // Redis holds every command for a moment, so all 12 checks are queued before any task is written:
    // a check and a write in two steps then lets every call through, as replicas racing under load did.
    await cluster.redis.command("CLIENT", "PAUSE", "1500", "ALL");
    const calls = Array.from({ length: 12 }, (_, i) =>
      rpc2026(
        cluster.replicas[i % cluster.replicas.length].url,
        "tools/call",
        { name: "build_wait", arguments: { projectId: "booking-app", until: "agent" } },
        { headers: as(keyB), capabilities: TASKS },
      ),
    );
    const answers = (await Promise.all(calls)).map((a) => a.body.result);
    const started = answers.filter((r) => r?.resultType === "task").map((r) => r.taskId as string);
    const refused = answers.filter((r) => r?.isError);
    try {
      expect(started).toHaveLength(CAPS.MCP_MAX_TASKS_PER_TENANT);
      expect(refused).toHaveLength(12 - CAPS.MCP_MAX_TASKS_PER_TENANT);
      for (const r of refused) expect(r.content[0].text).toMatch(/5 tasks working.*MCP_MAX_TASKS_PER_TENANT/);
    } finally {
      for (const taskId of started)
        await rpc2026(cluster.url, "tasks/cancel", { taskId }, { headers: as(keyB), capabilities: TASKS });
      await ok(b, "build_stop_agent", { projectId: "booking-app" });
      await b.close();
    }
  });

  it("caps working tasks per tenant (MCP_MAX_TASKS_PER_TENANT) and pages 2025 tasks/list with cursors", async () => {
    const a = await connectHttp(cluster.url, as(keyA), {}, "modern");
    await ok(a, "build_start_agent", { projectId: "booking-app", prompt: "Long work [minutes=100000]" });
    const wait = (key: string) =>
      rpc2026(
        cluster.url,
        "tools/call",
        { name: "build_wait", arguments: { projectId: "booking-app", until: "agent" } },
        { headers: as(key), capabilities: TASKS },
      );
    const started: string[] = [];
    for (let i = 0; i < CAPS.MCP_MAX_TASKS_PER_TENANT; i++) {
      const { body } = await wait(keyA);
      expect(body.result?.resultType).toBe("task");
      started.push(body.result.taskId);
    }
    const refused = (await wait(keyA)).body.result;
    expect(refused?.isError).toBe(true);
    expect(refused?.content?.[0]?.text).toMatch(/5 tasks working.*MCP_MAX_TASKS_PER_TENANT.*Nothing was started/);
    // Another tenant is not held back; a task that ends frees its slot.
    expect((await wait(keyB)).body.result?.resultType).toBe("task");
    await rpc2026(cluster.url, "tasks/cancel", { taskId: started[0] }, { headers: as(keyA), capabilities: TASKS });
    expect((await wait(keyA)).body.result?.resultType).toBe("task");

    // 60 tasks of one tenant (each cancelled once started, so the cap never binds) list in pages.
    const key = "tlm_sk_tasks_paging_tenant_000000000000";
    const mine = new Set<string>();
    for (let i = 0; i < 60; i++) {
      const { body } = await wait(key);
      const taskId = body.result?.taskId as string;
      mine.add(taskId);
      await rpc2026(cluster.url, "tasks/cancel", { taskId }, { headers: as(key), capabilities: TASKS });
    }
    const list = await legacyTasksList(cluster.url, as(key));
    const seen: string[] = [];
    const sizes: number[] = [];
    let cursor: string | undefined;
    do {
      const page = (await list(cursor)).result as { tasks: Array<{ taskId: string }>; nextCursor?: string };
      sizes.push(page.tasks.length);
      seen.push(...page.tasks.map((t) => t.taskId));
      cursor = page.nextCursor;
    } while (cursor && sizes.length < 10);
    expect(sizes.length).toBeGreaterThan(1);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(50);
    expect(new Set(seen)).toEqual(mine);
    expect((await list("not-a-cursor")).error?.message).toMatch(/Invalid cursor/);
    await ok(a, "build_stop_agent", { projectId: "booking-app" });
    await a.close();
  });

  it("relays tenant resource-list changes via one pattern subscription per replica, to that tenant only", async () => {
    const [r1, r2] = cluster.replicas;
    const heard = { a: 0, b: 0 };
    const aOnR1 = await connectHttp(r1.url, as(keyA), {}, "modern");
    const bOnR1 = await connectHttp(r1.url, as(keyB), {}, "modern");
    aOnR1.setNotificationHandler("notifications/resources/list_changed", () => void heard.a++);
    bOnR1.setNotificationHandler("notifications/resources/list_changed", () => void heard.b++);
    const streams = [
      await aOnR1.listen({ resourcesListChanged: true }),
      await bOnR1.listen({ resourcesListChanged: true }),
    ];
    const aOnR2 = await connectHttp(r2.url, as(keyA), {}, "modern");
    try {
      await ok(aOnR2, "build_create_project", { projectId: "relayed-change" });
      await until(
        async () => heard.a,
        (n) => n >= 1,
        15_000,
      );
      await sleep(500);
      expect(heard.b).toBe(0);
      // Several tenants live on each replica now; Redis holds no channel per tenant, one pattern in all.
      expect(await cluster.redis.command("PUBSUB", "CHANNELS", "sb:changes:*")).toEqual([]);
      expect(await cluster.redis.command("PUBSUB", "NUMPAT")).toBe(1);
    } finally {
      await Promise.all(streams.map((x) => x.close()));
      await Promise.all([aOnR1, bOnR1, aOnR2].map((c) => c.close()));
    }
  });
  it("gives made-up keys one share together: they cannot take a real tenant's sessions or pollers", async () => {
    const madeUp = () => `tlm_sk_made_up_${randomBytes(12).toString("hex")}`;
    // 11 keys x 3 sessions: together they get the one share of MCP_MAX_SESSIONS_PER_TENANT.
    const statuses: number[] = [];
    for (let i = 0; i < 11; i++) {
      const key = madeUp();
      for (let j = 0; j < CAPS.MCP_MAX_SESSIONS_PER_TENANT; j++)
        statuses.push((await initialize(cluster.url, as(key))).status);
    }
    expect(statuses.filter((s) => s === 200).length).toBeLessThanOrEqual(CAPS.MCP_MAX_SESSIONS_PER_TENANT);
    const real = await initialize(cluster.url, as(keyA));
    expect(real.status, real.text).toBe(200);
    // 10 keys x 20 URIs: together at most MCP_MAX_SUBSCRIPTIONS_PER_TENANT; a real tenant still listens.
    const clients = await Promise.all(
      Array.from({ length: 10 }, () => connectHttp(cluster.url, as(madeUp()), {}, "modern")),
    );
    const streams: Array<{ close(): Promise<void> }> = [];
    let refused = 0;
    for (const [i, c] of clients.entries()) {
      try {
        streams.push(await c.listen({ resourceSubscriptions: uris(`made-up-${i}`, 20) }));
      } catch {
        refused++;
      }
    }
    try {
      expect(refused).toBeGreaterThanOrEqual(9);
      const a = await connectHttp(cluster.url, as(keyA), {}, "modern");
      clients.push(a);
      streams.push(await a.listen({ resourceSubscriptions: uris("real", 20) }));
    } finally {
      await Promise.all(streams.map((s) => s.close()));
      await Promise.all(clients.map((c) => c.close()));
    }
  });
  it("gives made-up keys one share of working tasks and of the tenant cache: a real tenant keeps both", async () => {
    const madeUp = () => `tlm_sk_made_up_${randomBytes(12).toString("hex")}`;
    const r1 = cluster.replicas[0].url;
    const a = await connectHttp(r1, as(keyA), {}, "modern");
    // A paid call reads the credit-cost table once and keeps it 5 minutes in A's tenant on this replica.
    await ok(a, "build_create_project", { projectId: "tenant-cache-probe" });
    const costsBefore = (await cluster.sandbox!.stats()).services["/build"]?.[COSTS_GET] ?? 0;
    expect(costsBefore).toBeGreaterThan(0);

    // 12 made-up keys start a task each at once (Redis paused, so every check is queued before any
    // write), and A one: the made-up keys together get one share of MCP_MAX_TASKS_PER_TENANT.
    await cluster.redis.command("CLIENT", "PAUSE", "1500", "ALL");
    const start = (key: string) =>
      rpc2026(
        r1,
        "tools/call",
        { name: "build_wait", arguments: { projectId: "booking-app", until: "agent" } },
        { headers: as(key), capabilities: TASKS },
      );
    const [mine, ...theirs] = (
      await Promise.all([start(keyA), ...Array.from({ length: 12 }, () => start(madeUp()))])
    ).map((r) => r.body.result);
    expect(mine?.resultType, JSON.stringify(mine)).toBe("task");
    expect(theirs.filter((r) => r?.resultType === "task")).toHaveLength(CAPS.MCP_MAX_TASKS_PER_TENANT);
    const refused = theirs.filter((r) => r?.isError);
    expect(refused).toHaveLength(12 - CAPS.MCP_MAX_TASKS_PER_TENANT);
    expect(refused[0].content[0].text).toMatch(/Keys no service has accepted yet \(together\) have 5 tasks working/);
    await rpc2026(r1, "tasks/cancel", { taskId: mine.taskId }, { headers: as(keyA), capabilities: TASKS });

    // 20 more made-up keys, each a tenant of its own, past MCP_MAX_TENANTS: A's tenant stays built,
    // so its next paid call reads no cost table (a rebuilt tenant would).
    for (let i = 0; i < 20; i++)
      await rpc2026(r1, "tools/call", { name: "build_get_account", arguments: {} }, { headers: as(madeUp()) });
    await ok(a, "build_create_project", { projectId: "tenant-cache-probe-2" });
    expect((await cluster.sandbox!.stats()).services["/build"]?.[COSTS_GET] ?? 0).toBe(costsBefore);
    await a.close();
  });
});
