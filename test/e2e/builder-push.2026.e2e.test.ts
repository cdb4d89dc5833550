// Issue 31: with BUILD_WEBHOOKS=on the sandbox delivers agent.prompt.finished over real HTTPS (a TLS
// terminator made at test time, whose certificate only the sandbox trusts) and a wait ends within a
// second of the run's end, with far fewer upstream reads than polling. A dropped delivery still ends
// the wait by polling, a forged one ends nothing, and an account's own webhook is never touched.
import { LOG_LEVEL_META_KEY, type Client } from "@modelcontextprotocol/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Sandbox } from "../../src/sandbox/index.js";
import type { BuildSimulator } from "../../src/sandbox/simulators/builder/index.js";
import {
  call,
  connectHttp,
  ok,
  sandboxEnv,
  spawnHttpServer,
  testSandbox,
  until,
  type HttpServerProcess,
} from "../harness.js";
import { Sealer } from "../../src/core/base/seal.js";
import { hookAddress } from "../../src/core/http/hooks.js";
import { WEBHOOK_EVENTS } from "../../src/services/builder/api/webhooks.js";
import { makeCert, tlsTerminator, type TestCert, type TlsTerminator } from "../../scripts/tls.mjs";
import { freePort } from "../../scripts/cluster.mjs";

const API = "/api/v1/vcaas";
const STATUS = `GET ${API}/projects/:projectId/agent/status`;
const TIME_SCALE = 3000;
const STATE_KEY = "webhook-test-state-key-0123456789abcdef";

interface Server {
  sim: BuildSimulator;
  process: HttpServerProcess;
  client: Client;
  tls?: TlsTerminator;
}

interface Waited {
  outcome: string;
  polls: number;
  elapsedSeconds: number;
}

describe("build webhooks end waits (BUILD_WEBHOOKS=on)", () => {
  let sandbox: Sandbox;
  let cert: TestCert;
  const servers: Server[] = [];
  let runs = 0;

  /** A server on account `n` of the sandbox; with `push`, behind its own TLS terminator. */
  async function start(n: number, push: boolean, env: Record<string, string> = {}): Promise<Server> {
    const account = sandbox.accounts.build[n];
    const tls = push ? await tlsTerminator(cert) : undefined;
    const process = await spawnHttpServer(
      sandboxEnv(sandbox, {
        BUILD_API_KEY: account.key,
        BUILD_CONFIRM_SPEND: "never",
        BUILD_POLL_INTERVAL_MS: "2000",
        LOG_LEVEL: "info",
        ...(push
          ? {
              BUILD_WEBHOOKS: "on",
              MCP_PUBLIC_URL: `https://localhost:${tls!.port}/mcp`,
              MCP_STATE_KEY: STATE_KEY,
            }
          : {}),
        ...env,
      }),
    );
    if (tls) tls.target = new URL(process.url);
    const server = { sim: account.simulator, process, client: await connectHttp(process.url), tls };
    servers.push(server);
    return server;
  }

  /** Starts a run of `minutes` simulated minutes and waits for it; returns the wait and timings. */
  async function run(s: Server, projectId: string, minutes: number, timeoutSeconds = 60) {
    const started = await ok<{ startedAt: string }>(s.client, "build_start_agent", {
      projectId,
      // A new prompt each time: the same call again would be answered as a repeat, spending nothing.
      prompt: `Add page ${++runs} [minutes=${minutes}]`,
    });
    const before = s.sim.router.count(STATUS);
    const waited = await ok<Waited>(s.client, "build_wait", {
      projectId,
      until: "agent",
      since: started.startedAt,
      timeoutSeconds,
    });
    const answeredAt = Date.now();
    const endedAt = s.sim.project(projectId)!.run!.endedAt;
    // The run's end in real time: the simulated clock runs TIME_SCALE times faster from the same origin.
    const realEnd = endedAt === undefined ? undefined : Date.now() - (s.sim.simulatedNow() - endedAt) / TIME_SCALE;
    return {
      waited,
      lagMs: realEnd === undefined ? undefined : answeredAt - realEnd,
      gets: s.sim.router.count(STATUS) - before,
    };
  }

  beforeAll(async () => {
    cert = makeCert();
    sandbox = await testSandbox({ accounts: 5, build: { webhookCa: cert.cert } });
  });
  afterAll(async () => {
    for (const s of servers) {
      await s.client.close().catch(() => undefined);
      await s.process.stop();
      await s.tls?.close();
    }
    await sandbox?.close();
  });

  it("refuses to start without an https MCP_PUBLIC_URL, naming both settings", async () => {
    const failed = spawnHttpServer(
      sandboxEnv(sandbox, { BUILD_WEBHOOKS: "on", MCP_STATE_KEY: STATE_KEY, MCP_PUBLIC_URL: "http://127.0.0.1:9/mcp" }),
    );
    await expect(failed).rejects.toThrow(/BUILD_WEBHOOKS=on needs MCP_PUBLIC_URL with https:\/\//);
  });

  it("ends a wait within a second of the run's end, with far fewer reads than polling", async () => {
    const [push, poll] = await Promise.all([start(0, true), start(1, false)]);
    for (const s of [push, poll]) await ok(s.client, "build_create_project", { projectId: "push-a" });
    // The first wait subscribes (in the background); its run's delivery shows push works for this
    // account. The run goes on until both events are subscribed, then is stopped: a fixed-length run
    // could end before the subscription, under load, and never be delivered.
    const started = await ok<{ startedAt: string }>(push.client, "build_start_agent", {
      projectId: "push-a",
      prompt: `Add page ${++runs} [minutes=100000]`,
    });
    const first = ok<Waited>(push.client, "build_wait", {
      projectId: "push-a",
      until: "agent",
      since: started.startedAt,
      timeoutSeconds: 60,
    });
    await until(
      async () => push.sim.router.count(`PUT ${API}/webhooks`),
      (n) => n >= WEBHOOK_EVENTS.length,
      30_000,
    );
    await ok(push.client, "build_stop_agent", { projectId: "push-a" });
    expect((await first).outcome).toBe("done");
    await push.sim.webhooksSettled();
    const subscribed = push.sim.webhookDeliveries().filter((d) => d.body.event === "agent.prompt.finished");
    expect(subscribed.length).toBe(1);
    expect(subscribed[0].url).toMatch(new RegExp(`^https://localhost:${push.tls!.port}/hooks/build/`));
    expect(subscribed[0].attempts).toEqual([expect.objectContaining({ status: 202 })]);

    // A 16 s run, followed by both servers at once: push answers on the delivery, poll every 2 s.
    const [pushed, polled] = await Promise.all([run(push, "push-a", 800), run(poll, "push-a", 800)]);
    expect(pushed.waited.outcome, JSON.stringify(pushed)).toBe("done");
    expect(polled.waited.outcome).toBe("done");
    expect(pushed.lagMs).toBeLessThan(1000);
    expect(pushed.gets * 4).toBeLessThanOrEqual(polled.gets);
    console.log(
      `push: ${pushed.gets} GETs, answered ${Math.round(pushed.lagMs!)} ms after the end; ` +
        `poll: ${polled.gets} GETs, ${Math.round(polled.lagMs!)} ms`,
    );
  }, 90_000);

  it("a forged delivery ends nothing: the wait goes on until its time is up", async () => {
    const push = servers.find((s) => s.tls)!;
    push.sim.injectWebhookFault({ kind: "forge" });
    // The run ends after ~0.6 s; push is healthy, so polls come every 60 s: only a delivery could end it.
    const forged = await run(push, "push-a", 30, 4);
    expect(forged.waited.outcome).toBe("timed_out");
    await push.sim.webhooksSettled();
    const last = push.sim.webhookDeliveries().at(-1)!;
    expect(last.attempts).toEqual([expect.objectContaining({ fault: "forge", status: 401 })]);
  }, 30_000);

  it("a duplicated delivery does no harm; a late one still ends the wait long before the slow poll", async () => {
    const push = servers.find((s) => s.tls)!;
    push.sim.injectWebhookFault({ kind: "duplicate" });
    const doubled = await run(push, "push-a", 30);
    expect(doubled.waited.outcome).toBe("done");
    await push.sim.webhooksSettled();
    const twice = push.sim.webhookDeliveries().at(-1)!;
    expect(twice.attempts).toEqual([
      expect.objectContaining({ fault: "duplicate", status: 202 }),
      expect.objectContaining({ fault: "duplicate", status: 202 }),
    ]);
    push.sim.injectWebhookFault({ kind: "late", ms: 1500 });
    const late = await run(push, "push-a", 30);
    expect(late.waited.outcome).toBe("done");
    // Polls come every 60 s now: the late delivery is what ended it.
    expect(late.lagMs).toBeGreaterThan(1400);
    expect(late.lagMs).toBeLessThan(5000);
  }, 30_000);

  it("a credit cap reached mid-run reaches the waiter: a log line, progress and a resource update", async () => {
    const push = servers.find((s) => s.tls)!;
    const uri = "build://projects/push-d";
    await ok(push.client, "build_create_project", { projectId: "push-d" });
    await ok(push.client, "build_set_credit_limits", { projectId: "push-d", maxInfrastructureCreditsPerMonth: 1 });
    const updates: string[] = [];
    const logs: string[] = [];
    push.client.setNotificationHandler("notifications/resources/updated", (n) => void updates.push(n.params.uri));
    push.client.setNotificationHandler("notifications/message", (n) => void logs.push(JSON.stringify(n.params)));
    const listening = await push.client.listen({ resourceSubscriptions: [uri] });
    expect(listening.honoredFilter.resourceSubscriptions).toEqual([uri]);
    const details = `GET ${API}/projects/:projectId`;
    const baseline = push.sim.router.count(details);
    await until(
      async () => push.sim.router.count(details),
      (n) => n > baseline,
    );
    // A 30 s run: the project's resource changes once as it starts, then not until it ends.
    const started = await ok<{ startedAt: string }>(push.client, "build_start_agent", {
      projectId: "push-d",
      prompt: `Add page ${++runs} [minutes=1500]`,
    });
    await until(
      async () => updates.length,
      (n) => n >= 1,
    );
    const lines: string[] = [];
    let answered = false;
    const waiting = push.client
      .callTool(
        {
          name: "build_wait",
          arguments: { projectId: "push-d", until: "agent", since: started.startedAt },
          _meta: { [LOG_LEVEL_META_KEY]: "info" as const },
        },
        { onprogress: (p) => void lines.push(p.message ?? ""), timeout: 60_000 },
      )
      .finally(() => {
        answered = true;
      });
    await until(
      async () => lines.length,
      (n) => n >= 1,
    );
    const [updatesBefore, linesBefore, logsBefore] = [updates.length, lines.length, logs.length];
    const reachedAt = Date.now();
    push.sim.chargeInfrastructure("push-d", "email", 1);
    const cap = /Project push-d reached its monthly credit cap \(infrastructure\)/;
    await until(
      async () => [updates.length, lines.slice(linesBefore).join("\n"), logs.slice(logsBefore).join("\n")] as const,
      ([u, l, g]) => u > updatesBefore && cap.test(l) && cap.test(g),
    );
    // Heard while the agent still runs (its end is ~30 s away), well before the next poll could tell.
    expect(Date.now() - reachedAt).toBeLessThan(2000);
    expect(answered).toBe(false);
    expect(push.sim.project("push-d")!.run!.state).toBe("running");
    expect(updates.every((u) => u === uri)).toBe(true);
    await listening.close();
    await ok(push.client, "build_stop_agent", { projectId: "push-d" });
    const ended = await waiting;
    expect(ended.isError, JSON.stringify(ended.content)).toBeFalsy();
  }, 60_000);

  it("a dropped delivery still ends the wait by polling", async () => {
    const push = await start(2, true, { BUILD_POLL_INTERVAL_MS: "500", BUILD_WEBHOOK_POLL_MS: "3000" });
    await ok(push.client, "build_create_project", { projectId: "push-b" });
    expect((await run(push, "push-b", 60)).waited.outcome).toBe("done");
    push.sim.injectWebhookFault({ kind: "drop" });
    const dropped = await run(push, "push-b", 60);
    expect(dropped.waited.outcome).toBe("done");
    const last = push.sim.webhookDeliveries().at(-1)!;
    expect(last.attempts, JSON.stringify(push.sim.webhookDeliveries())).toEqual([
      expect.objectContaining({ fault: "drop" }),
    ]);
    // Ended by a slowed poll (at most 3 s after the end), not by the delivery that never came.
    expect(dropped.lagMs).toBeLessThan(3000 + 1500);
  }, 60_000);

  it("after a lost delivery is found, the tenant's other waits poll at the normal interval at once", async () => {
    const metrics = `127.0.0.1:${await freePort()}`;
    const push = await start(4, true, {
      BUILD_POLL_INTERVAL_MS: "500",
      BUILD_WEBHOOK_POLL_MS: "10000",
      MCP_METRICS_ADDRESS: metrics,
    });
    for (const id of ["miss-a", "miss-b"]) await ok(push.client, "build_create_project", { projectId: id });
    expect((await run(push, "miss-a", 60)).waited.outcome).toBe("done");
    // B: a 16 s run, followed from its start; push is healthy, so its reads are 10 s apart.
    const b = run(push, "miss-b", 800);
    await until(
      async () => push.sim.project("miss-b")?.run?.state,
      (state) => state === "running",
    );
    push.sim.injectWebhookFault({ kind: "drop", times: 2 });
    // A: a short run whose delivery is lost ends by its slow poll; 3 s later the miss is counted.
    const a = await run(push, "miss-a", 30);
    const missFoundBy = Date.now() + 3000;
    expect(a.waited.outcome).toBe("done");
    expect(a.lagMs).toBeGreaterThan(1000);
    const bDone = await b;
    expect(bDone.waited.outcome).toBe("done");
    // B's run ended after that, and its delivery was lost too: the poll ended it within about one
    // normal interval, not at its next slow read (about 4 s after its end).
    expect(Date.now() - bDone.lagMs!).toBeGreaterThan(missFoundBy);
    expect(bDone.lagMs).toBeLessThan(2000);
    // The misses are counted (switchboard.webhooks, outcome missed), beside the warm-up's match.
    const counted = async (outcome: string) => {
      const text = await (await fetch(`http://${metrics}/metrics`)).text();
      const line = new RegExp(`^switchboard_webhooks_total\\{[^}]*outcome="${outcome}"[^}]*\\} (\\d+)`, "m");
      return Number(line.exec(text)?.[1] ?? 0);
    };
    expect(await counted("missed")).toBeGreaterThanOrEqual(1);
    expect(await counted("matched")).toBeGreaterThanOrEqual(1);
    const lost = push.sim.webhookDeliveries().filter((d) => d.body.event === "agent.prompt.finished");
    expect(lost.slice(-2).map((d) => d.attempts)).toEqual([
      [expect.objectContaining({ fault: "drop" })],
      [expect.objectContaining({ fault: "drop" })],
    ]);
  }, 60_000);

  it("never touches a webhook the account already has, and keeps polling for it", async () => {
    const account = sandbox.accounts.build[3];
    const mine = { url: "https://hooks.example.com/mine", event: "agent.prompt.finished", headers: { "x-mine": "1" } };
    const put = await fetch(`${sandbox.urls.build}${API}/webhooks`, {
      method: "PUT",
      headers: { "api-key": account.key, "content-type": "application/json" },
      body: JSON.stringify(mine),
    });
    expect(put.status).toBe(200);
    const push = await start(3, true);
    await ok(push.client, "build_create_project", { projectId: "push-c" });
    const waited = await run(push, "push-c", 60);
    expect(waited.waited.outcome).toBe("done");
    const listed = await ok<{ webhooks: Array<Record<string, unknown>> }>(push.client, "build_list_webhooks");
    const agentHooks = listed.webhooks.filter((w) => w.event === "agent.prompt.finished");
    expect(agentHooks).toEqual([expect.objectContaining({ url: mine.url, headerNames: ["x-mine"] })]);
    const upstream = account.simulator.webhookDeliveries();
    expect(upstream.every((d) => d.url === mine.url)).toBe(true);
    // The credit-cap event had no webhook: that one is the server's, and its secret never shows.
    const ours = listed.webhooks.find((w) => w.event === "project.credit_limit.reached");
    expect(String(ours?.url)).toMatch(/\/hooks\/build\//);
    const { secret } = hookAddress(new Sealer(STATE_KEY).hookKey, "build", "local");
    expect(JSON.stringify(listed) + push.process.stderr()).not.toContain(secret);
    expect(push.process.stderr()).toMatch(
      /already has a webhook for agent\.prompt\.finished that is not this server's/,
    );
    const status = await call(push.client, "build_get_agent_status", { projectId: "push-c" });
    expect(status.isError).toBeFalsy();

    // The credit-cap webhook is the server's: a cap reached during a run reaches the waiting caller.
    await ok(push.client, "build_set_credit_limits", { projectId: "push-c", maxInfrastructureCreditsPerMonth: 1 });
    const started = await ok<{ startedAt: string }>(push.client, "build_start_agent", {
      projectId: "push-c",
      prompt: `Add page ${++runs} [minutes=150]`,
    });
    const lines: string[] = [];
    const waiting = push.client.callTool(
      { name: "build_wait", arguments: { projectId: "push-c", until: "agent", since: started.startedAt } },
      { onprogress: (p) => lines.push(p.message ?? "") },
    );
    await until(
      async () => lines.length,
      (n) => n >= 1,
    );
    account.simulator.chargeInfrastructure("push-c", "email", 1);
    const ended = await waiting;
    expect(ended.isError).toBeFalsy();
    expect(lines.join("\n")).toMatch(/Project push-c reached its monthly credit cap \(infrastructure\)/);
  }, 60_000);
});
