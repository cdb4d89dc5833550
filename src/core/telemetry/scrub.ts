import type { Attributes } from "@opentelemetry/api";
import type { ReadableSpan, SpanProcessor } from "@opentelemetry/sdk-trace-base";

/**
 * Attributes whose values the server builds from its own declarations (method, tool, prompt and
 * service names, the negotiated protocol version) or as hashes: never a caller's or an upstream's
 * words, so not scrubbed. Every other string is.
 */
const DECLARED = new Set([
  "mcp.method.name",
  "mcp.protocol.version",
  "mcp.session.id",
  "gen_ai.tool.name",
  "gen_ai.prompt.name",
  "gen_ai.operation.name",
  "network.transport",
  "network.protocol.name",
  "http.request.method",
  "switchboard.upstream.service",
]);

/**
 * Every string a span carries (attributes, events' attributes, the status message) passes the
 * egress step before the span is handed to its exporter, like every other byte that leaves the
 * server: the spans are built from identifiers, but an error's message or an event's attribute
 * could still quote an upstream's words.
 */
export function scrubbingProcessor(next: SpanProcessor, scrub: (text: string) => string): SpanProcessor {
  const attributes = (a: Attributes | undefined) => {
    if (!a) return;
    for (const k in a) {
      if (DECLARED.has(k)) continue;
      const v = a[k];
      if (typeof v === "string") a[k] = scrub(v);
      else if (Array.isArray(v)) a[k] = v.map((x) => (typeof x === "string" ? scrub(x) : x)) as typeof v;
    }
  };
  return {
    onStart: (span, parent) => next.onStart(span, parent),
    onEnd: (span: ReadableSpan) => {
      attributes(span.attributes);
      for (const e of span.events) attributes(e.attributes);
      const status = span.status as { message?: string };
      if (status.message) status.message = scrub(status.message);
      next.onEnd(span);
    },
    forceFlush: () => next.forceFlush(),
    shutdown: () => next.shutdown(),
  };
}
