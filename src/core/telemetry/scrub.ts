import type { Attributes } from "@opentelemetry/api";
import type { ReadableSpan, SpanProcessor } from "@opentelemetry/sdk-trace-base";

/**
 * Every string a span carries (attributes, events' attributes, the status message) passes the
 * egress step before the span is handed to its exporter, like every other byte that leaves the
 * server: the spans are built from identifiers, but an error's message or an event's attribute
 * could still quote an upstream's words.
 */
export function scrubbingProcessor(next: SpanProcessor, scrub: (text: string) => string): SpanProcessor {
  const attributes = (a: Attributes | undefined) => {
    if (!a) return;
    for (const [k, v] of Object.entries(a)) {
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
