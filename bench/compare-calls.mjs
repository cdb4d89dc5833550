#!/usr/bin/env node
// Row 3 for two builds side by side: the direct GET, the SDK's minimal-server floor, and
// `drones_get_drone` over stdio through a "before" build and this one (dist/), all against one
// sandbox of this process, interleaved in blocks (the order flips every block) so that both builds
// share the machine's drift. For a change to the call path on a shared, noisy machine. Besides the
// wall times it reads each server child's CPU per call from /proc (steadier under load).
//
//   node scripts/build.mjs --outdir /tmp/before/dist      (on the old commit, or in another worktree)
//   node scripts/build.mjs && node bench/compare-calls.mjs --before /tmp/before/dist [--calls 2000]
import { join, resolve } from "node:path";
import { Pool } from "undici";
import { stdioClient, twoHopEnv } from "./call-overhead.mjs";
import { cpuMs, loadAverage, loadSandbox, ROOT, round, sandboxEnv, summarize } from "./lib.mjs";

const argv = process.argv.slice(2);
const opt = (name, fallback) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : fallback);
const before = opt("--before");
if (!before) throw new Error("--before <dir with a built cli.js> is required");
const after = resolve(opt("--after", join(ROOT, "dist")));
const calls = Number(opt("--calls", 2000));
const block = 100;
const warmup = Number(opt("--warmup", 300));

const { startSandbox, defaultTimeScale } = await loadSandbox();
const sandbox = await startSandbox({ timeScale: defaultTimeScale });
const origin = new URL(sandbox.urls.drones).origin;
const prefix = new URL(sandbox.urls.drones).pathname.replace(/\/+$/, "");
const auth = { authorization: `Bearer ${sandbox.keys.drones}`, accept: "application/json" };
const pool = new Pool(origin, { connections: 4 });
const list = await pool.request({ path: `${prefix}/api/drones`, method: "GET", headers: auth });
const droneId = (await list.body.json()).data[0]._id;

const servers = {
  before: await stdioClient([join(resolve(before), "cli.js")], sandboxEnv(sandbox)),
  after: await stdioClient([join(after, "cli.js")], sandboxEnv(sandbox)),
  mcpFloor: await stdioClient([join(ROOT, "bench/minimal-server.mjs")], { PATH: process.env.PATH ?? "" }),
  twoHop: await stdioClient([join(ROOT, "bench/two-hop-server.mjs")], twoHopEnv(sandbox)),
};
const errors = { direct: 0, mcpFloor: 0, twoHop: 0, before: 0, after: 0 };
const getDrone = (id) => async () => {
  const r = await servers[id].client.callTool({ name: "drones_get_drone", arguments: { id: droneId } });
  if (r.isError || r.structuredContent?._id !== droneId) errors[id]++;
};
const paths = {
  direct: async () => {
    const res = await pool.request({
      path: `${prefix}/api/drones/${encodeURIComponent(droneId)}`,
      method: "GET",
      headers: auth,
    });
    const body = await res.body.json();
    if (res.statusCode !== 200 || !body.ok) errors.direct++;
  },
  mcpFloor: async () => {
    const r = await servers.mcpFloor.client.callTool({ name: "echo", arguments: { text: droneId } });
    if (r.isError) errors.mcpFloor++;
  },
  twoHop: async () => {
    const r = await servers.twoHop.client.callTool({ name: "get", arguments: { id: droneId } });
    if (r.isError) errors.twoHop++;
  },
  before: getDrone("before"),
  after: getDrone("after"),
};

const load0 = loadAverage();
for (const fn of Object.values(paths)) for (let i = 0; i < warmup; i++) await fn();
for (const k of Object.keys(errors)) errors[k] = 0;
const ids = Object.keys(paths);
const samples = Object.fromEntries(ids.map((k) => [k, []]));
const cpu = Object.fromEntries(ids.map((k) => [k, 0]));
for (let b = 0; b < calls / block; b++) {
  for (const id of b % 2 ? [...ids].reverse() : ids) {
    const pid = servers[id]?.pid;
    const c0 = pid ? cpuMs(pid) : 0;
    for (let i = 0; i < block; i++) {
      const t0 = performance.now();
      await paths[id]();
      samples[id].push(performance.now() - t0);
    }
    if (pid) cpu[id] += cpuMs(pid) - c0;
  }
  if ((b + 1) % 5 === 0) process.stderr.write(`${(b + 1) * block}/${calls} calls per path\n`);
}
const load1 = loadAverage();
for (const s of Object.values(servers)) await s.client.close();
await pool.close();
await sandbox.close();

const stats = Object.fromEntries(ids.map((id) => [id, summarize(samples[id])]));
const direct = stats.direct.median;
const floor = stats.mcpFloor.median;
const rows = ids.map((id) => ({
  path: id,
  median: round(stats[id].median, 3),
  p99: round(stats[id].p99, 3),
  added: id === "direct" ? "" : round(stats[id].median - direct, 3),
  "added / floor": id === "direct" || id === "mcpFloor" ? "" : round((stats[id].median - direct) / floor, 2),
  "server cpu ms/call": servers[id]?.pid ? round(cpu[id] / calls, 3) : "",
  errors: errors[id],
}));
console.log(`${calls} calls per path, blocks of ${block}; load average ${load0} -> ${load1}`);
console.table(rows);
