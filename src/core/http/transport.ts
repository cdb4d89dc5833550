import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { createServer } from "node:http";
import { Server as NetServer, type AddressInfo } from "node:net";
import type { Logger } from "../base/logger.js";
import { isLoopbackHost } from "../base/loopback.js";
import type { TenantRuntime } from "../mcp/runtime.js";
import type { Identity } from "../auth/resource-server.js";
import { settingDefault } from "../base/settings.js";
import { plain, rpcError, sendWebResponse, tokenChecker } from "./guards.js";
import { createHttpLimits, type HttpLimitOptions, type HttpLimitStats } from "./limits.js";
import { plainToolsOf } from "./modern.js";
import type { OAuthGate } from "./oauth-gate.js";
import {
  type Admitted,
  type AuthPolicy,
  authenticate,
  checkEndpoint,
  checkHost,
  checkOrigin,
  type Exchange,
  findTenant,
  readBody,
  type Refusal,
  send as refuse,
} from "./pipeline.js";
import { dispatch, type EraHandlers, routeByEra } from "./router.js";
import { createSessions } from "./sessions.js";
import { createStatelessEra } from "./stateless.js";

/** Connection cap, header timeout, body deadline and budget, unauthenticated rate: see limits.ts. */
export interface HttpOptions extends HttpLimitOptions {
  host: string;
  port: number;
  token?: string;
  allowedOrigins: string[];
  /** Host names accepted on a loopback bind besides loopback ones (a reverse proxy's public name). */
  allowedHosts?: readonly string[];
  logger: Logger;
  /** Single-account mode's runtime; with `runtimeFor`, the runtime of a request that brings no keys. */
  runtime: TenantRuntime;
  /**
   * Per-user mode: the runtime (tenant) that acts with the keys in this request's headers (each
   * header's values as sent, repeats kept apart) and its signed-in user (ENV.auth=oauth). Throws
   * `RequestRefused` for keys it will not use.
   */
  runtimeFor?(headers: Readonly<Record<string, string[] | undefined>>, identity?: Identity): TenantRuntime;
  /** ENV.auth=oauth: protected resource metadata, bearer tokens and scopes (oauth-gate.ts). */
  oauth?: OAuthGate;
  /** Pages served beside /mcp before the Origin check (the connect page); true when answered. */
  pages?(req: IncomingMessage, res: ServerResponse, url: URL): Promise<boolean>;
  health(): Record<string, unknown>;
  /** Readiness: can this replica serve (its shared state answers)? */
  ready?(): Promise<{ ok: boolean } & Record<string, unknown>>;
  /** Starts 2025-era session ids, so a balancer can route a session back to its replica. */
  replicaId?: string;
  /** The largest request body: a launch with a 12 MB attachment is ~16 MB of base64. */
  maxBodyBytes?: number;
  maxSessions?: number;
  /** 2025 sessions one tenant (one set of keys; every keyless caller together) may hold open. */
  maxSessionsPerTenant?: number;
  idleSessionMs?: number;
}

export interface RunningHttp {
  url: string;
  server: Server;
  sessions(): number;
  /** The limits' counters (limits.ts), for tests and diagnostics. */
  limits(): HttpLimitStats;
  /**
   * Stops taking connections; requests in flight get up to `ms` to finish, idle keep-alive
   * connections stay open up to `idleMs` for the balancer to close; then everything closes.
   */
  drain(ms: number, idleMs: number): Promise<void>;
  close(): Promise<void>;
}

const DEFAULT_MAX_BODY_BYTES = 20 * 1024 * 1024;

/**
 * Streamable HTTP at /mcp for both eras, plus the probes (/healthz, /readyz) and the pages beside it.
 * A request goes through named steps, each passing what it found to the next: `guard` (Host, OAuth
 * metadata, pages, Origin, probes, the endpoint), `admit` (pipeline.ts: auth, body, tenant), then
 * `routeByEra` (router.ts) to one handler:
 * - 2026-07-28 requests are stateless (stateless.ts), so any replica can answer any request: each
 *   is answered by a server instance of its own for its duration (`createMcpHandler`, or for
 *   tools/call and tasks/* the lean path of modern.ts, on pooled instances; listen streams on a
 *   handler per tenant).
 * - 2025 clients keep sessions (sessions.ts: elicitation, resource subscriptions, the GET stream),
 *   with a cap and idle expiry.
 */
export async function startHttpTransport(options: HttpOptions): Promise<RunningHttp> {
  const rt = options.runtime;
  const maxBody = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const tokenOk = tokenChecker(options.token);
  const loopbackOnly = isLoopbackHost(options.host);
  const findTenantOf = options.runtimeFor ?? (() => rt);
  const limits = createHttpLimits(options, options.logger);
  const auth: AuthPolicy = {
    tokenOk,
    oauth: options.oauth,
    refuseUnauthenticated: limits.refuseUnauthenticated,
    unauthenticated: limits.unauthenticated,
  };
  const bodyRules = { maxBytes: maxBody, policy: limits.bodyPolicy, oauth: options.oauth };
  let draining = false;
  const inflight = new Set<ServerResponse>();
  // Streams (listen, a wait's progress) never "finish" in a drain window: the drain waits for the rest.
  const streaming = new WeakSet<ServerResponse>();
  const finishing = () => [...inflight].filter((r) => !streaming.has(r)).length;
  const deliver = (response: Response, res: ServerResponse) => {
    if (response.headers.get("content-type")?.includes("event-stream")) streaming.add(res);
    return sendWebResponse(response, res);
  };
  const sessions = createSessions(
    {
      maxSessions: options.maxSessions ?? settingDefault("maxSessions"),
      maxPerTenant: options.maxSessionsPerTenant ?? settingDefault("maxSessionsPerTenant"),
      idleMs: options.idleSessionMs ?? settingDefault("sessionIdleMs"),
      replicaId: options.replicaId,
    },
    deliver,
  );
  const stateless = createStatelessEra(maxBody, options.logger, deliver);
  const eras: EraHandlers = { session: sessions.serve, initialize: sessions.open, ...stateless };

  const answered = (ex: Exchange, refusal: Refusal) => {
    refuse(ex.res, refusal);
    return true;
  };

  /** Readiness and liveness: before the token check, each deciding itself what it shows. */
  const serveProbes = async ({ req, res, url }: Exchange): Promise<boolean> => {
    if (url.pathname === "/readyz" && req.method === "GET") {
      if (draining) plain(res, 503, { status: "draining" });
      else {
        const ready = (await options.ready?.()) ?? { ok: true };
        plain(res, ready.ok ? 200 : 503, {
          status: ready.ok ? "ready" : "not ready",
          ...(tokenOk && !tokenOk(req.headers.authorization) ? {} : ready),
        });
      }
      return true;
    }
    if (url.pathname === "/healthz" && req.method === "GET") {
      // Liveness is open; what runs here (version, toolsets, sessions) only for the token's holder.
      // With OAuth every user holds a token: liveness only, the details stay out of reach.
      if ((tokenOk && !tokenOk(req.headers.authorization)) || options.oauth) plain(res, 200, { status: "ok" });
      else plain(res, 200, { status: "ok", sessions: sessions.size(), ...stateless.stats(), ...options.health() });
      return true;
    }
    return false;
  };

  /**
   * Guards, then the pages and probes beside /mcp; the order is what clients see: Host, OAuth
   * metadata (any origin), pages (they check their own origin), Origin, probes, the endpoint.
   * True once answered.
   */
  const guard = async (ex: Exchange): Promise<boolean> => {
    const refusal = checkHost(ex.req, loopbackOnly, options.allowedHosts);
    if (refusal) return answered(ex, refusal);
    if (options.oauth?.serveMetadata(ex.req, ex.res, ex.url.pathname)) return true;
    if (options.pages && (await options.pages(ex.req, ex.res, ex.url))) return true;
    const origin = checkOrigin(ex.req, options.allowedOrigins);
    if (origin) return answered(ex, origin);
    if (await serveProbes(ex)) return true;
    const endpoint = checkEndpoint(ex.url);
    return endpoint ? answered(ex, endpoint) : false;
  };

  /**
   * Auth (401/429 before any byte of the body is read, then the connection closes), body (then
   * OAuth scopes), tenant: the request for the era router, or undefined once answered.
   */
  const admit = async (ex: Exchange): Promise<Admitted | undefined> => {
    const caller = await authenticate(ex, auth);
    if (!caller) return;
    const read = await readBody(ex, bodyRules, caller.identity);
    if (!read) return;
    const abort = new AbortController();
    // Only a request whose answer did not go out is aborted (an abort builds an error and runs listeners).
    ex.res.once("close", () => ex.res.writableFinished || abort.abort());
    const found = findTenant(ex.req, findTenantOf, caller.identity);
    if (found.refusal) return void refuse(ex.res, found.refusal);
    // A tenant's runtime stays while it has a request in flight (a 40-minute wait) or a session.
    ex.res.once("close", found.tenant.pin());
    return { ...ex, body: read.body, identity: caller.identity, tenant: found.tenant, signal: abort.signal };
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    inflight.add(res);
    res.once("close", () => inflight.delete(res));
    // Draining: each connection closes after its answer, so the balancer stops reusing it cleanly.
    if (draining) res.setHeader("connection", "close");
    const ex: Exchange = { req, res, url: new URL(req.url ?? "/", "http://localhost") };
    if (await guard(ex)) return;
    const admitted = await admit(ex);
    if (!admitted) return;
    return dispatch(admitted, routeByEra(req, admitted.body, plainToolsOf(admitted.tenant)), eras);
  };

  const http = createServer(limits.serverOptions, (req, res) => {
    limits.track(req, res);
    handle(req, res).catch((err) => {
      options.logger.error("http request failed", { error: err instanceof Error ? err.message : String(err) });
      if (!res.headersSent) rpcError(res, 500, -32603, "Internal error");
      else res.end();
    });
  });
  http.requestTimeout = 0; // long waits stream progress for many minutes
  http.keepAliveTimeout = 30_000;
  limits.apply(http);

  await new Promise<void>((resolve, reject) => {
    http.once("error", reject);
    http.listen(options.port, options.host, () => resolve());
  });
  const { port } = http.address() as AddressInfo;
  const shownHost = options.host.includes(":") ? `[${options.host}]` : options.host;
  return {
    url: `http://${shownHost}:${port}/mcp`,
    server: http,
    sessions: () => sessions.size(),
    limits: () => limits.stats(),
    drain: async (ms: number, idleMs: number) => {
      draining = true;
      // No new connections. Idle keep-alive ones are left for the balancer to close: closing one
      // ourselves can cross a request it sends on it, and nginx answers a POST lost that way with 502
      // and does not retry it. Its idle timeout is below `idleMs`, so it closes each one first (or
      // sends a last request, answered with `connection: close`); then the drain ends.
      const closed = new Promise<void>((resolve) => NetServer.prototype.close.call(http, () => resolve()));
      const started = Date.now();
      const elapsed = () => Date.now() - started;
      const idle = () => limits.stats().connections - inflight.size;
      const waiting = () => (finishing() > 0 && elapsed() < ms) || (idle() > 0 && elapsed() < idleMs);
      while (waiting()) await new Promise((r) => setTimeout(r, 50));
      http.close(); // not listening any more: this only stops node's connection checks
      http.closeAllConnections();
      await closed;
    },
    close: async () => {
      draining = true;
      stateless.close();
      await sessions.close();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
