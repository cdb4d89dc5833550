import { createHash } from "node:crypto";
import {
  type Attributes,
  type Context,
  createContextKey,
  defaultTextMapSetter,
  type Link,
  type Span,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
} from "@opentelemetry/api";
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPMetricExporter } from "@opentelemetry/exporter-metrics-otlp-http";
import { PrometheusExporter } from "@opentelemetry/exporter-prometheus";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { detectResources, envDetector, resourceFromAttributes } from "@opentelemetry/resources";
import {
  AggregationTemporality,
  AggregationType,
  InstrumentType,
  type MetricReader,
  MeterProvider,
  PeriodicExportingMetricReader,
} from "@opentelemetry/sdk-metrics";
import { BasicTracerProvider, BatchSpanProcessor, type SpanProcessor } from "@opentelemetry/sdk-trace-base";
import { ENV } from "../base/settings.js";
import type {
  GaugeName,
  Labels,
  MetricName,
  Scope,
  ServerOperation,
  Telemetry,
  UpstreamAttempt,
  WorkParent,
  WorkSpan,
} from "../base/telemetry.js";
import { Histograms } from "./histograms.js";
import { scrubbingProcessor } from "./scrub.js";
import { routeTemplate } from "./route.js";

/** The MCP conventions' ExplicitBucketBoundaries for the operation and session durations (seconds). */
export const MCP_BUCKETS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300];
/** The HTTP conventions' buckets for client request durations (seconds): upstream requests and Redis. */
const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];

/**
 * Every metric of the server, its instrument and the only label keys it keeps (docs/observability.md
 * lists them with their values). A label not named here is dropped, so none can add cardinality.
 */
const METRICS: Record<
  MetricName,
  { name: string; kind: "counter" | "histogram"; labels: string[]; description: string; unit?: string }
> = {
  credits: {
    name: "switchboard.credits.spent",
    kind: "counter",
    labels: ["service", "tool"],
    description: "Credits the upstreams report spent, by service and the tool whose call spent them",
  },
  confirmations: {
    name: "switchboard.confirmations",
    kind: "counter",
    labels: ["outcome"],
    description: "Credit confirmations: asked, accepted, refused, expired",
  },
  repeats: {
    name: "switchboard.spend_once.repeats",
    kind: "counter",
    labels: ["tool"],
    description: "Spending calls answered with an earlier identical call's outcome instead of spending again",
  },
  caps: {
    name: "switchboard.caps.hit",
    kind: "counter",
    labels: ["setting"],
    description: "Requests refused because a bound was reached, by the setting that sets it",
  },
  "redis.duration": {
    name: "switchboard.redis.duration",
    kind: "histogram",
    unit: "s",
    labels: ["operation"],
    description: "Round-trip time of Redis commands",
  },
  "redis.errors": {
    name: "switchboard.redis.errors",
    kind: "counter",
    labels: ["operation"],
    description: "Redis commands that failed (connection lost, timeout)",
  },
  "oauth.rejections": {
    name: "switchboard.oauth.rejections",
    kind: "counter",
    labels: ["status", "reason"],
    description: "Requests refused by the OAuth resource server (401/403), by reason",
  },
  "linked.attempts": {
    name: "switchboard.linked_key.attempts",
    kind: "counter",
    labels: ["outcome"],
    description: "Attempts to link a key through a connect link (linked credentials)",
  },
  webhooks: {
    name: "switchboard.webhooks",
    kind: "counter",
    labels: ["service", "outcome"],
    description: "Webhook deliveries by outcome, and push hints that matched or missed what polls found",
  },
};

const GAUGES: Record<GaugeName, { name: string; description: string }> = {
  tasks: { name: "switchboard.tasks.working", description: "Tasks working on this replica" },
  pollers: { name: "switchboard.pollers.active", description: "Upstream pollers running on this replica" },
  tenants: { name: "switchboard.tenants.cached", description: "Tenant runtimes held in memory" },
  subscriptions: { name: "switchboard.subscriptions.active", description: "Resources followed for subscribers" },
};

interface TelemetryOptions {
  env: Record<string, string | undefined>;
  /** host:port of the /metrics listener (ENV.metricsAddress); none without. */
  metricsAddress?: string;
  /** ENV.traceResourceUris: resources/* spans carry mcp.resource.uri (opt-in: URIs name projects). */
  resourceUris?: boolean;
  version: string;
  replicaId?: string;
  /** How this process serves MCP: "tcp" (HTTP) or "pipe" (stdio), the conventions' network.transport. */
  transport: "tcp" | "pipe";
  /** The process's egress step (core/base/egress.ts): every string a span carries passes it before export. */
  scrub: (text: string) => string;
}

/** The spending tool whose call this is: the credits its upstream requests spend are labelled with its name. */
const SPENDING = createContextKey("switchboard spending tool");
const getter = {
  keys: (carrier: unknown) => Object.keys(carrier as object),
  get: (carrier: unknown, key: string) => {
    const v = (carrier as Record<string, unknown>)[key];
    return typeof v === "string" ? v : undefined;
  },
};

/** Starts the SDK as the OTEL_* variables and the metrics address say, and returns the server's hooks into it. */
export async function startTelemetry(options: TelemetryOptions): Promise<Telemetry & { metricsUrl?: string }> {
  const { env } = options;
  const replica = options.replicaId ?? "";
  const resource = resourceFromAttributes({
    "service.name": "switchboard-mcp",
    "service.version": options.version,
    ...(replica ? { "service.instance.id": replica, "switchboard.replica.id": replica } : {}),
  }).merge(detectResources({ detectors: [envDetector] }));

  const traceContext = new W3CTraceContextPropagator();
  const propagator = new CompositePropagator({ propagators: [traceContext, new W3CBaggagePropagator()] });
  propagation.setGlobalPropagator(propagator);
  /** The context of each request or work by its abort signal (Scope in core/base/telemetry.ts). */
  const scopes = new WeakMap<AbortSignal, Context>();
  const contextOf = (scope: Scope) => (scope && scopes.get(scope)) || ROOT_CONTEXT;

  const endpoint = (signal: "TRACES" | "METRICS") =>
    Boolean(env[`OTEL_EXPORTER_OTLP_${signal}_ENDPOINT`]?.trim() || env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim());
  const wants = (signal: "TRACES" | "METRICS") => {
    const named = env[`OTEL_${signal}_EXPORTER`]?.trim();
    return named ? named.split(",").includes("otlp") : endpoint(signal);
  };

  const processors: SpanProcessor[] = wants("TRACES")
    ? [scrubbingProcessor(new BatchSpanProcessor(new OTLPTraceExporter()), options.scrub)]
    : [];
  const tracerProvider = new BasicTracerProvider({ resource, spanProcessors: processors });
  trace.setGlobalTracerProvider(tracerProvider);
  const tracer = tracerProvider.getTracer("switchboard-mcp", options.version);

  const histograms = new Histograms({ name: "switchboard-mcp", version: options.version });
  const readers: MetricReader[] = [];
  let otlp: PeriodicExportingMetricReader | undefined;
  let otlpExporter: OTLPMetricExporter | undefined;
  if (wants("METRICS")) {
    const interval = Number(env.OTEL_METRIC_EXPORT_INTERVAL) || 60_000;
    otlpExporter = new OTLPMetricExporter();
    otlp = new PeriodicExportingMetricReader({
      exporter: otlpExporter,
      exportIntervalMillis: interval,
      exportTimeoutMillis: Math.min(interval, Number(env.OTEL_METRIC_EXPORT_TIMEOUT) || 30_000),
      metricProducers: [histograms],
    });
    readers.push(otlp);
  }
  // Each reader the MeterProvider holds aggregates every record on its own (one attribute hash
  // and one accumulation per reader per record). When the OTLP exporter wants what the scrape
  // serves (cumulative, default aggregation: the default), /metrics reads the OTLP reader's
  // collection (its histograms with it) instead of keeping a second one: cumulative sums read the
  // same by either.
  const source = otlp && otlpExporter && sameCollection(otlpExporter) ? otlp : undefined;
  let metricsUrl: string | undefined;
  let prometheus: PrometheusExporter | undefined;
  const address = options.metricsAddress;
  if (address) {
    const { host, port } = hostPort(address);
    prometheus = new PrometheusExporter({
      host,
      port,
      preventServerStart: true,
      metricProducers: source ? [] : [histograms],
    });
    await prometheus.startServer();
    metricsUrl = `http://${host.includes(":") ? `[${host}]` : host}:${port}/metrics`;
    if (!source) readers.push(prometheus);
  }
  const meterProvider = new MeterProvider({ resource, readers });
  if (prometheus && source) prometheus.setMetricProducer({ collect: (o) => source.collect(o) });
  const meter = meterProvider.getMeter("switchboard-mcp", options.version);

  const seconds = (name: string, description: string, buckets: number[]) =>
    histograms.define(name, description, "s", buckets);
  const operationDuration = seconds(
    "mcp.server.operation.duration",
    "MCP request or notification duration as observed on the receiver from the time it was received " +
      "until the result or ack is sent.",
    MCP_BUCKETS,
  );
  const sessionDuration = seconds(
    "mcp.server.session.duration",
    "The duration of the MCP session as observed on the MCP server.",
    MCP_BUCKETS,
  );
  const upstreamDuration = seconds(
    "switchboard.upstream.duration",
    "Upstream HTTP attempts: duration, and by their count how many, by service, operation and status class",
    HTTP_BUCKETS,
  );
  const instruments = new Map<MetricName, { add(value: number, labels: Attributes): void }>();
  const instrument = (name: MetricName) => {
    let found = instruments.get(name);
    if (!found) {
      const m = METRICS[name];
      const options = { description: m.description, unit: m.unit };
      if (m.kind === "counter") {
        const counter = meter.createCounter(m.name, options);
        found = { add: (value, labels) => counter.add(value, labels) };
      } else {
        const histogram = histograms.define(m.name, m.description, m.unit ?? "s", HTTP_BUCKETS);
        found = { add: (value, labels) => histogram.record(value, labels) };
      }
      instruments.set(name, found);
    }
    return found;
  };
  const gauges = new Map<GaugeName, Set<() => number>>();
  const sessionLabels: Attributes = { "network.transport": options.transport };

  /**
   * What every request of one method, target and protocol version shares: its span name and the
   * attributes that are also the duration's labels, built once (bounded) instead of per request.
   */
  const kinds = memo((op: ServerOperation): OperationKind => {
    const attributes: Attributes = { "mcp.method.name": op.method, "network.transport": options.transport };
    if (options.transport === "tcp") attributes["network.protocol.name"] = "http";
    if (op.tool) {
      attributes["gen_ai.tool.name"] = op.tool;
      attributes["gen_ai.operation.name"] = "execute_tool";
    }
    if (op.prompt) attributes["gen_ai.prompt.name"] = op.prompt;
    if (op.protocolVersion) attributes["mcp.protocol.version"] = op.protocolVersion;
    const failed = new Map<string, Attributes>();
    const target = op.tool ?? op.prompt;
    return {
      name: target ? `${op.method} ${target}` : op.method,
      attributes,
      labels: (errorType) => {
        if (!errorType) return attributes;
        let labels = failed.get(errorType);
        if (!labels) failed.set(errorType, (labels = { ...attributes, "error.type": errorType }));
        return labels;
      },
    };
  });
  // A method names either a tool or a prompt, never both.
  const operationKind = (op: ServerOperation) => kinds(op, op.method, op.tool ?? op.prompt, op.protocolVersion);

  const operation = async <T>(op: ServerOperation, run: () => Promise<T>, scrub: (t: string) => string) => {
    const started = performance.now();
    const parent =
      isRecord(op.meta) && (op.meta.traceparent !== undefined || op.meta.baggage !== undefined)
        ? propagation.extract(ROOT_CONTEXT, op.meta, getter)
        : ROOT_CONTEXT;
    const kind = operationKind(op);
    const attributes: Attributes = { ...kind.attributes };
    if (op.id !== undefined && op.id !== null) attributes["jsonrpc.request.id"] = String(op.id);
    if (op.sessionId) attributes["mcp.session.id"] = hashOfSession(op.sessionId);
    if (options.resourceUris && op.uri) attributes["mcp.resource.uri"] = op.uri;
    const span = tracer.startSpan(kind.name, { kind: SpanKind.SERVER, attributes }, parent);
    if (op.signal)
      scopes.set(op.signal, trace.setSpan(op.tool && op.spends ? parent.setValue(SPENDING, op.tool) : parent, span));
    let errorType: string | undefined;
    try {
      const result = await run();
      if (isRecord(result) && result.isError === true) {
        errorType = "tool_error";
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
      return result;
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      errorType = typeof code === "number" ? String(code) : "_OTHER";
      if (typeof code === "number") span.setAttribute("rpc.response.status_code", String(code));
      span.setStatus({ code: SpanStatusCode.ERROR, message: scrub(err instanceof Error ? err.message : String(err)) });
      throw err;
    } finally {
      if (errorType) span.setAttribute("error.type", errorType);
      span.end();
      operationDuration.record((performance.now() - started) / 1000, kind.labels(errorType));
    }
  };

  /** Label objects by content, one per set (bounded): a histogram finds its series by the object. */
  const labelSets = memo((labels: Attributes) => labels);
  const upstreamSets = memo(
    (_: undefined, service, operation, statusClass): Attributes => ({ service, operation, status_class: statusClass }),
  );
  const upstreamLabels = (service: string, operation: string, statusClass: string) =>
    upstreamSets(undefined, service, operation, statusClass);
  const upstream = (service: string, method: string, path: string, resend: number, scope: Scope): UpstreamAttempt => {
    const started = performance.now();
    const route = routeTemplate(path);
    const active = contextOf(scope);
    const tool = active.getValue(SPENDING) as string | undefined;
    const name = `${method} ${route}`;
    const span = tracer.startSpan(
      name,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          "switchboard.upstream.service": service,
          "http.request.method": method,
          "url.template": route,
          ...(resend ? { "http.request.resend_count": resend } : {}),
        },
      },
      active,
    );
    const headers = propagation.getBaggage(active) ? injected(trace.setSpan(active, span)) : traceHeaders(span);
    return {
      headers,
      end: ({ status, code, credits }) => {
        const statusClass = status !== undefined ? `${Math.floor(status / 100)}xx` : (code ?? "error").toLowerCase();
        if (status !== undefined) span.setAttribute("http.response.status_code", status);
        const failed = status === undefined || status >= 400;
        if (failed) {
          span.setAttribute("error.type", status !== undefined ? String(status) : statusClass);
          span.setStatus({ code: SpanStatusCode.ERROR });
        }
        if (credits !== undefined && credits > 0) {
          span.setAttribute("switchboard.credits.spent", credits);
          instrument("credits").add(credits, tool ? { service, tool } : { service });
        }
        span.end();
        upstreamDuration.record((performance.now() - started) / 1000, upstreamLabels(service, name, statusClass));
      },
    };
  };

  const injected = (ctx: Context) => {
    const headers: Record<string, string> = {};
    propagation.inject(ctx, headers);
    return headers;
  };

  const linkTo = (span: Span | undefined, traceparent: string | undefined, kind: string) => {
    const linked = traceparent && trace.getSpanContext(traceContext.extract(ROOT_CONTEXT, { traceparent }, getter));
    if (span && linked) span.addLink({ context: linked, attributes: { "switchboard.link": kind } });
  };
  /** The context each WorkSpan runs in, so a poll can hang under its follower's span. */
  const contexts = new WeakMap<WorkSpan, Context>();
  const traceparentOf = (ctx: Context) => {
    const carrier: Record<string, string> = {};
    traceContext.inject(ctx, carrier, defaultTextMapSetter);
    return carrier.traceparent;
  };
  const begin = (name: string, attributes: Labels, parent: WorkParent): WorkSpan => {
    let from = ROOT_CONTEXT;
    const links: Link[] = [];
    if (parent === "none") from = ROOT_CONTEXT;
    else if ("within" in parent) from = contextOf(parent.within);
    else if ("of" in parent) from = contexts.get(parent.of) ?? ROOT_CONTEXT;
    else {
      from = traceContext.extract(ROOT_CONTEXT, { traceparent: parent.continues }, getter);
      const linked = trace.getSpanContext(from);
      if (linked) links.push({ context: linked, attributes: { "switchboard.link": "takeover" } });
    }
    const span = tracer.startSpan(name, { kind: SpanKind.INTERNAL, attributes: clean(attributes), links }, from);
    const own = trace.setSpan(from, span);
    const work: WorkSpan = {
      traceparent: traceparentOf(own),
      adopt: (signal) => scopes.set(signal, own),
      link: (traceparent) => linkTo(span, traceparent, "poll"),
      end: (attributes, error) => {
        if (attributes) span.setAttributes(clean(attributes));
        if (error !== undefined) {
          const code = (error as { code?: unknown } | null)?.code;
          span.setAttribute(
            "error.type",
            typeof code === "string" || typeof code === "number" ? String(code) : "_OTHER",
          );
          span.setStatus({ code: SpanStatusCode.ERROR });
        }
        span.end();
      },
    };
    contexts.set(work, own);
    return work;
  };

  for (const [name, g] of Object.entries(GAUGES) as [GaugeName, (typeof GAUGES)[GaugeName]][]) {
    meter.createObservableGauge(g.name, { description: g.description }).addCallback((result) => {
      const reads = gauges.get(name);
      if (!reads?.size) return;
      let total = 0;
      for (const read of reads) total += read();
      result.observe(total);
    });
  }

  return {
    on: true,
    metricsUrl,
    operation,
    upstream,
    begin,
    link: (traceparent, kind, scope) => linkTo(trace.getSpan(contextOf(scope)), traceparent, kind),
    event: (name, attributes, scope) =>
      trace.getSpan(contextOf(scope))?.addEvent(name, attributes ? clean(attributes) : undefined),
    add: (name, value = 1, labels = {}) => {
      const keep: Attributes = {};
      let key: string = name;
      for (const k of METRICS[name].labels)
        if (labels[k] !== undefined) {
          keep[k] = labels[k];
          key += `\0${k}=${labels[k]}`;
        }
      instrument(name).add(value, labelSets(keep, key));
    },
    gauge: (name, read) => {
      const reads = gauges.get(name) ?? new Set();
      reads.add(read);
      gauges.set(name, reads);
    },
    sessionEnded: (openedAt) => sessionDuration.record((performance.now() - openedAt) / 1000, sessionLabels),
    close: async () => {
      await Promise.allSettled([
        tracerProvider.shutdown(),
        meterProvider.shutdown(),
        ...(source && prometheus ? [prometheus.shutdown()] : []),
      ]);
    },
  };
}

/**
 * `host:port` (`[::1]:9464`, `0.0.0.0:9464`, `:9464` for every address). Port 0 is refused: a
 * scraper needs a known port, and the exporter would silently take its default 9464 instead.
 */
export function hostPort(address: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(address);
  const port = Number(m?.[3]);
  if (!m || port < 1 || port > 65535)
    throw new Error(`${ENV.metricsAddress} must be host:port, port 1 to 65535, not ${JSON.stringify(address)}`);
  return { host: m[1] ?? (m[2] || "0.0.0.0"), port };
}

/**
 * The W3C trace context of a span as request headers: what the propagator writes, without the
 * context it needs built (used when there is no baggage to carry as well).
 */
function traceHeaders(span: Span): Record<string, string> {
  const { traceId, spanId, traceFlags, traceState } = span.spanContext();
  const headers: Record<string, string> = { traceparent: `00-${traceId}-${spanId}-0${traceFlags.toString(16)}` };
  if (traceState) headers.tracestate = traceState.serialize();
  return headers;
}

interface OperationKind {
  name: string;
  attributes: Attributes;
  /** The duration's labels: the shared attributes, plus error.type on failure (one object per type). */
  labels: (errorType: string | undefined) => Attributes;
}

/** Whether the OTLP exporter aggregates as the Prometheus exporter does: cumulative, default aggregation. */
function sameCollection(exporter: OTLPMetricExporter): boolean {
  return Object.values(InstrumentType).every(
    (type) =>
      exporter.selectAggregationTemporality(type) === AggregationTemporality.CUMULATIVE &&
      exporter.selectAggregation(type).type === AggregationType.DEFAULT,
  );
}

/**
 * mcp.session.id is a hash of the session id: the id itself lets whoever holds it use the session,
 * so it is not sent to a collector; the hash still groups one session's spans. Every request of a
 * session hashes the same id: once per session.
 */
const sessionHash = memo((id: string) => createHash("sha256").update(id).digest("hex").slice(0, 32));
const hashOfSession = (id: string) => sessionHash(id, id);

/**
 * `build(arg, ...keys)` remembered by up to three keys, for values every request of a kind shares. Maps by
 * key, so that a lookup builds no key string. Bounded: cleared when 1,024 values are held.
 */
function memo<A, V>(
  build: (arg: A, a: string, b: string, c: string) => V,
): (arg: A, a: string, b?: string, c?: string) => V {
  let held = new Map<string, Map<string, Map<string, V>>>();
  let size = 0;
  return (arg, a, b = "", c = "") => {
    let value = held.get(a)?.get(b)?.get(c);
    if (value === undefined) {
      if (size >= 1024) {
        held = new Map();
        size = 0;
      }
      let byB = held.get(a);
      if (!byB) held.set(a, (byB = new Map()));
      let byC = byB.get(b);
      if (!byC) byB.set(b, (byC = new Map()));
      value = build(arg, a, b, c);
      byC.set(c, value);
      size++;
    }
    return value;
  };
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function clean(labels: Labels): Attributes {
  const out: Attributes = {};
  for (const [k, v] of Object.entries(labels)) if (v !== undefined) out[k] = v;
  return out;
}
