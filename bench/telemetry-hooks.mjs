// Telemetry's hooks alone, in a loop, without a server around them (bench/README.md, "Telemetry's
// cost per tools/call"): per iteration one operation (SERVER span, duration) wrapping one upstream
// attempt (CLIENT span, traceparent, upstream duration), exported over OTLP/HTTP to a sink in a
// child process, with the /metrics listener. Reported: this process's CPU µs per iteration, the
// least and the median of 8 rounds (each round waits for the batch export it caused).
//
//   node bench/telemetry-hooks.mjs ours [--src src/core/telemetry/otel.ts]   the server's hooks
//   node bench/telemetry-hooks.mjs sdk                                       the SDK's two spans alone (the peer)
//   node bench/telemetry-hooks.mjs none                                      the loop without telemetry
//
// --src names another copy of otel.ts (beside it in src/core/telemetry/, so its imports resolve):
// how a change is compared with the code before it. Alternate the runs: the machine's load drifts.
import { spawn } from "node:child_process";
import { freePort } from "../scripts/cluster.mjs";
import { importFromSrc } from "../scripts/from-src.mjs";

const which = process.argv[2] ?? "ours";
const arg = (name, d) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : d);
const calls = Number(arg("--calls", 16_000));
const src = arg("--src", "src/core/telemetry/otel.ts");

const sinkPort = await freePort();
const sink = spawn(
  process.execPath,
  [
    "-e",
    `require("http").createServer((q, s) => { q.resume(); q.on("end", () => s.end("{}")); })` +
      `.listen(${sinkPort}, "127.0.0.1", () => console.log("up"))`,
  ],
  { stdio: ["ignore", "pipe", "inherit"] },
);
await new Promise((r) => sink.stdout.once("data", r));
process.env.OTEL_EXPORTER_OTLP_ENDPOINT = `http://127.0.0.1:${sinkPort}`;
process.env.OTEL_BSP_SCHEDULE_DELAY = "1000";

const hooks = await (async () => {
  if (which === "none")
    return (await importFromSrc(`export { NO_TELEMETRY } from "./src/core/base/telemetry.ts";`)).NO_TELEMETRY;
  if (which === "sdk") return sdkHooks();
  const { startTelemetry } = await importFromSrc(`export { startTelemetry } from "./${src}";`);
  return startTelemetry({
    env: { ...process.env, OTEL_TRACES_SAMPLER: "always_on", OTEL_METRIC_EXPORT_INTERVAL: "5000" },
    metricsAddress: `127.0.0.1:${await freePort()}`,
    version: "1.0.0",
    transport: "tcp",
    scrub: (text) => text.replace("not-a-secret-value", "[redacted]"),
  });
})();

/** The peer's spans (bench/otel-peer-server.mjs) behind the same two hooks. */
async function sdkHooks() {
  const api = await import("@opentelemetry/api");
  const { W3CTraceContextPropagator } = await import("@opentelemetry/core");
  const { OTLPTraceExporter } = await import("@opentelemetry/exporter-trace-otlp-http");
  const { BasicTracerProvider, BatchSpanProcessor } = await import("@opentelemetry/sdk-trace-base");
  const provider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())] });
  const tracer = provider.getTracer("bench");
  const propagator = new W3CTraceContextPropagator();
  const contexts = new WeakMap();
  return {
    operation: async (op, run) => {
      const span = tracer.startSpan(`${op.method} ${op.tool}`, {
        kind: api.SpanKind.SERVER,
        attributes: {
          "mcp.method.name": op.method,
          "gen_ai.tool.name": op.tool,
          "gen_ai.operation.name": "execute_tool",
          "jsonrpc.request.id": String(op.id),
          "mcp.session.id": op.sessionId,
          "network.transport": "tcp",
          "network.protocol.name": "http",
        },
      });
      contexts.set(op.signal, api.trace.setSpan(api.ROOT_CONTEXT, span));
      try {
        return await run();
      } finally {
        span.end();
      }
    },
    upstream: (_service, method, _path, _resend, signal) => {
      const parent = contexts.get(signal);
      const span = tracer.startSpan(
        `${method} /api/drones/{id}`,
        {
          kind: api.SpanKind.CLIENT,
          attributes: { "http.request.method": method, "url.template": "/api/drones/{id}" },
        },
        parent,
      );
      const headers = {};
      propagator.inject(api.trace.setSpan(parent, span), headers, api.defaultTextMapSetter);
      return {
        headers,
        end: ({ status }) => {
          span.setAttribute("http.response.status_code", status);
          span.end();
        },
      };
    },
    close: () => provider.shutdown(),
  };
}

const one = (i) => {
  const signal = new AbortController().signal;
  const op = { method: "tools/call", tool: "drones_get_drone", id: i, sessionId: "session-0123456789", signal };
  return hooks.operation(
    { ...op, protocolVersion: "2025-11-25" },
    async () => {
      const attempt = hooks.upstream("drones", "GET", "/api/drones/64b7f0c2e1d3a9b8c7d6e5f4", 0, signal);
      await null;
      attempt.end({ status: 200 });
      return { content: [] };
    },
    (text) => text,
  );
};

for (let i = 0; i < 3000; i++) await one(i);
const rounds = [];
const perRound = Math.ceil(calls / 8);
for (let r = 0; r < 8; r++) {
  const before = process.cpuUsage();
  for (let i = 0; i < perRound; i++) await one(i);
  await new Promise((done) => setTimeout(done, 1100));
  const used = process.cpuUsage(before);
  rounds.push((used.user + used.system) / perRound);
}
rounds.sort((a, b) => a - b);
const us = (x) => Math.round(x * 10) / 10;
console.log(
  JSON.stringify({
    which,
    src: which === "ours" ? src : undefined,
    leastUs: us(rounds[0]),
    medianUs: us((rounds[3] + rounds[4]) / 2),
  }),
);
await hooks.close?.();
sink.kill();
process.exit(0);
