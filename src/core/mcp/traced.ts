import type { McpServer } from "@modelcontextprotocol/server";
import { telemetry } from "../base/telemetry.js";
import { MODERN_REVISION, type Era } from "./era.js";
import type { TenantRuntime } from "./runtime.js";
import { wrapEveryRequestHandler } from "./sdk-internals.js";

/**
 * Every request an instance answers runs in a SERVER span (core/telemetry/otel.ts), its parent the
 * trace context of its `params._meta`. Wrapped last, so the span covers every other wrapper. Only
 * a tool or prompt this runtime has names the span and labels the metric: an unknown name a client
 * sends adds no series.
 */
export function traceOperations(server: McpServer, rt: TenantRuntime, era: Era): void {
  const tools = new Map(rt.definition.tools.map((t) => [t.name, t.kind === "spend"]));
  const prompts = new Set(rt.definition.prompts.map((p) => p.name));
  const scrub = (text: string) => rt.egress.text(text);
  wrapEveryRequestHandler(server, (original) => (request, ctx) => {
    const params = (request as { params?: { name?: unknown; uri?: unknown; _meta?: unknown } }).params;
    const name = typeof params?.name === "string" ? params.name : undefined;
    const method = ctx.mcpReq.method;
    return telemetry.operation(
      {
        method,
        id: ctx.mcpReq.id,
        tool: method === "tools/call" && name && tools.has(name) ? name : undefined,
        spends: method === "tools/call" && name ? tools.get(name) : false,
        prompt: method === "prompts/get" && name && prompts.has(name) ? name : undefined,
        uri: method.startsWith("resources/") && typeof params?.uri === "string" ? params.uri : undefined,
        sessionId: ctx.sessionId,
        protocolVersion: era === "modern" ? MODERN_REVISION : server.server.getNegotiatedProtocolVersion(),
        meta: params?._meta,
        signal: ctx.mcpReq.signal,
      },
      () => original(request, ctx),
      scrub,
    );
  });
}
