import type { Fault } from "./router.js";

/**
 * Ready-made misbehaviours for the sandbox's fault injection: what real upstreams do on a bad day.
 * Used by tests, the soak script and the /_sandbox/faults control endpoint.
 */
export const FAULTS = {
  /** An error page from a proxy or load balancer instead of the JSON API. */
  htmlError: (status: 500 | 502 | 503 = 502): Fault["action"] => ({
    kind: "respond",
    response: {
      status,
      raw: `<html><head><title>${status}</title></head><body><h1>${status} Bad Gateway</h1></body></html>`,
      headers: { "content-type": "text/html" },
    },
  }),
  rateLimited: (retryAfterSeconds = 1): Fault["action"] => ({
    kind: "respond",
    response: {
      status: 429,
      body: { error: "Too Many Requests" },
      headers: { "retry-after": String(retryAfterSeconds) },
    },
  }),
  slow: (ms: number): Fault["action"] => ({ kind: "delay", ms }),
  noAnswer: (): Fault["action"] => ({ kind: "hang" }),
  connectionReset: (): Fault["action"] => ({ kind: "reset" }),
  truncatedJson: (): Fault["action"] => ({
    kind: "respond",
    response: {
      status: 200,
      raw: '{"errors":null,"data":{"credits":12',
      headers: { "content-type": "application/json" },
    },
  }),
  malformedJson: (): Fault["action"] => ({
    kind: "respond",
    response: { status: 200, raw: "{data: nope,,}", headers: { "content-type": "application/json" } },
  }),
  wrongContentType: (): Fault["action"] => ({
    kind: "respond",
    response: { status: 200, raw: "OK", headers: { "content-type": "text/plain" } },
  }),
  oversized: (bytes = 12 * 1024 * 1024): Fault["action"] => ({
    kind: "respond",
    response: {
      status: 200,
      raw: `{"errors":null,"data":"${"x".repeat(bytes)}"}`,
      headers: { "content-type": "application/json" },
    },
  }),
  /**
   * A valid answer of about `bytes` made of tiny objects (`{"i":7}`): under the 8 MiB limit, but
   * JSON.parse expands such text many times over (bench/README.md, "Parse cost of an upstream answer").
   */
  tinyObjects: (bytes = 7_900_000): Fault["action"] => ({
    kind: "respond",
    response: {
      status: 200,
      raw: `{"ok":true,"errors":null,"data":[${tinyItems(Math.max(1, Math.floor(bytes / 8)))}]}`,
      headers: { "content-type": "application/json" },
    },
  }),
} as const;

type FaultName = keyof typeof FAULTS;

const tinyItems = (count: number) => Array.from({ length: count }, (_, i) => `{"i":${i % 10}}`).join(",");

/**
 * A fault described in JSON (control endpoint, or the faults setting at start):
 * `{ fault: "htmlError", arg: 503, method, path, times }`.
 */
export interface FaultSpec {
  fault: FaultName;
  arg?: number;
  method?: string;
  /** Exact path, or a regular expression when it starts and ends with `/`. */
  path?: string;
  times?: number;
}

export function faultFromSpec(spec: FaultSpec): Fault {
  const make = FAULTS[spec.fault] as ((arg?: number) => Fault["action"]) | undefined;
  if (!make) throw new Error(`unknown fault "${spec.fault}"; known: ${Object.keys(FAULTS).join(", ")}`);
  const path =
    spec.path && spec.path.length > 2 && spec.path.startsWith("/") && spec.path.endsWith("/")
      ? new RegExp(spec.path.slice(1, -1))
      : spec.path;
  return { method: spec.method, path, times: spec.times ?? 1, action: make(spec.arg) };
}
