// Goal 9: a listen flood (issue 18 item 6). One replica on Redis with per-user keys and the sandbox
// (scripts/cluster.mjs, no nginx). A caller offers 1,000 resource URIs in 2026-07-28
// subscriptions/listen streams of 100 (the default MCP_MAX_LISTEN_URIS) and holds the streams open;
// measured over a window: upstream GETs per second (the sandbox's count) and Redis commands per
// second (INFO total_commands_processed, our own INFO reads subtracted, the quiet replica's
// background subtracted), per 1,000 URIs offered. Once without a key, once with one.
// Goal: 0 for the keyless caller (Redis: within the upkeep bursts, an orphan scan of 4 commands every
// MCP_LEASE_MS/2); for the keyed one at most MCP_MAX_SUBSCRIPTIONS_PER_TENANT polls per interval.
import { clusterPrerequisites, startCluster } from "../scripts/cluster.mjs";
import { CLI, modernRequest, sleep } from "./lib.mjs";

const URIS = 1000;
const PER_STREAM = 100;
const INTERVAL_MS = 1000;
const PROJECT_GET = "GET /api/v1/vcaas/projects/:projectId";

export async function listenFlood({ log, quick = false }) {
  const missing = clusterPrerequisites({ cli: CLI });
  if (!missing.ok) return { skipped: missing.why };
  const windowMs = quick ? 3000 : 6000;
  const cluster = await startCluster({
    replicas: 1,
    nginx: false,
    credentials: "caller",
    pollIntervalMs: INTERVAL_MS,
    cli: CLI,
  });
  const conn = cluster.redis.connection();
  const commands = async () => Number(/total_commands_processed:(\d+)/.exec(await conn.send("INFO", "stats"))[1]);
  const gets = async () => (await cluster.sandbox.stats()).services["/build"]?.[PROJECT_GET] ?? 0;
  const health = async () => (await cluster.replicas[0].healthz()).body;
  const measure = async () => {
    const [c0, g0] = [await commands(), await gets()];
    const t0 = performance.now();
    await sleep(windowMs);
    const [c1, g1] = [await commands(), await gets()];
    const seconds = (performance.now() - t0) / 1000;
    // Each INFO counts itself once: the first reading's is inside the window.
    return { redisPerSecond: (c1 - c0 - 1) / seconds, getsPerSecond: (g1 - g0) / seconds, seconds };
  };
  /** Offers URIS in streams of PER_STREAM; the streams stay open until `close`. */
  const flood = async (label, headers) => {
    const controllers = [];
    const statuses = {};
    for (let s = 0; s < URIS / PER_STREAM; s++) {
      const uris = Array.from(
        { length: PER_STREAM },
        (_, i) => `build://projects/${label.replace(/\W+/g, "-")}-${s}-${i}`,
      );
      const { headers: h, body } = modernRequest("subscriptions/listen", {
        notifications: { resourceSubscriptions: uris },
      });
      const controller = new AbortController();
      const res = await fetch(cluster.url, {
        method: "POST",
        headers: { ...h, ...headers },
        body,
        signal: controller.signal,
      });
      statuses[res.status] = (statuses[res.status] ?? 0) + 1;
      if (res.headers.get("content-type")?.includes("event-stream")) {
        // Read the stream while it is open: an unread, unreferenced body may be collected and its connection closed.
        controllers.push(controller);
        void res.text().catch(() => undefined);
      } else await res.text();
    }
    return { statuses, close: () => controllers.forEach((c) => c.abort()) };
  };
  try {
    await sleep(2 * INTERVAL_MS);
    log("listen flood: quiet replica...");
    const quiet = await measure();
    const scenario = async (label, headers) => {
      log(`listen flood: ${URIS} URIs ${label}...`);
      const f = await flood(label, headers);
      await sleep(2 * INTERVAL_MS);
      const m = await measure();
      const pollers = (await health()).pollers;
      f.close();
      await sleep(2 * INTERVAL_MS);
      const per1000 = (x) => (x * 1000) / URIS;
      return {
        streams: f.statuses,
        pollers,
        getsPerSecond: per1000(m.getsPerSecond),
        redisPerSecond: per1000(Math.max(0, m.redisPerSecond - quiet.redisPerSecond)),
        redisRaw: m.redisPerSecond,
      };
    };
    const keyless = await scenario("without a key", {});
    const keyed = await scenario("with a key", { "x-build-api-key": cluster.sandbox.keys.build });
    const cap = 100; // MCP_MAX_SUBSCRIPTIONS_PER_TENANT's default
    const capPerSecond = (cap / (INTERVAL_MS / 1000)) * (1000 / URIS);
    return {
      uris: URIS,
      perStream: PER_STREAM,
      intervalMs: INTERVAL_MS,
      windowMs,
      quiet,
      keyless,
      keyed,
      goals: {
        keyless: {
          text: "listen flood without a key: upstream GETs and Redis commands per second per 1,000 URIs = 0",
          value: keyless,
          met: keyless.getsPerSecond === 0 && keyless.pollers === 0 && keyless.redisPerSecond <= 2,
        },
        keyed: {
          text:
            "listen flood with a key: upstream GETs per second per 1,000 URIs " +
            `<= the per-tenant cap (${cap} subscriptions) per interval`,
          value: keyed,
          met: keyed.getsPerSecond <= capPerSecond * 1.2 && keyed.pollers <= cap,
        },
      },
    };
  } finally {
    conn.close();
    await cluster.stop();
  }
}
