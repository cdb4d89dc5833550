// What the spend ledger (docs/security.md) costs per paid call, on Redis: one Redis, the sandbox,
// two replicas of the private build called directly (no nginx), r1 with the ledger (the default
// window) and r2 without (MCP_REPEAT_WINDOW_SECONDS=0), BUILD_CONFIRM_SPEND=never. Blocks of
// `build_write_file` (0.1 credit; new content each call, so every call is a first call; creating
// projects is rate-limited to 30 a minute) alternate r1 r2 r2 r1, then blocks of
// `drones_list_drones` (free) alike. Per call: Redis commands executed (INFO stats
// total_commands_processed on a connection of ours, each INFO counting itself once, the idle rate
// measured before and after subtracted), the replica's own round trips (/healthz redisRoundTrips)
// and its CPU (/proc). The ledger's cost is r1 - r2.
//
//   node bench/ledger-cost.mjs [--quick] [--cli dist/cli.js]   (needs a build: npm run build; redis-server)
//   node bench/run.mjs --only ledger   (the same, on the run's own build: row 7b)
import { Pool } from "undici";
import { clusterPrerequisites, startCluster } from "../scripts/cluster.mjs";
import { CLI, cpuMs, modernRequest, round, sleep, summarize, useCli } from "./lib.mjs";

export async function ledgerCost({ log = () => undefined, quick = false } = {}) {
  const missing = clusterPrerequisites({ cli: CLI });
  if (!missing.ok) {
    log(`ledger: skipped: ${missing.why}`);
    return { skipped: missing.why };
  }
  // The sandbox starts with 500 credits and a write costs 0.1.
  const block = quick ? 50 : 200;
  const blocks = 4;
  const quietMs = quick ? 2000 : 4000;
  const cluster = await startCluster({
    cli: CLI,
    replicas: 2,
    nginx: false,
    logLevel: "warn",
    args: ["--toolsets", "all"],
    env: { BUILD_CONFIRM_SPEND: "never" },
    replicaEnv: (_id, index) => (index === 1 ? { MCP_REPEAT_WINDOW_SECONDS: "0" } : {}),
  });
  const conn = cluster.redis.connection();
  const pools = cluster.replicas.map((r) => new Pool(new URL(r.url).origin, { connections: 1 }));
  try {
    const commands = async () => Number(/total_commands_processed:(\d+)/.exec(await conn.send("INFO", "stats"))[1]);
    const roundTrips = async (i) => (await cluster.replicas[i].healthz()).body?.redisRoundTrips;
    let seq = 0;
    const call = async (i, name, args) => {
      const { headers, body } = modernRequest("tools/call", { name, arguments: args });
      const res = await pools[i].request({
        path: new URL(cluster.replicas[i].url).pathname,
        method: "POST",
        headers,
        body,
      });
      const text = await res.body.text();
      if (res.statusCode !== 200 || !text.includes('"result"') || text.includes('"isError":true'))
        throw new Error(`${name} on r${i + 1}: HTTP ${res.statusCode}: ${text.slice(0, 300)}`);
    };
    const paid = (i) =>
      call(i, "build_write_file", { projectId: "booking-app", path: "bench/ledger.txt", content: `write ${++seq}` });
    const free = (i) => call(i, "drones_list_drones", {});
    // Idle commands per ms (leases, scans): read twice over quietMs.
    const idle = async () => {
      const a = await commands();
      const t = performance.now();
      await sleep(quietMs);
      return ((await commands()) - a - 1) / (performance.now() - t);
    };
    const measure = async (i, one) => {
      const [c0, r0, cpu0, t0] = [
        await commands(),
        await roundTrips(i),
        cpuMs(cluster.replicas[i].pid),
        performance.now(),
      ];
      for (let k = 0; k < block; k++) await one(i);
      const [c1, r1, cpu1, t1] = [
        await commands(),
        await roundTrips(i),
        cpuMs(cluster.replicas[i].pid),
        performance.now(),
      ];
      // The first INFO counts itself (and the healthz read touches no Redis).
      return { commands: c1 - c0 - 1, ms: t1 - t0, roundTrips: r1 - r0, cpuMs: cpu1 - cpu0 };
    };
    for (const i of [0, 1]) for (let k = 0; k < 10; k++) await paid(i);
    for (const i of [0, 1]) for (let k = 0; k < 20; k++) await free(i);
    const idleBefore = await idle();
    const raw = { paid: [[], []], free: [[], []] };
    for (let b = 0; b < blocks; b++) {
      for (const i of b % 2 ? [1, 0] : [0, 1]) raw.paid[i].push(await measure(i, paid));
      log(`ledger: paid block ${b + 1}/${blocks}`);
    }
    for (let b = 0; b < blocks; b++) for (const i of b % 2 ? [1, 0] : [0, 1]) raw.free[i].push(await measure(i, free));
    const idlePerMs = (idleBefore + (await idle())) / 2;
    const per = (list) => ({
      redisCommands: round(summarize(list.map((m) => (m.commands - idlePerMs * m.ms) / block)).median, 3),
      roundTrips: round(summarize(list.map((m) => m.roundTrips / block)).median, 3),
      cpuMs: round(summarize(list.map((m) => m.cpuMs / block)).median, 3),
    });
    const on = per(raw.paid[0]);
    const off = per(raw.paid[1]);
    const result = {
      block,
      blocks,
      idleCommandsPerSecond: round(idlePerMs * 1000, 2),
      paid: { ledger: on, noLedger: off },
      ledgerPerPaidCall: {
        redisCommands: round(on.redisCommands - off.redisCommands, 3),
        roundTrips: round(on.roundTrips - off.roundTrips, 3),
        cpuMs: round(on.cpuMs - off.cpuMs, 3),
      },
      free: { ledger: per(raw.free[0]), noLedger: per(raw.free[1]) },
    };
    log(
      `ledger: per paid call ${result.ledgerPerPaidCall.redisCommands} Redis commands, ` +
        `${result.ledgerPerPaidCall.cpuMs} ms CPU; per free call ${result.free.ledger.redisCommands}`,
    );
    return result;
  } finally {
    conn.close();
    await Promise.all(pools.map((p) => p.close().catch(() => undefined)));
    await cluster.stop().catch(() => undefined);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  if (process.argv.includes("--cli")) useCli(process.argv[process.argv.indexOf("--cli") + 1]);
  const r = await ledgerCost({ log: (l) => console.error(l), quick: process.argv.includes("--quick") });
  console.log(JSON.stringify(r, null, 2));
}
