/**
 * What the server tells its operator: traces and metrics (docs/observability.md). This module is
 * the interface and its "off" value only: the OpenTelemetry SDK lives in core/telemetry/otel.ts,
 * which launch.ts imports only when `telemetryWanted` (an OTLP exporter or the metrics address
 * is configured). Off, every hook is a no-op on a constant object, and the MCP request handlers are
 * not even wrapped (core/mcp/server.ts).
 *
 * Labels: only the keys a metric declares in core/telemetry/otel.ts are kept, and none of them is a
 * tenant, subject, key, session or project id.
 */

/** One MCP request or notification as its SERVER span and mcp.server.operation.duration see it. */
export interface ServerOperation {
  method: string;
  id?: string | number;
  /** The tool or prompt name: the span is named `{method} {target}`. */
  tool?: string;
  /** The tool spends credits: its upstream requests' spend is labelled with its name (switchboard.credits.spent). */
  spends?: boolean;
  prompt?: string;
  uri?: string;
  sessionId?: string;
  protocolVersion?: string;
  /** The request's `params._meta`: traceparent, tracestate and baggage come from here (SEP-414). */
  meta?: unknown;
  /**
   * The request's abort signal, which its tool passes to every upstream request and wait: the
   * key by which those find this operation's span (see `Scope`).
   */
  signal?: AbortSignal;
}

/**
 * Which span a piece of work belongs to: the abort signal it carries. A request's signal reaches
 * every upstream request, wait and task it makes, so spans find their parent by it, with no
 * AsyncLocalStorage: on Node 20 that hooks every promise of the process, a cost measured per
 * tools/call in bench/README.md ("Telemetry's cost per tools/call").
 */
export type Scope = AbortSignal | undefined;

/** One upstream HTTP attempt (a CLIENT span): `headers` carries its traceparent onto the request. */
export interface UpstreamAttempt {
  readonly headers: Record<string, string>;
  /** `status`: the HTTP status if an answer came; `code`: the failure's code otherwise; `credits`: spent by it. */
  end(outcome: { status?: number; code?: string; credits?: number }): void;
}

/** Counters and histograms this server keeps (their labels and meaning: docs/observability.md). */
export type MetricName =
  | "credits"
  | "confirmations"
  | "repeats"
  | "caps"
  | "redis.duration"
  | "redis.errors"
  | "oauth.rejections"
  | "linked.attempts"
  | "webhooks";

/** Gauges, read when a scrape or an export asks. */
export type GaugeName = "tasks" | "pollers" | "tenants" | "subscriptions";

export type Labels = Record<string, string | number | boolean | undefined>;

/**
 * Long work as a span of its own, open until `end`: a task, a wait, one poll of a shared poller.
 * A poll serves every follower of its key (on every replica): it is the child of the oldest
 * follower's span here, and every other follower's span links to it.
 */
export interface WorkSpan {
  /** Its W3C traceparent: kept in a task's record, so a replica taking the task over links to it. */
  readonly traceparent: string | undefined;
  /** Upstream requests made with `signal` from now on are this span's children. */
  adopt(signal: AbortSignal): void;
  /** Links another span (a poll whose answer this work read) by its traceparent. */
  link(traceparent: string | undefined): void;
  end(attributes?: Labels, error?: unknown): void;
}

/**
 * Where a WorkSpan hangs: under the span of the request or work whose signal it names, in a trace
 * of its own, under another work's span, or (a takeover) under the span another replica left in
 * the task's record, linked to it.
 */
export type WorkParent = { within: Scope } | "none" | { of: WorkSpan } | { continues: string };

export interface Telemetry {
  readonly on: boolean;
  /** Runs an MCP request handler in its SERVER span. `scrub` cleans an error's message before it is recorded. */
  operation<T>(op: ServerOperation, run: () => Promise<T>, scrub: (text: string) => string): Promise<T>;
  /** A CLIENT span for one upstream attempt (`resend`: 0 for the first, 1 for the first retry…). */
  upstream(service: string, method: string, path: string, resend: number, scope: Scope): UpstreamAttempt;
  /** Starts long work's span (a task, a wait, a poll); `parent` says where it hangs. */
  begin(name: string, attributes: Labels, parent: WorkParent): WorkSpan;
  /** Links the span of `scope` to another by its traceparent (a client's tasks/get to its task's span). */
  link(traceparent: string | undefined, kind: string, scope: Scope): void;
  /** An event on the span of `scope` (a confirmation asked, answered). */
  event(name: string, attributes: Labels | undefined, scope: Scope): void;
  /** Adds to a counter, or records a value in a histogram. */
  add(name: MetricName, value?: number, labels?: Labels): void;
  /** A gauge read from `read` when metrics are collected. */
  gauge(name: GaugeName, read: () => number): void;
  /** A session (legacy HTTP, stdio) opened at `openedAt` (performance.now()) ended: mcp.server.session.duration. */
  sessionEnded(openedAt: number): void;
  /** Flushes what is buffered and stops the exporters and the /metrics listener. */
  close(): Promise<void>;
}

const NO_ATTEMPT: UpstreamAttempt = { headers: {}, end: () => undefined };
const nothing = () => undefined;
const NO_WORK: WorkSpan = { traceparent: undefined, adopt: nothing, link: nothing, end: nothing };

export const NO_TELEMETRY: Telemetry = {
  on: false,
  operation: (_op, run) => run(),
  upstream: () => NO_ATTEMPT,
  begin: () => NO_WORK,
  link: nothing,
  event: nothing,
  add: nothing,
  gauge: nothing,
  sessionEnded: nothing,
  close: async () => undefined,
};

/** The process's telemetry: NO_TELEMETRY unless launch.ts started the SDK. */
export let telemetry: Telemetry = NO_TELEMETRY;

export function useTelemetry(next: Telemetry): void {
  telemetry = next;
}

/**
 * Whether anything would be exported: an OTLP endpoint or exporter named by the standard OTEL_*
 * variables, or a /metrics listener (`metricsAddress`). OTEL_SDK_DISABLED=true wins over all of them.
 */
export function telemetryWanted(env: Record<string, string | undefined>, metricsAddress?: string): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true") return false;
  if (metricsAddress) return true;
  const endpoints = ["", "_TRACES", "_METRICS"].some((s) => env[`OTEL_EXPORTER_OTLP${s}_ENDPOINT`]?.trim());
  const named = [env.OTEL_TRACES_EXPORTER, env.OTEL_METRICS_EXPORTER].some((v) => v?.includes("otlp"));
  return endpoints || named;
}
