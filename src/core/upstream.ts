import { Pool, errors as undiciErrors } from "undici";
import { isObject } from "./json.js";
import type { Logger } from "./logger.js";

/** Which JSON envelope an upstream wraps its answers in. */
export type Envelope = "errors-data" | "ok-data";

export interface UpstreamOptions {
  /** Service name used in messages: "build", "sizing", "drones". */
  service: string;
  baseUrl: string;
  /** Headers sent with every request (the auth header). */
  headers: Record<string, string>;
  envelope: Envelope;
  timeoutMs: number;
  logger: Logger;
  maxBodyBytes?: number;
  /** Retries of a request that changes nothing (GET). Writes are never retried. */
  maxRetries?: number;
  /** Upper bound on how long a Retry-After is honoured, in ms. */
  maxRetryAfterMs?: number;
  /** Which environment variable holds the key, for the 401 hint. */
  keyVariable: string;
  /** Scrubs known secrets from upstream text before it is cut into a snippet (a cut secret cannot be found later). */
  redact?: (text: string) => string;
  /** Connection pools shared by every client of the process (hosted mode builds one client per tenant). */
  pools?: PoolCache;
  /** Set when the caller sent no key for this service: every request fails with this, before anything is sent. */
  missingKey?: string;
}

/**
 * One undici pool per upstream origin for the whole process. In hosted mode each tenant has its own
 * clients (its own key), but they all reach the same few hosts: sharing the sockets keeps a
 * thousand tenants from opening a thousand pools.
 */
export class PoolCache {
  private readonly pools = new Map<string, Pool>();

  get(origin: string, timeoutMs: number): Pool {
    const key = `${origin}|${timeoutMs}`;
    let pool = this.pools.get(key);
    if (!pool) {
      pool = newPool(origin, timeoutMs);
      this.pools.set(key, pool);
    }
    return pool;
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.pools.values()].map((p) => p.close()));
    this.pools.clear();
  }
}

function newPool(origin: string, timeoutMs: number): Pool {
  return new Pool(origin, { connections: 32, connectTimeout: timeoutMs, headersTimeout: timeoutMs, bodyTimeout: timeoutMs, keepAliveTimeout: 30_000 });
}

export interface RequestOptions {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  path: string;
  query?: Record<string, string | number | boolean | undefined | null>;
  body?: unknown;
  signal?: AbortSignal;
  /** Changes nothing upstream (default: only GET). A POST that only reads says so here. */
  idempotent?: boolean;
  /** A multipart/form-data body (file uploads); sent as is, with its own content type. */
  form?: FormData;
}

/** The envelope's data plus the response headers (paging metadata such as X-Total-Count). */
export interface UpstreamResponse<T> {
  data: T;
  headers: Record<string, string | string[] | undefined>;
}

export interface RequestInfo {
  method: string;
  path: string;
  /** Safe to repeat: retried on transient failures, never reported as "may have taken effect". */
  idempotent: boolean;
}

/** Kinds of failure that are not the upstream's own error answer. */
export type TransportFailure = "TIMEOUT" | "UNREACHABLE" | "NON_JSON_RESPONSE" | "BODY_TOO_LARGE" | "CANCELLED" | "HTTP_ERROR";

/** One error type for every upstream failure: HTTP status, errorCode and message. */
export class UpstreamError extends Error {
  constructor(
    readonly service: string,
    readonly status: number | undefined,
    readonly code: string,
    message: string,
    readonly request: RequestInfo,
    /** True when a write may have reached the upstream before the failure (no answer read). */
    readonly outcomeUnknown = false,
    /** The upstream's Retry-After, when it sent one. */
    readonly retryAfterMs?: number,
    /** The upstream's structured detail (the build service's `errorDetails`), passed through. */
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = "UpstreamError";
  }

  /** Transient failures are worth retrying (for reads) or polling through (for waits). */
  get transient(): boolean {
    if (this.code === "TIMEOUT" || this.code === "UNREACHABLE" || this.code === "NON_JSON_RESPONSE") return true;
    return this.status === 429 || (this.status !== undefined && this.status >= 500);
  }
}

const DEFAULT_MAX_BODY = 8 * 1024 * 1024;

/**
 * A pooled undici client for one upstream. It owns the auth header, timeouts, the envelope,
 * retries of reads, and turning every failure into an UpstreamError.
 */
export class UpstreamClient {
  /** Made on the first request, so that nothing of undici runs before a tool needs the upstream. */
  private poolInstance?: Pool;
  private readonly basePath: string;
  private readonly origin: string;

  constructor(private readonly options: UpstreamOptions) {
    const url = new URL(options.baseUrl);
    this.origin = url.origin;
    this.basePath = url.pathname.replace(/\/+$/, "");
  }

  private get pool(): Pool {
    if (this.options.pools) return this.options.pools.get(this.origin, this.options.timeoutMs);
    return (this.poolInstance ??= newPool(this.origin, this.options.timeoutMs));
  }

  get service(): string {
    return this.options.service;
  }

  async close(): Promise<void> {
    await this.poolInstance?.close();
  }

  /** Sends a request and returns the envelope's `data`. */
  async request<T = unknown>(req: RequestOptions): Promise<T> {
    return (await this.requestFull<T>(req)).data;
  }

  /** Sends a request and returns the envelope's `data` with the response headers. */
  async requestFull<T = unknown>(req: RequestOptions): Promise<UpstreamResponse<T>> {
    const retries = isIdempotent(req) ? (this.options.maxRetries ?? 2) : 0;
    for (let attempt = 0; ; attempt++) {
      try {
        return (await this.once(req)) as UpstreamResponse<T>;
      } catch (err) {
        if (!(err instanceof UpstreamError) || !err.transient || attempt >= retries || req.signal?.aborted) throw err;
        const { retryAfterMs } = err;
        // A wait longer than the bound is the caller's decision: fail now and say how long.
        if (retryAfterMs !== undefined && retryAfterMs > this.retryAfterCap) throw err;
        const delay = this.retryDelay(attempt, retryAfterMs);
        this.options.logger.debug("retrying upstream read", { service: this.service, path: req.path, attempt: attempt + 1, delayMs: delay, code: err.code });
        await sleep(delay, req.signal);
      }
    }
  }

  private get retryAfterCap(): number {
    return this.options.maxRetryAfterMs ?? 3000;
  }

  private retryDelay(attempt: number, retryAfterMs: number | undefined): number {
    const cap = this.retryAfterCap;
    if (retryAfterMs !== undefined) return Math.min(retryAfterMs, cap);
    const base = 150 * 2 ** attempt;
    return Math.min(cap, base + Math.random() * base);
  }

  private async once(req: RequestOptions): Promise<UpstreamResponse<unknown>> {
    const path = this.basePath + req.path + queryString(req.query);
    const where: RequestInfo = { method: req.method, path: req.path, idempotent: isIdempotent(req) };
    if (this.options.missingKey) throw new UpstreamError(this.service, undefined, "MISSING_CREDENTIALS", this.options.missingKey, { ...where, idempotent: true });
    const headers: Record<string, string> = { accept: "application/json", ...this.options.headers };
    let body: string | Buffer | undefined;
    if (req.form) {
      // undici's pool takes bytes: let the platform encode the multipart body and its boundary.
      const encoded = new Response(req.form);
      headers["content-type"] = encoded.headers.get("content-type") ?? "multipart/form-data";
      body = Buffer.from(await encoded.arrayBuffer());
    } else if (req.body !== undefined) {
      body = JSON.stringify(req.body);
      headers["content-type"] = "application/json";
    }
    const started = performance.now();
    // undici's own timeouts tick at about 500 ms; this deadline is exact and covers the whole exchange.
    const deadline = AbortSignal.timeout(this.options.timeoutMs);
    const signal = req.signal ? AbortSignal.any([req.signal, deadline]) : deadline;
    let status: number;
    let contentType: string;
    let text: string;
    let retryAfter: string | undefined;
    let responseHeaders: UpstreamResponse<unknown>["headers"] = {};
    try {
      const res = await this.pool.request({ path, method: req.method, headers, body, signal });
      status = res.statusCode;
      responseHeaders = res.headers;
      contentType = String(res.headers["content-type"] ?? "");
      retryAfter = res.headers["retry-after"] as string | undefined;
      text = await readCapped(res.body, this.options.maxBodyBytes ?? DEFAULT_MAX_BODY);
    } catch (err) {
      throw this.transportError(err, where, req, deadline.aborted && !req.signal?.aborted);
    } finally {
      this.options.logger.debug("upstream request", { service: this.service, method: req.method, path: req.path, ms: Math.round(performance.now() - started) });
    }
    const error = this.parse(status, contentType, text, where);
    if (error instanceof UpstreamError) {
      // A write that reached the upstream but whose answer cannot be read may have taken effect.
      const unknown = !where.idempotent && (error.code === "NON_JSON_RESPONSE" || error.code === "HTTP_ERROR");
      const retryAfterMs = retryAfter === undefined ? undefined : parseRetryAfter(retryAfter);
      const message = retryAfterMs === undefined ? error.message : `${error.message} (Retry-After: ${Math.ceil(retryAfterMs / 1000)} s)`;
      throw new UpstreamError(error.service, error.status, error.code, message, where, unknown, retryAfterMs, error.details);
    }
    return { data: error.data, headers: responseHeaders };
  }

  private parse(status: number, contentType: string, text: string, where: RequestInfo): UpstreamError | { data: unknown } {
    const service = this.service;
    let json: unknown;
    try {
      json = text.length ? JSON.parse(text) : undefined;
    } catch {
      const kind = contentType.includes("json") ? "malformed JSON" : `a non-JSON body (${contentType || "no content type"})`;
      if (status >= 200 && status < 300) {
        return new UpstreamError(service, status, "NON_JSON_RESPONSE", `The ${service} service answered HTTP ${status} with ${kind}.`, where);
      }
      return new UpstreamError(service, status, "HTTP_ERROR", `The ${service} service answered HTTP ${status} with ${kind}: ${this.snippet(text)}`, where);
    }
    if (status === 401) {
      const body = isObject(json) ? json : {};
      const message = str(body.error) ?? (isObject(body.error) ? str(body.error.message) : undefined) ?? str(body.message) ?? "Unauthorized";
      return new UpstreamError(service, 401, "UNAUTHORIZED", message, where);
    }
    const failure = envelopeFailure(this.options.envelope, json);
    if (failure || status < 200 || status >= 300) {
      const code = failure?.code ?? `HTTP_${status}`;
      const message = failure?.message ?? `The ${service} service answered HTTP ${status}.`;
      return new UpstreamError(service, status, code, message, where, false, undefined, failure?.details);
    }
    if (!isObject(json) || !("data" in json)) {
      return new UpstreamError(service, status, "NON_JSON_RESPONSE", `The ${service} service answered without the expected envelope: ${this.snippet(text)}`, where);
    }
    return { data: json.data };
  }

  /** A short, flattened piece of an unexpected body, scrubbed of known secrets before it is cut. */
  private snippet(text: string): string {
    return snippet(this.options.redact ? this.options.redact(text) : text);
  }

  private transportError(err: unknown, where: RequestInfo, req: RequestOptions, timedOut: boolean): UpstreamError {
    const write = !where.idempotent;
    if (err instanceof UpstreamError) return err;
    if (req.signal?.aborted) return new UpstreamError(this.service, undefined, "CANCELLED", "The request was cancelled by the client.", where, write);
    const e = err as Error & { code?: string };
    if (
      timedOut ||
      e instanceof undiciErrors.HeadersTimeoutError ||
      e instanceof undiciErrors.BodyTimeoutError ||
      e instanceof undiciErrors.ConnectTimeoutError ||
      e.code === "UND_ERR_CONNECT_TIMEOUT"
    ) {
      return new UpstreamError(this.service, undefined, "TIMEOUT", `The ${this.service} service did not answer within ${this.options.timeoutMs} ms.`, where, write);
    }
    if (e.code === "BODY_TOO_LARGE") {
      return new UpstreamError(this.service, undefined, "BODY_TOO_LARGE", e.message, where, write);
    }
    return new UpstreamError(this.service, undefined, "UNREACHABLE", `Could not reach the ${this.service} service (${e.code ?? e.message}).`, where, write);
  }
}

/** An upstream with the `{ok, data}` envelope and `Authorization: Bearer <key>` (the sizing and drone APIs). */
export function bearerClient(options: { service: string; baseUrl: string; apiKey: string | undefined; keyVariable: string; timeoutMs: number; logger: Logger; redact?: (text: string) => string; pools?: PoolCache; missingKey?: string }): UpstreamClient {
  const { apiKey, ...rest } = options;
  return new UpstreamClient({ ...rest, headers: { authorization: `Bearer ${apiKey ?? ""}` }, envelope: "ok-data" });
}

function isIdempotent(req: RequestOptions): boolean {
  return req.idempotent ?? req.method === "GET";
}

function envelopeFailure(envelope: Envelope, json: unknown): { code?: string; message?: string; details?: Record<string, unknown> } | undefined {
  if (!isObject(json)) return undefined;
  if (envelope === "errors-data") {
    const errors = json.errors;
    if (errors === null || errors === undefined) return undefined;
    if (isObject(errors)) return { code: str(errors.errorCode), message: str(errors.errorMessage), details: isObject(errors.errorDetails) ? errors.errorDetails : undefined };
    return { message: String(errors) };
  }
  if (json.ok !== false) return undefined;
  // The failure shape of the {ok, data} services is not shown in their specs: accept the common ones.
  const e = json.error;
  if (isObject(e)) return { code: str(e.code) ?? str(e.errorCode), message: str(e.message) ?? str(e.errorMessage) };
  return { code: str(json.code), message: str(e) ?? str(json.message) };
}

function str(v: unknown): string | undefined {
  return typeof v === "string" && v.length > 0 ? v : undefined;
}


function snippet(text: string): string {
  const flat = text.replace(/<[^>]*>/g, " ").replace(/\s+/g, " ").trim();
  return flat.length > 160 ? `${flat.slice(0, 160)}…` : flat || "(empty)";
}

function queryString(query: RequestOptions["query"]): string {
  if (!query) return "";
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined && value !== null) params.set(key, String(value));
  }
  const s = params.toString();
  return s ? `?${s}` : "";
}

async function readCapped(body: AsyncIterable<Buffer> & { destroy?: () => void }, max: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > max) {
      body.destroy?.();
      throw Object.assign(new Error(`The upstream answer exceeded ${Math.round(max / 1024)} KiB and was not read.`), { code: "BODY_TOO_LARGE" });
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

function parseRetryAfter(value: string): number | undefined {
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** Resolves after `ms`, or rejects as soon as the signal aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason ?? new Error("aborted"));
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason ?? new Error("aborted"));
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
