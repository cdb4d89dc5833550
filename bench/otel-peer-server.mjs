#!/usr/bin/env node
// The telemetry row's peer: the two-hop floor (bench/two-hop-server.mjs) over HTTP, and with
// OTEL_EXPORTER_OTLP_ENDPOINT set, the official OpenTelemetry SDK as its documentation sets it up:
// per tools/call one SERVER span (the MCP conventions' name and attributes) and one CLIENT span
// around the GET, whose traceparent rides on it, exported by the BatchSpanProcessor over
// OTLP/HTTP. Its on/off is what the SDK costs at the least for the spans switchboard-mcp sends.
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import { McpServer, WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/server";
import { Pool } from "undici";
import { z } from "zod";

const { UPSTREAM_ORIGIN, UPSTREAM_PREFIX = "", UPSTREAM_KEY, OTEL_EXPORTER_OTLP_ENDPOINT } = process.env;
const pool = new Pool(UPSTREAM_ORIGIN, { connections: 4 });
const headers = { authorization: `Bearer ${UPSTREAM_KEY}`, accept: "application/json" };
const tracing = OTEL_EXPORTER_OTLP_ENDPOINT ? await startTracing() : undefined;

async function startTracing() {
  const api = await import("@opentelemetry/api");
  const { W3CTraceContextPropagator } = await import("@opentelemetry/core");
  const { OTLPTraceExporter } = await import("@opentelemetry/exporter-trace-otlp-http");
  const { resourceFromAttributes } = await import("@opentelemetry/resources");
  const { BasicTracerProvider, BatchSpanProcessor } = await import("@opentelemetry/sdk-trace-base");
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ "service.name": "bench-otel-peer" }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  return { api, tracer: provider.getTracer("bench-otel-peer"), propagator: new W3CTraceContextPropagator() };
}

/** GETs the drone; with tracing, inside a CLIENT span whose traceparent the request carries. */
async function get(id, parent) {
  const path = `${UPSTREAM_PREFIX}/api/drones/${encodeURIComponent(id)}`;
  if (!tracing) return (await pool.request({ path, method: "GET", headers })).body.text();
  const { api, tracer, propagator } = tracing;
  const span = tracer.startSpan(
    "GET /api/drones/{id}",
    { kind: api.SpanKind.CLIENT, attributes: { "http.request.method": "GET", "url.template": "/api/drones/{id}" } },
    parent,
  );
  const sent = { ...headers };
  propagator.inject(api.trace.setSpan(parent, span), sent, api.defaultTextMapSetter);
  const res = await pool.request({ path, method: "GET", headers: sent });
  span.setAttribute("http.response.status_code", res.statusCode);
  const text = await res.body.text();
  span.end();
  return text;
}

const server = new McpServer({ name: "bench-otel-peer", version: "1.0.0" });
server.registerTool(
  "get",
  { title: "Get a drone", description: "GETs one drone.", inputSchema: z.object({ id: z.string() }) },
  async ({ id }, ctx) => {
    if (!tracing) return { content: [{ type: "text", text: await get(id) }] };
    const { api, tracer } = tracing;
    const span = tracer.startSpan("tools/call get", {
      kind: api.SpanKind.SERVER,
      attributes: {
        "mcp.method.name": "tools/call",
        "gen_ai.tool.name": "get",
        "gen_ai.operation.name": "execute_tool",
        "jsonrpc.request.id": String(ctx.mcpReq.id),
        "mcp.session.id": ctx.sessionId,
        "network.transport": "tcp",
        "network.protocol.name": "http",
      },
    });
    try {
      return { content: [{ type: "text", text: await get(id, api.trace.setSpan(api.ROOT_CONTEXT, span)) }] };
    } finally {
      span.end();
    }
  },
);
const transport = new WebStandardStreamableHTTPServerTransport({
  sessionIdGenerator: () => randomUUID(),
  enableJsonResponse: true,
});
await server.connect(transport);
const http = createServer(async (req, res) => {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const body = chunks.length ? Buffer.concat(chunks) : undefined;
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") headers.set(k, v);
  const answer = await transport.handleRequest(
    new Request(`http://127.0.0.1${req.url}`, { method: req.method, headers, body }),
  );
  res.writeHead(answer.status, Object.fromEntries(answer.headers));
  res.end(Buffer.from(await answer.arrayBuffer()));
});
http.listen(0, "127.0.0.1", () => console.error(`ready on http://127.0.0.1:${http.address().port}/mcp`));
