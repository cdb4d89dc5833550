// Telemetry's cost per tools/call (docs/observability.md): three HTTP servers on one sandbox,
// driven in interleaved blocks so that each sees the same machine load. "off": no OTEL_* and no
// MCP_METRICS_ADDRESS (the SDK is not loaded); "disabled": OTEL_SDK_DISABLED=true beside an OTLP
// endpoint (also off: the same code path as "off", a check that off means off); "on": traces
// sampled at 100 % (OTEL_TRACES_SAMPLER=always_on) and metrics, exported over OTLP/HTTP to a sink
// in this process, plus the /metrics listener. Reported: server CPU ms per call, and on/off.
// The peer, in the same blocks: bench/otel-peer-server.mjs, the two-hop floor over HTTP, without
// and with the official SDK sending one SERVER and one CLIENT span per call over OTLP/HTTP: what
// the SDK's spans cost at the least, in µs per call, beside what switchboard-mcp's telemetry adds.
//
//   node bench/telemetry-cost.mjs [--blocks 12] [--block 100] [--processes 1] [--split] [--cli other/dist/cli.js]
// --processes K runs K processes of each variant, blocks interleaved: one process's JIT and memory
// layout move its cost by several %, as much as the goal (off against disabled, the same code, shows it).
// --split adds two variants: spans only and metrics only, to see where "on" spends.
import { createServer } from "node:http";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { join } from "node:path";
import { freePort } from "../scripts/cluster.mjs";
import { twoHopEnv } from "./call-overhead.mjs";
import { CLI, cpuMs, loadSandbox, ROOT, round, sandboxEnv, spawnUntil, stopChild, summarize, useCli } from "./lib.mjs";

export async function telemetryCost({
  sandbox,
  blocks = 12,
  block = 100,
  processes = 1,
  split = false,
  log = () => undefined,
}) {
  let received = 0;
  const sink = createServer((req, res) => {
    req.on("data", (c) => (received += c.length));
    req.on("end", () => res.writeHead(200, { "content-type": "application/json" }).end("{}"));
  });
  await new Promise((r) => sink.listen(0, "127.0.0.1", r));
  const endpoint = `http://127.0.0.1:${sink.address().port}`;
  const traces = {
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    OTEL_TRACES_SAMPLER: "always_on",
    OTEL_BSP_SCHEDULE_DELAY: "1000",
    OTEL_METRIC_EXPORT_INTERVAL: "5000",
  };
  const metricsAddress = async () => ({ MCP_METRICS_ADDRESS: `127.0.0.1:${await freePort()}` });
  // Each variant's environment, made per process (each /metrics listener needs its own port).
  const variants = {
    off: async () => ({}),
    on: async () => ({ ...traces, ...(await metricsAddress()) }),
    disabled: async () => ({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_SDK_DISABLED: "true" }),
  };
  if (split) {
    // Where "on" spends: spans alone (no metric reader), metrics alone (spans made, none exported).
    variants.spansOnly = async () => ({ ...traces, OTEL_METRICS_EXPORTER: "none" });
    variants.metricsOnly = async () => ({ ...traces, OTEL_TRACES_EXPORTER: "none", ...(await metricsAddress()) });
  }
  const peers = { peerOff: {}, peerOn: { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_BSP_SCHEDULE_DELAY: "1000" } };
  const names = [...Object.keys(variants), ...Object.keys(peers)];
  /** servers[name][k]: the k-th process of a variant (a process's own JIT and layout vary its cost by several %). */
  const servers = Object.fromEntries(names.map((n) => [n, []]));
  const ready = /ready on (http:\/\/[^\s"]+\/mcp)/;
  const connect = async (s, call) => {
    const client = new Client({ name: "switchboard-bench", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(s.match[1])));
    return { ...s, client, call: await call(client), cpu: [] };
  };
  try {
    let droneId;
    for (let k = 0; k < processes; k++) {
      for (const [name, env] of Object.entries(variants)) {
        const s = await spawnUntil([CLI, "--transport", "http", "--port", "0"], {
          env: sandboxEnv(sandbox, { LOG_LEVEL: "info", ...(await env()) }),
          ready,
        });
        servers[name].push(
          await connect(s, async (client) => {
            const list = await client.callTool({ name: "drones_list_drones", arguments: {} });
            droneId ??= JSON.stringify(list.structuredContent).match(/"_id":"([^"]+)"/)?.[1];
            return { name: "drones_get_drone", arguments: { id: droneId } };
          }),
        );
      }
      for (const [name, extra] of Object.entries(peers)) {
        const s = await spawnUntil([join(ROOT, "bench/otel-peer-server.mjs")], {
          env: { ...twoHopEnv(sandbox), ...extra },
          ready,
        });
        servers[name].push(await connect(s, async () => ({ name: "get", arguments: { id: droneId } })));
      }
    }
    const all = () => names.flatMap((n) => servers[n]);
    for (const s of all()) for (let i = 0; i < 200; i++) await s.client.callTool(s.call);
    for (let b = 0; b < blocks; b++) {
      for (let k = 0; k < processes; k++)
        for (const name of names) {
          const s = servers[name][k];
          const before = cpuMs(s.child.pid);
          for (let i = 0; i < block; i++) await s.client.callTool(s.call);
          s.cpu.push((cpuMs(s.child.pid) - before) / block);
        }
      log(`telemetry cost: block ${b + 1}/${blocks}`);
    }
    const cpu = (name) => servers[name].flatMap((s) => s.cpu);
    const med = (name) => summarize(cpu(name)).median;
    // Each block's ratio to the block of its baseline run just before it (same process index):
    // load drifts less between the two than over the whole run.
    const paired = (name, base) =>
      round(summarize(servers[name].flatMap((s, k) => s.cpu.map((x, i) => x / servers[base][k].cpu[i]))).median, 3);
    return {
      cpuMsPerCall: Object.fromEntries(names.map((n) => [n, round(med(n), 3)])),
      onOverOff: round(med("on") / med("off"), 3),
      onOverOffPaired: paired("on", "off"),
      addedUsPerCall: Math.round((med("on") - med("off")) * 1000),
      peerOnOverOff: round(med("peerOn") / med("peerOff"), 3),
      peerOnOverOffPaired: paired("peerOn", "peerOff"),
      peerAddedUsPerCall: Math.round((med("peerOn") - med("peerOff")) * 1000),
      disabledOverOff: round(med("disabled") / med("off"), 3),
      ...(split
        ? Object.fromEntries(
            ["spansOnly", "metricsOnly"].map((n) => [`${n}AddedUsPerCall`, Math.round((med(n) - med("off")) * 1000)]),
          )
        : {}),
      exportedBytes: received,
      goal: { onWithin5Percent: med("on") / med("off") <= 1.05 },
      blocks,
      block,
      processes,
    };
  } finally {
    for (const s of Object.values(servers).flat()) {
      await s.client?.close().catch(() => undefined);
      await stopChild(s.child);
    }
    sink.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const arg = (name, d) => (process.argv.includes(name) ? Number(process.argv[process.argv.indexOf(name) + 1]) : d);
  // --cli <path>: another build's dist/cli.js in place of this one's (a before/after comparison).
  if (process.argv.includes("--cli")) useCli(process.argv[process.argv.indexOf("--cli") + 1]);
  const { startSandbox, defaultTimeScale } = await loadSandbox();
  const sandbox = await startSandbox({ timeScale: defaultTimeScale });
  try {
    const r = await telemetryCost({
      sandbox,
      blocks: arg("--blocks", 12),
      block: arg("--block", 100),
      processes: arg("--processes", 1),
      split: process.argv.includes("--split"),
    });
    console.log(JSON.stringify(r, null, 2));
  } finally {
    await sandbox.close();
  }
}
