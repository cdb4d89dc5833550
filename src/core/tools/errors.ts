import { type RequestInfo, UpstreamError } from "../upstream/upstream.js";
import { ENV } from "../base/settings.js";

/**
 * Per-service advice keyed by errorCode: what the caller should do next. A function answers for
 * the request that failed, when one code means different things on different endpoints.
 */
export type HintTable = Record<string, string | ((request: RequestInfo) => string)>;

/** What errors.ts needs to know about each service to advise on its failures. */
export interface ServiceAdvice {
  keyVariable: string;
  hints: HintTable;
}

/**
 * Turns any failure into one message for an isError result: what happened (service, HTTP
 * status, errorCode, the upstream's words and details) and what to do next.
 */
export function describeError(err: unknown, advice: ReadonlyMap<string, ServiceAdvice>, verify?: string): string {
  if (err instanceof UpstreamError) return describeUpstream(err, advice.get(err.service), verify);
  if (err instanceof Error && err.name === "ToolError") return err.message;
  if (isAbort(err)) return "Cancelled by the client; nothing more will be done for this call.";
  const message = err instanceof Error ? err.message : String(err);
  return (
    `Internal error in switchboard-mcp: ${message}. This is a bug; please report it with the tool name and ` +
    "arguments."
  );
}

export function isAbort(err: unknown): boolean {
  return (
    err instanceof Error &&
    (err.name === "AbortError" || /cancelled by the client|task cancelled|server shutting down/i.test(err.message))
  );
}

function describeUpstream(err: UpstreamError, advice: ServiceAdvice | undefined, verify?: string): string {
  const status = err.status === undefined ? "no HTTP answer" : `HTTP ${err.status}`;
  const details =
    err.details && Object.keys(err.details).length
      ? `\nDetails: ${Object.entries(err.details)
          .map(([k, v]) => `${k} ${JSON.stringify(v)}`)
          .join(", ")}`
      : "";
  const head =
    `The ${err.service} service failed (${status}, ${err.code}) on ${err.request.method} ` +
    `${err.request.path}: ${err.message}${details}`;
  const next = nextStep(err, advice, verify);
  return next ? `${head}\nNext step: ${next}` : head;
}

function nextStep(err: UpstreamError, advice: ServiceAdvice | undefined, verify?: string): string | undefined {
  const hint = advice?.hints[err.code];
  const specific = typeof hint === "function" ? hint(err.request) : hint;
  if (specific) return specific;
  const write = !err.request.idempotent;
  if (err.code === "CANCELLED") return "none; the call was cancelled.";
  if (write && (err.outcomeUnknown || (err.status !== undefined && err.status >= 500))) {
    const check = verify ?? "read the resource again";
    return (
      "this request changes state or spends credits, so it was not retried automatically and may or may not " +
      `have taken effect. Check first (${check}), then retry only if it did not.`
    );
  }
  if (err.status === 401)
    return (
      `the API key was rejected: check ${advice?.keyVariable ?? "the service's API key variable"} (and that ` +
      "it belongs to this service)."
    );
  if (err.status === 403)
    return "the account is not allowed to do this (plan limit or permissions); check the account's plan.";
  if (err.status === 404) return "check the identifier; list the items to find a valid one.";
  if (err.status === 429) {
    const wait =
      err.retryAfterMs !== undefined ? `${Math.ceil(err.retryAfterMs / 1000)} s (its Retry-After)` : "a minute";
    return `the service is rate-limiting; wait ${wait} before trying again.`;
  }
  switch (err.code) {
    case "TIMEOUT":
      return `the service is slow or down; try again shortly, or raise ${ENV.upstreamTimeoutMs}.`;
    case "UNREACHABLE":
      return "check the service's base URL and network access, then try again.";
    case "NON_JSON_RESPONSE":
    case "HTTP_ERROR":
      return (
        "the service answered something other than its JSON API (an outage page or a proxy); " +
        "try again shortly and check the base URL."
      );
    case "BODY_TOO_LARGE":
      return "ask for less (use the tool's paging or filter arguments).";
    case "BUSY":
      return (
        "this server is reading many large upstream answers at once; try again in a few seconds, " +
        `ask for less (a smaller page), or raise ${ENV.upstreamBodyBudgetBytes}.`
      );
    case "MISSING_CREDENTIALS":
      return (
        "send your own key for this service in the header named above, then call again; " + "nothing was sent upstream."
      );
  }
  if (err.status !== undefined && err.status >= 500) return "the service had an internal failure; try again shortly.";
  if (err.status === 400) return "correct the argument the message names and call again.";
  return undefined;
}
