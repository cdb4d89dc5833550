import type { IncomingMessage, Server, ServerOptions, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { ByteBudget } from "../upstream/budget.js";
import type { Logger } from "../base/logger.js";
import { telemetry } from "../base/telemetry.js";
import { BODY_DEADLINE_MS, closeAfterAnswer, rpcError, type BodyPolicy } from "./guards.js";
import { ENV, settingDefault } from "../base/settings.js";

/**
 * What a client on the open internet can make the HTTP transport hold. Every field has a default
 * (HTTP_LIMIT_DEFAULTS); the server's variables set them (docs/security.md lists them).
 */
export interface HttpLimitOptions {
  /** Open connections at once (ENV.maxConnections); a socket past it is closed as soon as it is accepted. */
  maxConnections?: number;
  /** A client that has not sent its request line and headers by then is dropped with 408 (ENV.headersTimeoutMs). */
  headersTimeoutMs?: number;
  /** A request body not received in full by then is dropped with 408. */
  bodyDeadlineMs?: number;
  /**
   * With a token or OAuth: requests without a valid one answered per second (ENV.unauthRate), 401
   * each; past it (after a burst of `unauthBurst`, default twice the rate) 429 with Retry-After.
   * Both close the connection.
   */
  unauthRatePerSec?: number;
  unauthBurst?: number;
  /** Request-body bytes held at once across all connections (ENV.bodyBudgetBytes); past it 503 and close. */
  bodyBudgetBytes?: number;
}

export const HTTP_LIMIT_DEFAULTS = {
  maxConnections: settingDefault("maxConnections"),
  headersTimeoutMs: settingDefault("headersTimeoutMs"),
  bodyDeadlineMs: BODY_DEADLINE_MS,
  unauthRatePerSec: settingDefault("unauthRate"),
  bodyBudgetBytes: settingDefault("bodyBudgetBytes"),
} as const;

export interface HttpLimitStats {
  /** Sockets open now. */
  connections: number;
  /** Sockets closed at accept because the cap was reached. */
  droppedConnections: number;
  /** Request-body bytes counted in the budget now (0 when no upload is in progress). */
  bodyBytes: number;
  /** Requests answered 401 (with OAuth also 503: the issuer could not be reached). */
  unauthorized: number;
  /** Unauthenticated requests answered 429 (over ENV.unauthRate). */
  throttled: number;
}

interface HttpLimits {
  /** Options for node's createServer: header timeout, no total request timeout (long waits stream for many minutes). */
  readonly serverOptions: ServerOptions;
  /** The connection cap and its accounting, on the server about to listen. */
  apply(server: Server): void;
  /** Every request: a connection closed when an answer went out before its body was read. */
  track(req: IncomingMessage, res: ServerResponse): void;
  /** Every request body's deadline and the byte budget all bodies share (readJson). */
  readonly bodyPolicy: BodyPolicy;
  /** Answers a request without a valid token at almost no cost: 401 (or 429 over the rate), then close. */
  refuseUnauthenticated(res: ServerResponse): void;
  /** The same rate for a gate that checks credentials itself, at a cost (OAuth: a signature, an introspection). */
  readonly unauthenticated: UnauthThrottle;
  stats(): HttpLimitStats;
}

/**
 * ENV.unauthRate for credentials whose check costs something: every request not known to be
 * authorized takes its share before the check, so a flood of bad tokens past the rate is answered
 * 429 without being checked; a request whose credentials turn out valid gives its share back.
 */
export interface UnauthThrottle {
  /** Takes one request's share; false once 429 (naming `retryWith`) has been sent, closing the connection. */
  take(res: ServerResponse, retryWith: string): boolean;
  /** The credentials were valid: authorized requests never draw on the rate. */
  refund(): void;
}

/** A token bucket: `rate` per second, at most `burst` at once. */
class TokenBucket {
  private tokens: number;
  private last = performance.now();

  constructor(
    private readonly rate: number,
    private readonly burst: number,
  ) {
    this.tokens = burst;
  }

  take(): boolean {
    const now = performance.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.rate);
    this.last = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  /** Gives back one token taken (never past the burst). */
  refund(): void {
    this.tokens = Math.min(this.burst, this.tokens + 1);
  }

  /** Whole seconds until the next token. */
  retryAfterSeconds(): number {
    return Math.max(1, Math.ceil((1 - this.tokens) / this.rate));
  }
}

export function createHttpLimits(options: HttpLimitOptions, logger: Logger): HttpLimits {
  const maxConnections = options.maxConnections ?? HTTP_LIMIT_DEFAULTS.maxConnections;
  const headersTimeout = options.headersTimeoutMs ?? HTTP_LIMIT_DEFAULTS.headersTimeoutMs;
  const deadlineMs = options.bodyDeadlineMs ?? HTTP_LIMIT_DEFAULTS.bodyDeadlineMs;
  const rate = options.unauthRatePerSec ?? HTTP_LIMIT_DEFAULTS.unauthRatePerSec;
  const bucket = new TokenBucket(rate, options.unauthBurst ?? Math.max(1, rate * 2));
  const bodyBudget = new ByteBudget(options.bodyBudgetBytes ?? HTTP_LIMIT_DEFAULTS.bodyBudgetBytes);
  const counts = { connections: 0, droppedConnections: 0, unauthorized: 0, throttled: 0 };
  let lastWarning = 0;
  const warn = (message: string, fields: Record<string, unknown>) => {
    // At most one line per 10 s: the warning must not become the attacker's amplifier.
    if (Date.now() - lastWarning < 10_000) return;
    lastWarning = Date.now();
    logger.warn(message, fields);
  };

  /** One request's share of the rate, or 429 (and a connection that closes after it). */
  const take = (res: ServerResponse, retryWith: string): boolean => {
    if (bucket.take()) return true;
    counts.throttled++;
    telemetry.add("caps", 1, { setting: ENV.unauthRate });
    warn("HTTP: requests without a valid token over the rate are answered 429", {
      ratePerSecond: rate,
      variable: ENV.unauthRate,
      throttled: counts.throttled,
    });
    closeAfterAnswer(res, { "retry-after": String(bucket.retryAfterSeconds()) });
    rpcError(res, 429, -32000, `Too many requests without a valid token; retry later with ${retryWith}`);
    return false;
  };

  const limits: HttpLimits = {
    serverOptions: {
      requestTimeout: 0,
      headersTimeout: headersTimeout,
      // node checks header (and request) deadlines on this interval, not per socket timer.
      connectionsCheckingInterval: Math.min(5_000, Math.max(100, Math.floor(headersTimeout / 4))),
    },
    apply(server) {
      // node closes a socket past the cap right at accept, before any parser or buffer is made for it.
      server.maxConnections = maxConnections;
      server.on("connection", (socket: Socket) => {
        counts.connections++;
        socket.once("close", () => counts.connections--);
      });
      server.on("drop", () => {
        counts.droppedConnections++;
        telemetry.add("caps", 1, { setting: ENV.maxConnections });
        warn("HTTP connection cap reached: new connections are closed at once", {
          maxConnections,
          variable: ENV.maxConnections,
          dropped: counts.droppedConnections,
        });
      });
    },
    bodyPolicy: { deadlineMs, budget: bodyBudget },
    track(req, res) {
      // An answer sent before the body was read (403, 404, 401): node would otherwise read and
      // discard the rest of the body on a kept-alive socket for as long as the client trickles it.
      res.once("finish", () => {
        if (!req.complete) req.destroy();
      });
    },
    refuseUnauthenticated(res) {
      if (!take(res, `Authorization: Bearer <${ENV.httpToken}>`)) return;
      counts.unauthorized++;
      closeAfterAnswer(res);
      return rpcError(res, 401, -32001, `Unauthorized: send Authorization: Bearer <${ENV.httpToken}>`, {
        "www-authenticate": 'Bearer realm="switchboard-mcp"',
      });
    },
    unauthenticated: {
      take: (res, retryWith) => {
        if (!take(res, retryWith)) return false;
        counts.unauthorized++;
        return true;
      },
      refund: () => {
        counts.unauthorized--;
        bucket.refund();
      },
    },
    stats: () => ({ ...counts, bodyBytes: bodyBudget.inUse }),
  };
  return limits;
}
