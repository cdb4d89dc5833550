// What the telemetry tests run beside the server: an OTLP/HTTP receiver that decodes what the
// OpenTelemetry SDK's exporters send (OTLP JSON), a proxy in front of an upstream that records the
// headers of each request it forwards, and real Prometheus scraping a replica.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, request as httpRequest, type Server } from "node:http";
import { createServer as createNetServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

type AnyValue = { stringValue?: string; intValue?: string | number; doubleValue?: number; boolValue?: boolean };
type KeyValue = { key: string; value: AnyValue };

export interface Span {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  /** 1 internal, 2 server, 3 client. */
  kind: number;
  attributes: Record<string, string | number | boolean | undefined>;
  events: { name: string; attributes: Record<string, unknown> }[];
  links: { traceId: string; spanId: string; attributes: Record<string, unknown> }[];
  status: { code?: number; message?: string };
  resource: Record<string, unknown>;
}

/** Whether `span` hangs, at any depth, under the span `ancestorId` (all in `spans`). */
export function under(span: Span, ancestorId: string, spans: Span[]): boolean {
  for (let s: Span | undefined = span; s?.parentSpanId; s = spans.find((x) => x.spanId === s!.parentSpanId))
    if (s.parentSpanId === ancestorId) return true;
  return false;
}

export interface Metric {
  name: string;
  resource: Record<string, unknown>;
  histogram?: { dataPoints: { attributes: Record<string, unknown>; explicitBounds: number[]; count: number }[] };
  sum?: { dataPoints: { attributes: Record<string, unknown>; asInt?: number; asDouble?: number }[] };
  gauge?: { dataPoints: { attributes: Record<string, unknown>; asInt?: number; asDouble?: number }[] };
}

const value = (v: AnyValue) =>
  v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined) ?? v.doubleValue ?? v.boolValue;
const attrs = (list: KeyValue[] | undefined) => Object.fromEntries((list ?? []).map((a) => [a.key, value(a.value)]));

export interface Receiver {
  url: string;
  spans(): Span[];
  metrics(): Metric[];
  /** Every body received, as sent: what a secret must not be found in. */
  raw(): string;
  close(): Promise<void>;
}

/** An OTLP/HTTP receiver (JSON encoding, the exporters' default) on loopback. */
export async function startReceiver(): Promise<Receiver> {
  const spans: Span[] = [];
  const metrics: Metric[] = [];
  let raw = "";
  const server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (c: string) => (body += c));
    req.on("end", () => {
      raw += body;
      const doc = JSON.parse(body || "{}");
      for (const rs of doc.resourceSpans ?? []) {
        const resource = attrs(rs.resource?.attributes);
        for (const ss of rs.scopeSpans ?? [])
          for (const s of ss.spans ?? [])
            spans.push({
              traceId: s.traceId,
              spanId: s.spanId,
              parentSpanId: s.parentSpanId || undefined,
              name: s.name,
              kind: s.kind,
              attributes: attrs(s.attributes),
              events: (s.events ?? []).map((e: { name: string; attributes?: KeyValue[] }) => ({
                name: e.name,
                attributes: attrs(e.attributes),
              })),
              links: (s.links ?? []).map((l: { traceId: string; spanId: string; attributes?: KeyValue[] }) => ({
                traceId: l.traceId,
                spanId: l.spanId,
                attributes: attrs(l.attributes),
              })),
              status: s.status ?? {},
              resource,
            });
      }
      for (const rm of doc.resourceMetrics ?? []) {
        const resource = attrs(rm.resource?.attributes);
        for (const sm of rm.scopeMetrics ?? [])
          for (const m of sm.metrics ?? []) {
            const points = (d?: { dataPoints?: { attributes?: KeyValue[] }[] }) =>
              d
                ? { dataPoints: (d.dataPoints ?? []).map((p) => ({ ...p, attributes: attrs(p.attributes) })) }
                : undefined;
            metrics.push({
              name: m.name,
              resource,
              histogram: points(m.histogram) as Metric["histogram"],
              sum: points(m.sum) as Metric["sum"],
              gauge: points(m.gauge) as Metric["gauge"],
            });
          }
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  const port = await listen(server);
  return {
    url: `http://127.0.0.1:${port}`,
    spans: () => [...spans],
    metrics: () => [...metrics],
    raw: () => raw,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

export interface RecordingProxy {
  url: string;
  /** The headers of every request forwarded, in order. */
  seen: { path: string; headers: IncomingHttpHeaders }[];
  close(): Promise<void>;
}

/**
 * Forwards every request to `target`'s origin (same path) and records its headers. `target` may
 * be a function, read at each request: a cluster's sandbox, known only once it started.
 */
export async function startRecordingProxy(target: string | (() => string)): Promise<RecordingProxy> {
  const seen: RecordingProxy["seen"] = [];
  const server = createServer((req, res) => {
    seen.push({ path: req.url ?? "", headers: req.headers });
    const origin = new URL(typeof target === "string" ? target : target());
    const out = httpRequest(
      { host: origin.hostname, port: origin.port, path: req.url, method: req.method, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    out.on("error", () => res.destroy());
    req.pipe(out);
  });
  const port = await listen(server);
  const base = new URL(typeof target === "string" ? target : "http://127.0.0.1");
  base.host = `127.0.0.1:${port}`;
  return { url: base.toString().replace(/\/$/, ""), seen, close: () => new Promise((r) => server.close(() => r())) };
}

export async function freePort(): Promise<number> {
  const server = createNetServer();
  const port = await listen(server as unknown as Server);
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

function listen(server: Server): Promise<number> {
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve((server.address() as { port: number }).port)),
  );
}

export const hasPrometheus = () => spawnSync("prometheus", ["--version"]).status === 0;

/** `promtool check metrics` (the exposition read from stdin): its exit code and what it said. */
export function promtoolCheckMetrics(text: string): { status: number | null; output: string } {
  const r = spawnSync("promtool", ["check", "metrics"], { input: text, encoding: "utf8" });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

export interface Prometheus {
  /** Runs an instant query; the result vector. */
  query(q: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]>;
  close(): Promise<void>;
}

/** Real Prometheus (Debian's package) scraping `targets` (host:port) every second. */
export async function startPrometheus(targets: string[]): Promise<Prometheus> {
  const dir = mkdtempSync(join(tmpdir(), "switchboard-prometheus-"));
  const port = await freePort();
  const config = [
    "global:",
    "  scrape_interval: 1s",
    "  scrape_timeout: 900ms",
    "scrape_configs:",
    "  - job_name: switchboard",
    "    static_configs:",
    `      - targets: [${targets.map((t) => JSON.stringify(t)).join(", ")}]`,
  ].join("\n");
  writeFileSync(join(dir, "prometheus.yml"), config);
  const child: ChildProcess = spawn(
    "prometheus",
    [
      `--config.file=${join(dir, "prometheus.yml")}`,
      `--storage.tsdb.path=${join(dir, "data")}`,
      `--web.listen-address=127.0.0.1:${port}`,
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  let log = "";
  child.stderr?.on("data", (c: Buffer) => (log += c.toString()));
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    const ready = await fetch(`${base}/-/ready`).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) break;
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`prometheus did not start: ${log}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    query: async (q) => {
      const r = await fetch(`${base}/api/v1/query?query=${encodeURIComponent(q)}`);
      const body = (await r.json()) as { data?: { result?: [] } };
      return body.data?.result ?? [];
    },
    close: async () => {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
