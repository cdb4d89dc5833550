// Issue 31: push against poll, in one run. Two HTTP servers at the same BUILD_POLL_INTERVAL_MS on
// two accounts of one sandbox (this process): one with BUILD_WEBHOOKS=on behind a TLS terminator
// made here (openssl), which the sandbox alone trusts and delivers agent.prompt.finished to; one
// polling. The same batch of concurrent agent runs on each: how long after a run's end its wait
// answers, and how many agent-status reads each wait cost (the starts' reads are not counted).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { makeCert, tlsTerminator } from "../scripts/tls.mjs";
import { CLI, loadSandbox, sandboxEnv, spawnUntil, stopChild, summarize } from "./lib.mjs";

const STATUS_ROUTE = "GET /api/v1/vcaas/projects/:projectId/agent/status";
const TIME_SCALE = 3000;

export async function push({ waits = 10, intervalMs = 2000, runSeconds = 20, log }) {
  const { startSandbox } = await loadSandbox();
  const cert = makeCert();
  const sandbox = await startSandbox({
    timeScale: TIME_SCALE,
    accounts: 2,
    build: { webhookCa: cert.cert, detailsCacheMs: 0, startLagMs: 0, runBudgetMinutes: Number.POSITIVE_INFINITY },
  });
  const tls = await tlsTerminator(cert);
  const servers = [];
  const clients = [];
  const serve = async (n, extra) => {
    const env = sandboxEnv(sandbox, {
      BUILD_API_KEY: sandbox.accounts.build[n].key,
      BUILD_CONFIRM_SPEND: "never",
      BUILD_POLL_INTERVAL_MS: String(intervalMs),
      MCP_STATE_DIR: cert.dir,
      LOG_LEVEL: "info",
      ...extra,
    });
    const s = await spawnUntil([CLI, "--transport", "http", "--port", "0"], { env, ready: /ready on (http:\S+\/mcp)/ });
    servers.push(s.child);
    return s.match[1];
  };
  const connect = async (url) => {
    const client = new Client({ name: "switchboard-bench", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    clients.push(client);
    return client;
  };
  const call = async (client, name, args) => {
    const r = await client.callTool({ name, arguments: args }, undefined, { timeout: 300_000 });
    if (r.isError) throw new Error(`${name}: ${JSON.stringify(r.content).slice(0, 300)}`);
    return r.structuredContent;
  };
  let prompts = 0;
  const batch = async (url, n, prefix) => {
    const sim = sandbox.accounts.build[n].simulator;
    const list = await Promise.all(Array.from({ length: waits }, () => connect(url)));
    for (let i = 0; i < waits; i++) await call(list[0], "build_create_project", { projectId: `${prefix}-${i}` });
    // Run lengths spread over one interval: an end falls anywhere between two polls, as in real use.
    const minutes = (i) => ((runSeconds * 1000 + (i * intervalMs) / waits) * TIME_SCALE) / 60_000;
    const since = await Promise.all(
      list.map(async (c, i) => {
        const prompt = `Bench page ${++prompts} [minutes=${minutes(i)}]`;
        return (await call(c, "build_start_agent", { projectId: `${prefix}-${i}`, prompt })).startedAt;
      }),
    );
    const before = sim.router.count(STATUS_ROUTE);
    const lags = await Promise.all(
      list.map(async (c, i) => {
        const projectId = `${prefix}-${i}`;
        const w = await call(c, "build_wait", { projectId, until: "agent", since: since[i], timeoutSeconds: 240 });
        if (w.outcome !== "done") throw new Error(`${projectId}: ${w.outcome}`);
        const answeredAt = Date.now();
        const endedAt = sim.project(projectId).run.endedAt;
        return answeredAt - (Date.now() - (sim.simulatedNow() - endedAt) / TIME_SCALE);
      }),
    );
    return { waits, lagMs: summarize(lags), getsPerWait: (sim.router.count(STATUS_ROUTE) - before) / waits };
  };

  try {
    const pushUrl = await serve(0, {
      BUILD_WEBHOOKS: "on",
      MCP_PUBLIC_URL: `https://localhost:${tls.port}/mcp`,
      MCP_STATE_KEY: "bench-webhooks-state-key-0123456789abcdef",
    });
    tls.target = new URL(pushUrl);
    const pollUrl = await serve(1, {});
    // One short run first: the first wait subscribes the account and its delivery turns push on.
    const warm = await connect(pushUrl);
    await call(warm, "build_create_project", { projectId: "bench-warm" });
    const started = await call(warm, "build_start_agent", { projectId: "bench-warm", prompt: "Warm up [minutes=30]" });
    await call(warm, "build_wait", { projectId: "bench-warm", until: "agent", since: started.startedAt });
    log(`push vs poll: ${waits} concurrent ${runSeconds} s runs each, BUILD_POLL_INTERVAL_MS=${intervalMs}...`);
    const [pushed, polled] = await Promise.all([batch(pushUrl, 0, "bench-push"), batch(pollUrl, 1, "bench-poll")]);
    log(
      `push: median ${Math.round(pushed.lagMs.median)} ms after the end, ${pushed.getsPerWait} GETs per wait; ` +
        `poll: ${Math.round(polled.lagMs.median)} ms, ${polled.getsPerWait}`,
    );
    return {
      intervalMs,
      runSeconds,
      push: pushed,
      poll: polled,
      goals: {
        latency: {
          text: "push: a wait answers within 1 s of the run's end (median)",
          value: pushed.lagMs.median,
          met: pushed.lagMs.median < 1000,
        },
        requests: {
          text: "push: at least 4 x fewer status reads per wait than polling at the same interval",
          value: polled.getsPerWait / pushed.getsPerWait,
          met: pushed.getsPerWait * 4 <= polled.getsPerWait,
        },
      },
    };
  } finally {
    for (const c of clients) await c.close().catch(() => undefined);
    for (const child of servers) await stopChild(child);
    await tls.close();
    await sandbox.close();
  }
}
