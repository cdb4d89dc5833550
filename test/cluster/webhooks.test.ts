// Issue 31 across replicas: two replicas on Redis behind nginx, which terminates TLS with a
// certificate made here by openssl; the sandbox (trusting only that certificate) delivers
// agent.prompt.finished over HTTPS to whichever replica nginx picks, and Redis pub/sub carries it
// to the replica that polls. Waits end within a second of the run's end (p50) with at least 4 times
// fewer upstream reads than polling at the same interval; a dropped delivery still ends its wait by
// polling; a forged one ends nothing; an account's own webhook is never touched.
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Client } from "@modelcontextprotocol/client";
import { freePort } from "../../scripts/cluster.mjs";
import type { Sandbox } from "../../src/sandbox/index.js";
import type { BuildSimulator } from "../../src/sandbox/simulators/builder/index.js";
import { connectHttp, ok, sandboxEnv, spawnHttpServer, testSandbox, type HttpServerProcess } from "../harness.js";
import { makeCert, type TestCert } from "../../scripts/tls.mjs";
import { accessLines, describeCluster, startTestCluster, type TestCluster } from "./harness.js";

const API = "/api/v1/vcaas";
const STATUS = `GET ${API}/projects/:projectId/agent/status`;
const TIME_SCALE = 3000;
const INTERVAL_MS = 1000;
/** 8 s runs: polling at 1 s reads about 9 times per wait. */
const RUN_MINUTES = 400;
const WAITS = 5;
const USERS = {
  url: "https://hooks.example.com/users-own",
  event: "project.credit_limit.reached",
  headers: { "x-users-own": "1" },
};

interface Waited {
  outcome: string;
}

describeCluster("two replicas, nginx with TLS, Redis: webhooks end waits", () => {
  let cert: TestCert;
  let sandbox: Sandbox;
  let cluster: TestCluster;
  let tlsPort: number;
  let poller: HttpServerProcess;
  const clients: Client[] = [];
  let runs = 0;
  let usersHook: string;

  const sim = (n: number): BuildSimulator => sandbox.accounts.build[n].simulator;

  /** Starts a run on `projectId`: its `since` for the wait. */
  async function begin(client: Client, projectId: string, minutes = RUN_MINUTES): Promise<string> {
    const started = await ok<{ startedAt: string }>(client, "build_start_agent", {
      projectId,
      prompt: `Add page ${++runs} [minutes=${minutes}]`,
    });
    return started.startedAt;
  }

  /** Waits for the run started at `since`: the outcome, and how long after the run's end it came. */
  async function follow(client: Client, s: BuildSimulator, projectId: string, since: string, timeoutSeconds = 60) {
    // A wait may go on past the client's default 60 s (a dropped delivery waits for a slowed poll).
    const answer = await client.callTool(
      { name: "build_wait", arguments: { projectId, until: "agent", since, timeoutSeconds } },
      { timeout: (timeoutSeconds + 30) * 1000 },
    );
    expect(answer.isError, JSON.stringify(answer.content)).toBeFalsy();
    const waited = answer.structuredContent as unknown as Waited;
    const answeredAt = Date.now();
    const endedAt = s.project(projectId)!.run!.endedAt;
    const realEnd = endedAt === undefined ? Number.NaN : Date.now() - (s.simulatedNow() - endedAt) / TIME_SCALE;
    return { outcome: waited.outcome, lagMs: answeredAt - realEnd };
  }

  async function run(client: Client, s: BuildSimulator, projectId: string, timeoutSeconds = 60) {
    return follow(client, s, projectId, await begin(client, projectId), timeoutSeconds);
  }

  /** A run on each client's project, all at once; the reads counted are the waits' (not the starts'). */
  async function batch(list: Client[], s: BuildSimulator, prefix: string) {
    const since = await Promise.all(list.map((c, i) => begin(c, `${prefix}-${i}`)));
    const before = s.router.count(STATUS);
    const results = await Promise.all(list.map((c, i) => follow(c, s, `${prefix}-${i}`, since[i])));
    const gets = s.router.count(STATUS) - before;
    const lags = results.map((r) => r.lagMs).sort((a, b) => a - b);
    return { results, getsPerWait: gets / list.length, p50: lags[Math.floor(lags.length / 2)] };
  }

  beforeAll(async () => {
    cert = makeCert();
    sandbox = await testSandbox({ accounts: 2, build: { webhookCa: cert.cert } });
    // The user's own webhook for one of the two events, from before the server ever ran.
    const put = await fetch(`${sandbox.urls.build}${API}/webhooks`, {
      method: "PUT",
      headers: { "api-key": sandbox.keys.build, "content-type": "application/json" },
      body: JSON.stringify(USERS),
    });
    usersHook = ((await put.json()) as { data: { id: string } }).data.id;
    tlsPort = await freePort();
    cluster = await startTestCluster({
      replicas: 2,
      sandbox: false,
      pollIntervalMs: INTERVAL_MS,
      tls: { port: tlsPort, certFile: cert.certFile, keyFile: cert.keyFile },
      args: ["--toolsets", "all"],
      env: {
        BUILD_API_BASE_URL: sandbox.urls.build,
        BUILD_API_KEY: sandbox.accounts.build[0].key,
        BUILD_CONFIRM_SPEND: "never",
        BUILD_WEBHOOKS: "on",
        BUILD_WEBHOOK_POLL_MS: 20_000,
        MCP_PUBLIC_URL: `https://localhost:${tlsPort}/mcp`,
      },
    });
    // Polling alone, at the same interval, on an account of its own: the baseline.
    poller = await spawnHttpServer(
      sandboxEnv(sandbox, {
        BUILD_API_KEY: sandbox.accounts.build[1].key,
        BUILD_CONFIRM_SPEND: "never",
        BUILD_POLL_INTERVAL_MS: String(INTERVAL_MS),
      }),
    );
  }, 120_000);
  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    await poller?.stop();
    await cluster?.stop();
    await sandbox?.close();
  });

  it("ends waits within a second of the run's end (p50), with 4x fewer reads than polling", async () => {
    const pushed = await Promise.all(Array.from({ length: WAITS }, () => connectHttp(cluster.url)));
    const polled = await Promise.all(Array.from({ length: WAITS }, () => connectHttp(poller.url)));
    clients.push(...pushed, ...polled);
    for (let i = 0; i < WAITS; i++) {
      await ok(pushed[0], "build_create_project", { projectId: `push-${i}` });
      await ok(polled[0], "build_create_project", { projectId: `push-${i}` });
    }
    // Each replica builds the account's service on its first call and hears deliveries from then on
    // (a replica that joins later polls at the normal interval until the next delivery).
    for (const r of cluster.replicas) {
      const direct = await connectHttp(r.url);
      clients.push(direct);
      await ok(direct, "build_get_account");
    }
    // The first wait subscribes the account; its delivery turns push on for every replica.
    expect((await run(pushed[0], sim(0), "push-0")).outcome).toBe("done");
    await sim(0).webhooksSettled();
    const delivered = sim(0).webhookDeliveries();
    expect(delivered.at(-1)?.url).toMatch(new RegExp(`^https://localhost:${tlsPort}/hooks/build/`));
    expect(delivered.at(-1)?.attempts).toEqual([expect.objectContaining({ status: 202 })]);

    const [push, poll] = await Promise.all([batch(pushed, sim(0), "push"), batch(polled, sim(1), "push")]);
    console.log(
      `push: p50 ${Math.round(push.p50)} ms after the end, ${push.getsPerWait} GETs per wait; ` +
        `poll: p50 ${Math.round(poll.p50)} ms, ${poll.getsPerWait} GETs per wait`,
    );
    expect(push.results.every((r) => r.outcome === "done")).toBe(true);
    expect(poll.results.every((r) => r.outcome === "done")).toBe(true);
    expect(push.p50).toBeLessThan(1000);
    expect(push.getsPerWait * 4).toBeLessThanOrEqual(poll.getsPerWait);
    // Both replicas took waits, and deliveries went through nginx's TLS listener.
    const hooks = accessLines(cluster.nginxLog!()).filter((l) => l.path.startsWith("/hooks/build/"));
    expect(hooks.length).toBeGreaterThanOrEqual(WAITS);
    expect(hooks.every((l) => l.status === 202)).toBe(true);
  }, 120_000);

  it("a forged delivery ends nothing; a dropped one still ends its wait by polling", async () => {
    const client = clients[0];
    sim(0).injectWebhookFault({ kind: "forge" });
    // Push is healthy, so polls come every 20 s: only a delivery could end this wait in 12 s.
    const forged = await run(client, sim(0), "push-1", 12);
    expect(forged.outcome).toBe("timed_out");
    await sim(0).webhooksSettled();
    expect(sim(0).webhookDeliveries().at(-1)?.attempts).toEqual([
      expect.objectContaining({ fault: "forge", status: 401 }),
    ]);
    // The same run, followed again: the poll at the start of a wait sees it ended.
    expect((await ok<Waited>(client, "build_wait", { projectId: "push-1", until: "agent" })).outcome).toBe("done");

    sim(0).injectWebhookFault({ kind: "drop" });
    const dropped = await run(client, sim(0), "push-2", 120);
    expect(dropped.outcome).toBe("done");
    // Ended by the slowed poll (BUILD_WEBHOOK_POLL_MS, 20 s here), which no delivery shortened.
    expect(dropped.lagMs).toBeGreaterThan(1000);
    expect(dropped.lagMs).toBeLessThan(21_000);
    expect(sim(0).webhookDeliveries().at(-1)?.attempts).toEqual([expect.objectContaining({ fault: "drop" })]);
  }, 180_000);

  it("a miss one replica finds puts the tenant's waits on the other back on the normal interval", async () => {
    const [first, second] = await Promise.all(cluster.replicas.map((r) => connectHttp(r.url)));
    clients.push(first, second);
    // A delivered run: push is healthy on both replicas again after the miss above.
    expect((await run(first, sim(0), "push-3")).outcome).toBe("done");
    await sim(0).webhooksSettled();
    // B, on the second replica: a 30 s run, followed from its start, read every 20 s while push is
    // healthy (at 0, 20 and 40 s: 10 s after its end, were nothing to change that).
    const b = follow(second, sim(0), "push-4", await begin(second, "push-4", 1500), 120);
    sim(0).injectWebhookFault({ kind: "drop", times: 2 });
    // A, on the first: an 8 s run whose delivery is lost ends by that replica's slow poll (at 20 s),
    // which counts a miss 3 s later (the grace for a late delivery) and tells the other replica.
    const a = await run(first, sim(0), "push-0", 60);
    const missFoundBy = Date.now() + 3500;
    expect(a.outcome).toBe("done");
    expect(a.lagMs).toBeGreaterThan(1000);
    const bDone = await b;
    expect(bDone.outcome).toBe("done");
    // B's run ended after that, its delivery lost too: the second replica read it within about one
    // normal interval (1 s), not at its next slow read (up to 20 s after the end).
    expect(Date.now() - bDone.lagMs).toBeGreaterThan(missFoundBy);
    expect(bDone.lagMs).toBeLessThan(3000);
    const dropped = sim(0)
      .webhookDeliveries()
      .filter((d) => d.body.event === "agent.prompt.finished");
    expect(dropped.slice(-2).map((d) => d.attempts)).toEqual([
      [expect.objectContaining({ fault: "drop" })],
      [expect.objectContaining({ fault: "drop" })],
    ]);
  }, 180_000);

  it("never touches a webhook the account already had", async () => {
    const after = await fetch(`${sandbox.urls.build}${API}/webhooks`, { headers: { "api-key": sandbox.keys.build } });
    const hooks = ((await after.json()) as { data: { webhooks: Array<Record<string, unknown>> } }).data.webhooks;
    // The credit-cap webhook the user had before the first wait is there as it was; the other is the server's.
    expect(hooks.find((w) => w.event === "project.credit_limit.reached")).toMatchObject({ id: usersHook, ...USERS });
    expect(hooks.find((w) => w.event === "agent.prompt.finished")?.url).toMatch(/\/hooks\/build\//);
    const logs = cluster.replicas.map((r) => r.output()).join("\n");
    expect(logs).toMatch(/already has a webhook for project\.credit_limit\.reached that is not this server's/);
    expect(logs).not.toMatch(/already has a webhook for agent\.prompt\.finished/);
  });
});
