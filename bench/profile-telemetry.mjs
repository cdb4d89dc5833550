#!/usr/bin/env node
// Where telemetry's cost per tools/call goes (bench row "telemetry", docs/observability.md): builds
// the server unminified (module paths stay as comments in the chunks), runs it over HTTP against
// the sandbox with telemetry off and on (traces at 100 % and metrics, as bench/telemetry-cost.mjs
// sets them), each under --cpu-prof, makes the same calls to both, and prints each one's profiled
// self time per call by module and the difference: what "on" adds, module by module.
//
//   node bench/profile-telemetry.mjs [--node 24] [--calls 3000] [--functions] [--telemetry] [--rows 40]
//
// The V8 profiler samples wall-clock ticks of the main thread (a descheduled process's wait is
// charged to where it was), so run it on a quiet machine; the shares hold better than the totals.
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { freePort } from "../scripts/cluster.mjs";
import { bundleServer } from "../scripts/build.mjs";
import { nodeBinary } from "../scripts/node-version.mjs";
import { twoHopEnv } from "./call-overhead.mjs";
import { chunkModule, loadSandbox, ROOT, sandboxEnv, spawnUntil } from "./lib.mjs";

const argv = process.argv.slice(2);
const opt = (name, fallback) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : fallback);
const node = nodeBinary(Number(opt("--node", process.versions.node.split(".")[0])));
const calls = Number(opt("--calls", 3000));
const byFunction = argv.includes("--functions");

const tmp = mkdtempSync(join(tmpdir(), "switchboard-profile-"));
const dist = join(tmp, "pkg", "dist");
await bundleServer({ outdir: dist, minify: false });
cpSync(join(ROOT, "dist", "views"), join(dist, "views"), { recursive: true });
writeFileSync(join(tmp, "pkg", "package.json"), readFileSync(join(ROOT, "package.json")));

const sink = createServer((req, res) => {
  req.resume();
  req.on("end", () => res.writeHead(200, { "content-type": "application/json" }).end("{}"));
});
await new Promise((r) => sink.listen(0, "127.0.0.1", r));
const endpoint = `http://127.0.0.1:${sink.address().port}`;
const switchboard = (extra) => ({ args: [join(dist, "cli.js"), "--transport", "http", "--port", "0"], extra });
const variants = {
  off: switchboard({}),
  on: switchboard({
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    OTEL_TRACES_SAMPLER: "always_on",
    OTEL_BSP_SCHEDULE_DELAY: "1000",
    OTEL_METRIC_EXPORT_INTERVAL: "5000",
    MCP_METRICS_ADDRESS: `127.0.0.1:${await freePort()}`,
  }),
  // The official SDK's two spans alone (bench/otel-peer-server.mjs): the floor for what "on" sends.
  peerOn: {
    // It has no SIGINT handler of its own: one is preloaded so that the profile is written.
    args: [
      "--import",
      'data:text/javascript,process.on("SIGINT",()=>process.exit())',
      join(ROOT, "bench/otel-peer-server.mjs"),
    ],
    extra: { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint },
    peer: true,
  },
};

const { startSandbox, defaultTimeScale } = await loadSandbox();
const sandbox = await startSandbox({ timeScale: defaultTimeScale });
const servers = {};
try {
  for (const [name, { args, extra, peer }] of Object.entries(variants)) {
    const dir = mkdtempSync(join(tmp, `prof-${name}-`));
    const env = peer ? { ...twoHopEnv(sandbox), ...extra } : sandboxEnv(sandbox, { LOG_LEVEL: "info", ...extra });
    const { child, match } = await spawnUntil(
      ["--cpu-prof", "--cpu-prof-dir", dir, "--cpu-prof-interval", "100", ...args],
      { env, ready: /ready on (http:\/\/[^\s"]+\/mcp)/, node },
    );
    const url = match[1];
    const client = new Client({ name: "switchboard-bench", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    const id = peer
      ? servers.off.call.arguments.id
      : JSON.stringify((await client.callTool({ name: "drones_list_drones", arguments: {} })).structuredContent).match(
          /"_id":"([^"]+)"/,
        )?.[1];
    servers[name] = { child, dir, client, call: { name: peer ? "get" : "drones_get_drone", arguments: { id } } };
  }
  for (const s of Object.values(servers)) for (let i = 0; i < 500; i++) await s.client.callTool(s.call);
  // Interleaved rounds, so that both see the same load; only these calls' samples count.
  for (const s of Object.values(servers)) s.windows = [];
  for (let round = 0; round < 10; round++) {
    for (const s of Object.values(servers)) {
      const from = Number(process.hrtime.bigint() / 1000n);
      for (let i = 0; i < calls / 10; i++) await s.client.callTool(s.call);
      s.windows.push([from, Number(process.hrtime.bigint() / 1000n)]);
    }
  }
  for (const s of Object.values(servers)) {
    await s.client.close();
    const exited = new Promise((r) => s.child.once("exit", r));
    s.child.kill("SIGINT"); // the profile is written on the way out
    await exited;
  }
} finally {
  await sandbox.close();
  sink.close();
}

/** `node_modules/@opentelemetry/x/build/src/a/b.js` as `@opentelemetry/x a/b.js`; other packages by name. */
function packageFile(path) {
  if (path.startsWith("node_modules/@opentelemetry/"))
    return path.replace(/^node_modules\/(@[^/]+\/[^/]+)\/(?:build\/(?:\w+\/)?(?:src\/)?)?(.*)$/, "$1 $2");
  return path.replace(/^node_modules\/(@[^/]+\/[^/]+|[^/]+).*/, "$1");
}

/** Self time (µs) by module within the windows: each chunk line `// src/x.ts` starts that module's code. */
function byModule({ dir, windows }) {
  const file = join(
    dir,
    readdirSync(dir).find((f) => f.endsWith(".cpuprofile")),
  );
  const profile = JSON.parse(readFileSync(file, "utf8"));
  const moduleOf = (url, line) => {
    const path = chunkModule(url, line);
    return path.startsWith("node_modules/") ? packageFile(path) : path;
  };
  const within = (at) => windows.some(([a, b]) => at >= a && at <= b);
  const ticks = new Map();
  let at = profile.startTime;
  profile.samples.forEach((id, i) => {
    at += profile.timeDeltas[i] ?? 0;
    if (within(at)) ticks.set(id, (ticks.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  const self = new Map();
  for (const n of profile.nodes) {
    const us = ticks.get(n.id);
    if (!us) continue;
    const { url, functionName, lineNumber } = n.callFrame;
    const fn = byFunction ? ` ${functionName || "(anonymous)"}:${lineNumber}` : "";
    const key =
      url.startsWith("file://") && url.includes(dist)
        ? `${moduleOf(url, lineNumber)}${fn}`
        : url.includes("/node_modules/")
          ? `${packageFile(url.slice(url.lastIndexOf("/node_modules/") + 1))}${fn}`
          : url
            ? `node ${url.replace(/^node:/, "")}`
            : functionName || "(anonymous)";
    self.set(key, (self.get(key) ?? 0) + us);
  }
  return self;
}

const [off, on, peer] = ["off", "on", "peerOn"].map((name) => byModule(servers[name]));
rmSync(tmp, { recursive: true, force: true });
const perCall = (m, k) => (m.get(k) ?? 0) / calls;
const IDLE = new Set(["(idle)", "(program)"]);
/** Profiled on-CPU µs per call: every sample but the idle ones. */
const busy = (m) => [...m].reduce((a, [k, v]) => a + (IDLE.has(k) ? 0 : v), 0) / calls;
/** Self time in code that runs only with telemetry on: the OTel SDK, core/telemetry, the tracing wrapper. */
const TELEMETRY = /^(@opentelemetry\/|src\/core\/telemetry\/|src\/core\/mcp\/traced\.ts)/;
const own = (m) => [...m].reduce((a, [k, v]) => a + (TELEMETRY.test(k) ? v : 0), 0) / calls;
const f = (x) => x.toFixed(1).padStart(7);
process.stdout.write(
  `${calls} calls each, profiled on-CPU µs per call: off ${f(busy(off))}, on ${f(busy(on))} ` +
    `(added ${f(busy(on) - busy(off))}); in telemetry's own code: on ${f(own(on))} ` +
    `(${((100 * own(on)) / busy(off)).toFixed(1)} % of off), the peer's two SDK spans ${f(own(peer))}\n`,
);
process.stdout.write(`${"off".padStart(7)} ${"on".padStart(7)} ${"added".padStart(7)}  module\n`);
const keys = [...new Set([...off.keys(), ...on.keys()])]
  .map((k) => [k, perCall(on, k) - perCall(off, k)])
  .sort((a, b) => Math.abs(b[1]) - Math.abs(a[1]));
for (const [k, d] of keys.slice(0, Number(opt("--rows", 40))))
  process.stdout.write(`${f(perCall(off, k))} ${f(perCall(on, k))} ${f(d)}  ${k}\n`);
if (argv.includes("--telemetry")) {
  process.stdout.write("\ntelemetry's own code, on vs the peer:\n");
  const tkeys = [...new Set([...on.keys(), ...peer.keys()])].filter((k) => TELEMETRY.test(k));
  for (const k of tkeys.sort((a, b) => perCall(on, b) - perCall(on, a)))
    process.stdout.write(`${f(perCall(on, k))} ${f(perCall(peer, k))}  ${k}\n`);
}
