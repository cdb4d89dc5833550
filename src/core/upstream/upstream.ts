import { type Pool, errors as undiciErrors } from "undici";
import { mib, parseCost, readBudgeted } from "./answer-body.js";
import { BudgetError, type ByteBudget } from "./budget.js";
import type { Logger } from "../base/logger.js";
import { ENV, settingDefault } from "../base/settings.js";
import { plainPath } from "../base/path-id.js";
import { telemetry } from "../base/telemetry.js";
import { newPool, type PoolCache } from "./pool.js";
import { type Envelope, type ReplyFormat, REPLY_FORMATS, readReply } from "./reply-format.js";
import { parseRetryAfter, retryDelay, sleep } from "./retry.js";
import { RequestAbort } from "./request-abort.js";
import { type RequestInfo, UpstreamError } from "./upstream-error.js";

// The upstream's parts, named where every service and core module already imports them from.
export { PoolCache } from "./pool.js";
export { bearerAuth, type Envelope, REPLY_FORMATS, type ReplyFormat } from "./reply-format.js";
export { type RequestInfo, UpstreamError } from "./upstream-error.js";

export interface UpstreamOptions {
  /** Service name used in messages: "build", "sizing", "drones". */
  service: string;
  baseUrl: string;
  /** Headers sent with every request (the auth header). */
  headers: Record<string, string>;
  envelope: Envelope;
  /**
   * Headers for one request, asked for at each attempt (a trace context, say); the process sets it,
   * not the service. The client's own headers win over these and the request's.
   */
  headersFor?(request: RequestInfo): Record<string, string> | undefined;
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
  /** Told when the upstream answers 2xx: it accepted the key (per-user keys get their own quota then). */
  onAccepted?: () => void;
  /**
   * Bytes of upstream answers being read at once: the process's one budget (ENV.upstreamBodyBudgetBytes,
   * made by server.ts createApp), since 16-32 calls in flight per service, each up to 8 MiB, would
   * otherwise all sit in memory together.
   */
  bodyBudget: ByteBudget;
  /**
   * How long a read waits for room in that budget before it fails BUSY (default 2 s; a write's
   * answer waits up to its deadline).
   */
  bodyBudgetWaitMs?: number;
}

interface RequestOptions {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  path: string;
  query?: Record<string, string | number | boolean | undefined | null>;
  body?: unknown;
  signal?: AbortSignal;
  /** Changes nothing upstream (default: only GET). A POST that only reads says so here. */
  idempotent?: boolean;
  /** A multipart/form-data body (file uploads); sent as is, with its own content type. */
  form?: FormData;
  /** Retries of a transient failure of a read (default: the client's). 0 for a read that uses up a quota. */
  retries?: number;
  /** Headers of this request only (an Idempotency-Key); the client's own (its key) cannot be replaced. */
  headers?: Record<string, string>;
}

/** The envelope's data plus the response headers (paging metadata such as X-Total-Count). */
interface UpstreamResponse<T> {
  data: T;
  headers: Record<string, string | string[] | undefined>;
  status?: number;
}

const DEFAULT_MAX_BODY = 8 * 1024 * 1024;

export const DEFAULT_UPSTREAM_BODY_BUDGET = settingDefault("upstreamBodyBudgetBytes");

/** What every upstream client of the process shares, made once by server.ts createApp. */
export interface UpstreamShared {
  pools: PoolCache;
  bodyBudget: ByteBudget;
}
const DEFAULT_BUDGET_WAIT_MS = 2000;
/** Room a request waits for before it is sent: without it not even a small answer could be read. */
const ROOM_TO_SEND = 64 * 1024;
/**
 * After the deadline, the turns of the event loop (this long at most) in which an answer already on
 * the socket is still read.
 */
const DEADLINE_GRACE_MS = 250;

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
  async requestFull<T = unknown>(marked: RequestOptions): Promise<UpstreamResponse<T>> {
    // Telemetry names the route from the marked path (ids as `{id}`); the request carries the plain one.
    const req = { ...marked, path: plainPath(marked.path) };
    const retries = isIdempotent(req) ? (req.retries ?? this.options.maxRetries ?? 2) : 0;
    for (let attempt = 0; ; attempt++) {
      const span = telemetry.upstream(this.service, req.method, marked.path, attempt, req.signal);
      try {
        const answer = (await this.once(req, span.headers)) as UpstreamResponse<T>;
        span.end({ status: answer.status, credits: this.format.credits?.({ ...req, data: answer.data }) });
        return answer;
      } catch (err) {
        span.end(err instanceof UpstreamError ? { status: err.status, code: err.code } : { code: "error" });
        if (!(err instanceof UpstreamError) || !err.transient || attempt >= retries || req.signal?.aborted) throw err;
        const { retryAfterMs } = err;
        // A wait longer than the bound is the caller's decision: fail now and say how long.
        if (retryAfterMs !== undefined && retryAfterMs > this.retryAfterCap) throw err;
        const delay = retryDelay(attempt, retryAfterMs, this.retryAfterCap);
        this.options.logger.debug("retrying upstream read", {
          service: this.service,
          path: req.path,
          attempt: attempt + 1,
          delayMs: delay,
          code: err.code,
        });
        await sleep(delay, req.signal);
      }
    }
  }

  private get format(): ReplyFormat {
    const { envelope } = this.options;
    return typeof envelope === "string" ? REPLY_FORMATS[envelope] : envelope;
  }

  private get retryAfterCap(): number {
    return this.options.maxRetryAfterMs ?? 3000;
  }

  private async once(req: RequestOptions, trace: Record<string, string>): Promise<UpstreamResponse<unknown>> {
    const path = this.basePath + req.path + queryString(req.query);
    const where: RequestInfo = { method: req.method, path: req.path, idempotent: isIdempotent(req) };
    if (this.options.missingKey)
      throw new UpstreamError(this.service, undefined, "MISSING_CREDENTIALS", this.options.missingKey, {
        ...where,
        idempotent: true,
      });
    const headers: Record<string, string> = {
      accept: "application/json",
      ...this.options.headersFor?.(where),
      ...req.headers,
      ...trace,
      ...this.options.headers,
    };
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
    const budget = this.options.bodyBudget;
    const waitMs = this.options.bodyBudgetWaitMs ?? DEFAULT_BUDGET_WAIT_MS;
    // Nothing is sent while the budget has no room for even a small answer: safe for a write too.
    try {
      await budget.room(ROOM_TO_SEND, waitMs, req.signal);
    } catch (err) {
      if (err instanceof BudgetError) throw this.busy(where, budget, false);
      throw this.transportError(err, where, req, false);
    }
    const timeoutMs = this.options.timeoutMs;
    const started = performance.now();
    // The deadline covers the whole exchange, exactly (undici's own timers tick at about 500 ms).
    // When it passes while this process was busy (another answer's parse) and this answer already
    // sits on the socket, the next turns of the event loop read it: an answer that arrived is used,
    // never dropped and asked for again.
    const deadline = new RequestAbort();
    let progress = 0;
    let received = false;
    const expire = (seen: number, since: number) => {
      if (received) return;
      if (seen < 0 || (progress !== seen && performance.now() - since < DEADLINE_GRACE_MS)) {
        const mark = progress;
        return void setImmediate(() => expire(mark, since));
      }
      deadline.abort(new DOMException(`The deadline of ${timeoutMs} ms passed`, "TimeoutError"));
    };
    const timer = setTimeout(() => expire(-1, performance.now()), timeoutMs);
    // The caller's cancellation aborts the same controller: one signal per request, not AbortSignal.any's.
    const cancelled = () => deadline.abort(req.signal?.reason);
    if (req.signal?.aborted) cancelled();
    else req.signal?.addEventListener("abort", cancelled, { once: true });
    const signal = deadline;
    const hold = { bytes: 0, waiting: false };
    let status: number;
    let contentType: string;
    let bytes: Buffer;
    let retryAfter: string | undefined;
    let responseHeaders: UpstreamResponse<unknown>["headers"] = {};
    try {
      try {
        // undici's own header and body timers would fire before the grace above: the deadline is ours.
        const undiciTimeout = timeoutMs + DEADLINE_GRACE_MS + 1000;
        const res = await this.pool.request({
          path,
          method: req.method,
          headers,
          body,
          signal: signal as unknown as AbortSignal,
          headersTimeout: undiciTimeout,
          bodyTimeout: undiciTimeout,
        });
        progress++;
        status = res.statusCode;
        if (status >= 200 && status < 300) this.options.onAccepted?.();
        responseHeaders = res.headers;
        contentType = String(res.headers["content-type"] ?? "");
        retryAfter = res.headers["retry-after"] as string | undefined;
        const length = Number(res.headers["content-length"]);
        bytes = await readBudgeted(res.body, {
          max: this.options.maxBodyBytes ?? DEFAULT_MAX_BODY,
          contentLength: Number.isSafeInteger(length) && length >= 0 ? length : undefined,
          budget,
          // A write's answer is what says whether it took effect: it waits longer than a read.
          waitMs: where.idempotent ? waitMs : Math.max(waitMs, timeoutMs),
          signal,
          hold,
          onChunk: () => progress++,
        });
        received = true;
      } catch (err) {
        if (err instanceof BudgetError && err.reason === "too-large") throw this.tooLargeForBudget(where, budget, err);
        // Waiting for room, not for the upstream, when the wait or the deadline ended: the cause is here.
        if (err instanceof BudgetError || (hold.waiting && !req.signal?.aborted)) throw this.busy(where, budget, true);
        throw this.transportError(err, where, req, deadline.aborted && !req.signal?.aborted);
      } finally {
        clearTimeout(timer);
        req.signal?.removeEventListener("abort", cancelled);
        this.options.logger.debug("upstream request", {
          service: this.service,
          method: req.method,
          path: req.path,
          ms: Math.round(performance.now() - started),
        });
      }
      // The whole answer is here: it is parsed once, whatever the clock says now. A parse that
      // would need more than the whole budget is refused, not attempted (and not retried).
      const cost = parseCost(bytes);
      if (cost > budget.total) {
        throw new UpstreamError(
          this.service,
          undefined,
          "BODY_TOO_LARGE",
          `The ${this.service} service's answer (${mib(bytes.length)} of JSON) ` +
            `would take about ${mib(cost)} of memory to parse, more than this server parses at once ` +
            `(${ENV.upstreamBodyBudgetBytes}, ${mib(budget.total)}); it was not parsed.`,
          where,
          !where.idempotent,
        );
      }
      const text = bytes.toString("utf8");
      bytes = Buffer.alloc(0);
      const error = readReply({
        service: this.service,
        status,
        contentType,
        text,
        where,
        format: this.format,
        redact: this.options.redact,
      });
      if (error instanceof UpstreamError) {
        // A write that reached the upstream but whose answer cannot be read may have taken effect.
        const unknown = !where.idempotent && (error.code === "NON_JSON_RESPONSE" || error.code === "HTTP_ERROR");
        const retryAfterMs = retryAfter === undefined ? undefined : parseRetryAfter(retryAfter);
        const message =
          retryAfterMs === undefined
            ? error.message
            : `${error.message} (Retry-After: ${Math.ceil(retryAfterMs / 1000)} s)`;
        throw new UpstreamError(
          error.service,
          error.status,
          error.code,
          message,
          where,
          unknown,
          retryAfterMs,
          error.details,
        );
      }
      return { data: error.data, headers: responseHeaders, status };
    } finally {
      budget.release(hold.bytes);
    }
  }

  /** No room in the upstream body budget within the wait: before sending (nothing sent) or while reading the answer. */
  private busy(where: RequestInfo, budget: ByteBudget, sent: boolean): UpstreamError {
    const cause =
      "upstream answers being read at once already fill this server's budget " +
      `(${ENV.upstreamBodyBudgetBytes}, ${mib(budget.total)})`;
    let message: string;
    if (!sent) message = `Nothing was sent to the ${this.service} service: ${cause}. Try again in a few seconds.`;
    else if (where.idempotent)
      message = `The ${this.service} service's answer was not read: ${cause}. Try again in a few seconds.`;
    else message = `The request reached the ${this.service} service, but its answer was not read: ${cause}.`;
    return new UpstreamError(this.service, undefined, "BUSY", message, where, sent && !where.idempotent);
  }

  private tooLargeForBudget(where: RequestInfo, budget: ByteBudget, err: BudgetError): UpstreamError {
    return new UpstreamError(
      this.service,
      undefined,
      "BODY_TOO_LARGE",
      `The ${this.service} service's answer (${mib(err.bytes)}) is larger than this server reads at once ` +
        `(${ENV.upstreamBodyBudgetBytes}, ${mib(budget.total)}); it was not read.`,
      where,
      !where.idempotent,
    );
  }

  private transportError(err: unknown, where: RequestInfo, req: RequestOptions, timedOut: boolean): UpstreamError {
    const write = !where.idempotent;
    if (err instanceof UpstreamError) return err;
    if (req.signal?.aborted)
      return new UpstreamError(
        this.service,
        undefined,
        "CANCELLED",
        "The request was cancelled by the client.",
        where,
        write,
      );
    const e = err as Error & { code?: string };
    if (
      timedOut ||
      e instanceof undiciErrors.HeadersTimeoutError ||
      e instanceof undiciErrors.BodyTimeoutError ||
      e instanceof undiciErrors.ConnectTimeoutError ||
      e.code === "UND_ERR_CONNECT_TIMEOUT"
    ) {
      return new UpstreamError(
        this.service,
        undefined,
        "TIMEOUT",
        `The ${this.service} service did not answer within ${this.options.timeoutMs} ms.`,
        where,
        write,
      );
    }
    if (e.code === "BODY_TOO_LARGE") {
      return new UpstreamError(this.service, undefined, "BODY_TOO_LARGE", e.message, where, write);
    }
    return new UpstreamError(
      this.service,
      undefined,
      "UNREACHABLE",
      `Could not reach the ${this.service} service (${e.code ?? e.message}).`,
      where,
      write,
    );
  }
}

function isIdempotent(req: RequestOptions): boolean {
  return req.idempotent ?? req.method === "GET";
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
