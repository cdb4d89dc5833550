import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { Server as NetServer, type AddressInfo } from "node:net";
import {
  createMcpHandler,
  isInitializeRequest,
  WebStandardStreamableHTTPServerTransport,
  type McpHttpHandler,
  type McpServer,
} from "@modelcontextprotocol/server";
import type { Logger } from "../base/logger.js";
import { telemetry } from "../base/telemetry.js";
import { isLoopbackHost } from "../base/loopback.js";
import { createMcpServer, type OneRequest } from "../mcp/server.js";
import type { TenantRuntime } from "../mcp/runtime.js";
import { watchResources } from "../mcp/subscriptions.js";
import { WatchLimitError } from "../mcp/watch-budget.js";
import { answerTaskGet } from "../mcp/task-protocol.js";
import {
  hostAllowed,
  originAllowed,
  plain,
  readJson,
  RequestRefused,
  rpcError,
  sendWebResponse,
  toWebRequest,
  tokenChecker,
} from "./guards.js";
import { createHttpLimits, type HttpLimitOptions } from "./limits.js";
import { classifyPost, createInstancePool, leanRequest, oneRequestOf, plainToolsOf, serveLean } from "./modern.js";
import type { Identity } from "../auth/resource-server.js";
import type { OAuthGate } from "./oauth-gate.js";
import { ENV, settingDefault } from "../base/settings.js";

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

/** A 2025 client's session: one transport and one server instance, until DELETE or idle expiry. */
interface Session {
  transport: WebStandardStreamableHTTPServerTransport;
  server: McpServer;
  /** The tenant the session was opened for: a request with other keys cannot use it. */
  runtime: TenantRuntime;
  lastSeen: number;
  /** Requests still open (a 40-minute wait, an SSE stream): a busy session never expires. */
  inflight: number;
}

export interface RunningHttp {
  url: string;
  server: Server;
  sessions(): number;
  /** Stops taking connections, lets requests in flight finish (up to `ms`), then closes. */
  drain(ms: number): Promise<void>;
  close(): Promise<void>;
}

const DEFAULT_MAX_BODY_BYTES = 20 * 1024 * 1024;

/** What a 2026-07-28 request asks, from its headers (the SDK checks them against the body before the factory runs). */
const oneRequest = (request?: Request): OneRequest | undefined =>
  request
    ? { method: request.headers.get("mcp-method") ?? undefined, name: request.headers.get("mcp-name") ?? undefined }
    : undefined;

/** How long a draining server keeps idle keep-alive connections open for a last request each. */
const DRAIN_LINGER_MS = 2000;

/**
 * Streamable HTTP at /mcp for both eras, plus GET /healthz.
 * - 2026-07-28 requests are stateless, so any replica can answer any request: each is answered by
 *   a server instance of its own for its duration (`createMcpHandler`, or for tools/call and
 *   tasks/* the lean path of modern.ts, on pooled instances).
 * - 2025 clients keep sessions (elicitation, resource subscriptions, the GET stream), with a cap
 *   and idle expiry.
 * Guards, in order: Host (DNS rebinding), Origin allow-list, bearer token, body size, session cap.
 */
export async function startHttpTransport(options: HttpOptions): Promise<RunningHttp> {
  const rt = options.runtime;
  const sessions = new Map<string, Session>();
  const maxBody = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const maxSessions = options.maxSessions ?? settingDefault("maxSessions");
  const maxPerTenant = options.maxSessionsPerTenant ?? settingDefault("maxSessionsPerTenant");
  // Sessions by tenant, counted from the initialize that opens one until it closes.
  const sessionsOf = new Map<string, number>();
  const idleMs = options.idleSessionMs ?? settingDefault("sessionIdleMs");
  const tokenOk = tokenChecker(options.token);
  const loopbackOnly = isLoopbackHost(options.host);
  const runtimeFor = options.runtimeFor ?? (() => rt);
  const handlerOptions = {
    legacy: "reject" as const,
    maxRequestBodySize: maxBody,
    onerror: (err: Error) => options.logger.debug("mcp handler error", { error: err.message }),
  };
  // 2026-07-28 requests other than listen: one handler for every tenant, each request's instance
  // built for the tenant the request was found to act for (the SDK hands the factory that Request).
  const tenantOf = new WeakMap<Request, TenantRuntime>();
  const shared = createMcpHandler(({ requestInfo }) => {
    const tenant = requestInfo && tenantOf.get(requestInfo);
    if (!tenant) throw new Error("a request reached the shared handler without its tenant");
    return createMcpServer(tenant, "modern", oneRequest(requestInfo));
  }, handlerOptions);
  // Listen streams: a handler per tenant that listens, so a stream hears only its tenant's changes.
  // It is made on the tenant's first listen and goes with the tenant (when its runtime closes).
  const handlers = new Map<TenantRuntime, { handler: McpHttpHandler; stop: () => void }>();
  const listenFor = (tenant: TenantRuntime): McpHttpHandler => {
    const known = handlers.get(tenant);
    if (known) return known.handler;
    const handler = createMcpHandler(
      ({ requestInfo }) => createMcpServer(tenant, "modern", oneRequest(requestInfo)),
      handlerOptions,
    );
    const unhear = tenant.changes.add(() => handler.notify.resourcesChanged());
    const stop = () => {
      handlers.delete(tenant);
      unhear();
      cancelOnClose();
      void handler.close().catch(() => undefined);
    };
    const cancelOnClose = tenant.changes.onClose(stop);
    handlers.set(tenant, { handler, stop });
    return handler;
  };
  const instances = createInstancePool((tenant, request) => createMcpServer(tenant, "modern", request));
  let draining = false;
  const inflight = new Set<ServerResponse>();
  // Streams (listen, a wait's progress) never "finish" in a drain window: the drain waits for the rest.
  const streaming = new WeakSet<ServerResponse>();
  const finishing = () => [...inflight].filter((r) => !streaming.has(r)).length;
  const send = (response: Response, res: ServerResponse) => {
    if (response.headers.get("content-type")?.includes("event-stream")) streaming.add(res);
    return sendWebResponse(response, res);
  };

  const closeSession = async (id: string) => {
    const session = sessions.get(id);
    if (!session) return;
    sessions.delete(id);
    await session.transport.close().catch(() => undefined);
    await session.server.close().catch(() => undefined);
  };
  const sweep = setInterval(
    () => {
      const cutoff = Date.now() - idleMs;
      for (const [id, s] of sessions) if (s.inflight === 0 && s.lastSeen < cutoff) void closeSession(id);
    },
    Math.min(idleMs, 60_000),
  );
  sweep.unref();

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    inflight.add(res);
    res.once("close", () => inflight.delete(res));
    // Draining: each connection closes after its answer, so the balancer stops reusing it cleanly.
    if (draining) res.setHeader("connection", "close");
    const url = new URL(req.url ?? "/", "http://localhost");
    if (!hostAllowed(req.headers.host, loopbackOnly, options.allowedHosts))
      return plain(res, 403, { error: "Host not allowed" });
    // Metadata is for any origin (browser-based clients); the pages check their own origin.
    if (options.oauth?.serveMetadata(req, res, url.pathname)) return;
    if (options.pages && (await options.pages(req, res, url))) return;
    const origin = req.headers.origin;
    if (origin !== undefined && !originAllowed(origin, options.allowedOrigins))
      return plain(res, 403, { error: "Origin not allowed" });
    if (url.pathname === "/readyz" && req.method === "GET") {
      if (draining) return plain(res, 503, { status: "draining" });
      const ready = (await options.ready?.()) ?? { ok: true };
      return plain(res, ready.ok ? 200 : 503, {
        status: ready.ok ? "ready" : "not ready",
        ...(tokenOk && !tokenOk(req.headers.authorization) ? {} : ready),
      });
    }
    if (url.pathname === "/healthz" && req.method === "GET") {
      // Liveness is open; what runs here (version, toolsets, sessions) only for the token's holder.
      // With OAuth every user holds a token: liveness only, the details stay out of reach.
      if ((tokenOk && !tokenOk(req.headers.authorization)) || options.oauth) return plain(res, 200, { status: "ok" });
      const body = { status: "ok", sessions: sessions.size, listening: handlers.size, instances: instances.stats() };
      return plain(res, 200, { ...body, ...options.health() });
    }
    if (url.pathname !== "/mcp") return plain(res, 404, { error: "Not found; the MCP endpoint is /mcp" });
    // 401 (429 over ENV.unauthRate) before any byte of the body is read, then the connection closes.
    if (tokenOk && !tokenOk(req.headers.authorization)) return limits.refuseUnauthenticated(req, res);
    const identity = options.oauth && (await options.oauth.authenticate(req, res, limits.unauthenticated));
    if (options.oauth && !identity) return;

    let body: unknown;
    if (req.method === "POST") {
      const read = await readJson(req, maxBody);
      if (read.error) return rpcError(res, read.status, read.code, read.error);
      body = read.value;
      if (Array.isArray(body) && body.length === 0)
        return rpcError(res, 400, -32600, "Invalid request: an empty batch");
      if (identity && !options.oauth!.authorize(identity, req, res, body)) return;
    }
    const abort = new AbortController();
    // Only a request whose answer did not go out is aborted (an abort builds an error and runs listeners).
    res.once("close", () => res.writableFinished || abort.abort());

    let tenant: TenantRuntime;
    try {
      tenant = runtimeFor(req.headersDistinct, identity || undefined);
    } catch (err) {
      if (err instanceof RequestRefused) return rpcError(res, err.status, -32000, err.message);
      throw err;
    }
    // A tenant's runtime stays while it has a request in flight (a 40-minute wait) or a session.
    res.once("close", tenant.pin());
    const sessionId = req.headers["mcp-session-id"];
    if (typeof sessionId === "string") {
      const session = sessions.get(sessionId);
      if (!session) return rpcError(res, 404, -32001, "Session not found or expired; initialize a new session");
      if (session.runtime !== tenant && session.runtime.owner(undefined) !== tenant.owner(undefined)) {
        return rpcError(
          res,
          403,
          -32001,
          "This session was opened with other upstream keys; send the same keys, or initialize a new session",
        );
      }
      session.lastSeen = Date.now();
      session.inflight++;
      res.once("close", () => {
        session.inflight--;
        session.lastSeen = Date.now();
      });
      const request = toWebRequest(req, body, abort.signal);
      return send(await session.transport.handleRequest(request, { parsedBody: body }), res);
    }
    // The SDK's classification, once: what isLegacyRequest and createMcpHandler's routing both run.
    const outcome = req.method === "POST" ? classifyPost(req, body) : undefined;
    if (outcome?.kind === "legacy") {
      if (!isInitializeRequest(body))
        return rpcError(
          res,
          400,
          -32000,
          "Bad request: no mcp-session-id header, and the body is not an initialize request",
        );
      if (sessions.size >= maxSessions) {
        telemetry.add("caps", 1, { setting: ENV.maxSessions });
        return rpcError(res, 503, -32000, `Too many open sessions (${maxSessions}); close one or retry later`);
      }
      const quota = tenant.quotaKey?.() ?? tenant.owner(undefined);
      if ((sessionsOf.get(quota) ?? 0) >= maxPerTenant) {
        const whose =
          tenant.credentials && Object.keys(tenant.credentials).length === 0
            ? "Callers without keys"
            : quota !== tenant.owner(undefined)
              ? "Keys no service has accepted yet (together)"
              : "These keys";
        telemetry.add("caps", 1, { setting: ENV.maxSessionsPerTenant });
        return rpcError(
          res,
          429,
          -32000,
          `${whose} hold ${maxPerTenant} open sessions on this server, the limit (${ENV.maxSessionsPerTenant}); ` +
            `close one (HTTP DELETE) or let one expire (${ENV.sessionIdleMs}) first`,
        );
      }
      return send(await openSession(tenant, toWebRequest(req, body, abort.signal), body), res);
    }
    const lean = outcome && leanRequest(req, outcome, plainToolsOf(tenant));
    if (lean) {
      if (lean.message.method === "tasks/get") {
        const answer = await answerTaskGet(tenant, lean.message);
        if (answer) return plain(res, 200, answer);
      }
      const { server, release } = instances.take(tenant, oneRequestOf(lean));
      let answered = false;
      res.once("close", () => answered && res.writableFinished && release());
      const left = (stop: () => void) => res.once("close", () => res.writableFinished || stop());
      const answer = await serveLean(server, lean, left, () => (answered = true));
      if (answer instanceof Response) return send(answer, res);
      return void res.writeHead(200, { "content-type": "application/json" }).end(answer.json);
    }
    const request = toWebRequest(req, body, abort.signal);
    if ((body as { method?: unknown } | undefined)?.method !== "subscriptions/listen") {
      tenantOf.set(request, tenant);
      return send(await shared.fetch(request, { parsedBody: body }), res);
    }
    const handler = listenFor(tenant);
    let stopWatching: () => void;
    try {
      stopWatching = watchListened(tenant, handler, body);
    } catch (err) {
      if (err instanceof WatchLimitError) return rpcError(res, 429, -32000, err.message);
      throw err;
    }
    res.once("close", stopWatching);
    return send(await handler.fetch(request, { parsedBody: body }), res);
  };

  const openSession = async (tenant: TenantRuntime, request: Request, body: unknown): Promise<Response> => {
    const server = createMcpServer(tenant, "legacy");
    const prefix = options.replicaId ? `${options.replicaId}.` : "";
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => `${prefix}${randomUUID()}`,
      onsessioninitialized: (id) =>
        void sessions.set(id, { transport, server, runtime: tenant, lastSeen: Date.now(), inflight: 0 }),
    });
    const unpin = tenant.pin();
    const owner = tenant.quotaKey?.() ?? tenant.owner(undefined);
    sessionsOf.set(owner, (sessionsOf.get(owner) ?? 0) + 1);
    let counted = true;
    const uncount = () => {
      if (!counted) return;
      counted = false;
      const left = (sessionsOf.get(owner) ?? 1) - 1;
      if (left > 0) sessionsOf.set(owner, left);
      else sessionsOf.delete(owner);
    };
    const opened = performance.now();
    transport.onclose = () => {
      telemetry.sessionEnded(opened);
      unpin();
      uncount();
      if (transport.sessionId) sessions.delete(transport.sessionId);
    };
    await server.connect(transport);
    const response = await transport.handleRequest(request, { parsedBody: body });
    if (!transport.sessionId) uncount();
    return response;
  };

  /**
   * A 2026 listen stream that names resources: follow them while the stream is open, within the
   * subscription caps (WatchLimitError past one: the request is refused before it is answered).
   */
  const watchListened = (tenant: TenantRuntime, handler: McpHttpHandler, body: unknown): (() => void) => {
    const message = body as
      | { method?: string; params?: { notifications?: { resourceSubscriptions?: unknown } } }
      | undefined;
    const uris =
      message?.method === "subscriptions/listen" ? message.params?.notifications?.resourceSubscriptions : undefined;
    if (!Array.isArray(uris)) return () => undefined;
    tenant.watchBudget?.checkRequest(uris.length);
    const named = [...new Set(uris.filter((u): u is string => typeof u === "string"))];
    return watchResources(tenant, named, (uri) => handler.notify.resourceUpdated(uri));
  };

  const limits = createHttpLimits(options, options.logger);
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
    sessions: () => sessions.size,
    drain: async (ms: number) => {
      draining = true;
      // No new connections. Idle keep-alive ones are not closed at once: a balancer may be sending
      // a request on one at that instant, and nginx answers a POST lost that way with 502 and does
      // not retry it. For a while they stay open and each request on one is answered with
      // `connection: close`; requests in flight get up to `ms`.
      const closed = new Promise<void>((resolve) => NetServer.prototype.close.call(http, () => resolve()));
      const started = Date.now();
      const idle = () => limits.stats().connections - inflight.size;
      const waiting = () => finishing() > 0 || (idle() > 0 && Date.now() - started < Math.min(ms, DRAIN_LINGER_MS));
      while (waiting() && Date.now() - started < ms) await new Promise((r) => setTimeout(r, 50));
      http.close(); // not listening any more: this only stops node's connection checks
      http.closeAllConnections();
      await closed;
    },
    close: async () => {
      draining = true;
      clearInterval(sweep);
      for (const { stop } of [...handlers.values()]) stop();
      void shared.close().catch(() => undefined);
      instances.clear();
      await Promise.all([...sessions.keys()].map(closeSession));
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
