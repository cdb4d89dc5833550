import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { createMcpHandler, isInitializeRequest, isLegacyRequest, WebStandardStreamableHTTPServerTransport, type McpServer } from "@modelcontextprotocol/server";
import type { Logger } from "../logger.js";
import { createMcpServer } from "../mcp/server.js";
import { watchResource, type McpRuntime } from "../mcp/runtime.js";
import { hostAllowed, isLoopbackHost, originAllowed, plain, readJson, rpcError, sendWebResponse, toWebRequest, tokenChecker } from "./guards.js";

export interface HttpOptions {
  host: string;
  port: number;
  token?: string;
  allowedOrigins: string[];
  logger: Logger;
  runtime: McpRuntime;
  health(): Record<string, unknown>;
  /** The largest request body: a launch with a 12 MB attachment is ~16 MB of base64. */
  maxBodyBytes?: number;
  maxSessions?: number;
  idleSessionMs?: number;
}

/** A 2025 client's session: one transport and one server instance, until DELETE or idle expiry. */
interface Session {
  transport: WebStandardStreamableHTTPServerTransport;
  server: McpServer;
  lastSeen: number;
  /** Requests still open (a 40-minute wait, an SSE stream): a busy session never expires. */
  inflight: number;
}

export interface RunningHttp {
  url: string;
  server: Server;
  sessions(): number;
  close(): Promise<void>;
}

export const DEFAULT_MAX_BODY_BYTES = 20 * 1024 * 1024;

/**
 * Streamable HTTP at /mcp for both eras, plus GET /healthz.
 * - 2026-07-28 requests are stateless: each is answered by a fresh server instance
 *   (`createMcpHandler`), so any replica can answer any request.
 * - 2025 clients keep sessions (elicitation, resource subscriptions, the GET stream), with a cap
 *   and idle expiry.
 * Guards, in order: Host (DNS rebinding), Origin allow-list, bearer token, body size, session cap.
 */
export async function startHttpTransport(options: HttpOptions): Promise<RunningHttp> {
  const rt = options.runtime;
  const sessions = new Map<string, Session>();
  const maxBody = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const maxSessions = options.maxSessions ?? 1000;
  const idleMs = options.idleSessionMs ?? 30 * 60_000;
  const tokenOk = tokenChecker(options.token);
  const loopbackOnly = isLoopbackHost(options.host);
  const modern = createMcpHandler(() => createMcpServer(rt, "modern"), {
    legacy: "reject",
    maxRequestBodySize: maxBody,
    onerror: (err) => options.logger.debug("mcp handler error", { error: err.message }),
  });
  const stopListChanges = rt.changes.add(() => modern.notify.resourcesChanged());

  const closeSession = async (id: string) => {
    const session = sessions.get(id);
    if (!session) return;
    sessions.delete(id);
    await session.transport.close().catch(() => undefined);
    await session.server.close().catch(() => undefined);
  };
  const sweep = setInterval(() => {
    const cutoff = Date.now() - idleMs;
    for (const [id, s] of sessions) if (s.inflight === 0 && s.lastSeen < cutoff) void closeSession(id);
  }, Math.min(idleMs, 60_000));
  sweep.unref();

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? "/", "http://localhost");
    if (!hostAllowed(req.headers.host, loopbackOnly)) return plain(res, 403, { error: "Host not allowed" });
    const origin = req.headers.origin;
    if (origin !== undefined && !originAllowed(origin, options.allowedOrigins)) return plain(res, 403, { error: "Origin not allowed" });
    if (url.pathname === "/healthz" && req.method === "GET") {
      // Liveness is open; what runs here (version, toolsets, sessions) only for the token's holder.
      if (tokenOk && !tokenOk(req.headers.authorization)) return plain(res, 200, { status: "ok" });
      return plain(res, 200, { status: "ok", sessions: sessions.size, ...options.health() });
    }
    if (url.pathname !== "/mcp") return plain(res, 404, { error: "Not found; the MCP endpoint is /mcp" });
    if (tokenOk && !tokenOk(req.headers.authorization)) {
      return rpcError(res, 401, -32001, "Unauthorized: send Authorization: Bearer <MCP_HTTP_TOKEN>", { "www-authenticate": 'Bearer realm="switchboard-mcp"' });
    }

    let body: unknown;
    if (req.method === "POST") {
      const read = await readJson(req, maxBody);
      if (read.error) return rpcError(res, read.status, read.code, read.error);
      body = read.value;
      if (Array.isArray(body) && body.length === 0) return rpcError(res, 400, -32600, "Invalid request: an empty batch");
    }
    const abort = new AbortController();
    res.once("close", () => abort.abort());
    const request = toWebRequest(req, body, abort.signal);

    const sessionId = req.headers["mcp-session-id"];
    if (typeof sessionId === "string") {
      const session = sessions.get(sessionId);
      if (!session) return rpcError(res, 404, -32001, "Session not found or expired; initialize a new session");
      session.lastSeen = Date.now();
      session.inflight++;
      res.once("close", () => {
        session.inflight--;
        session.lastSeen = Date.now();
      });
      return sendWebResponse(await session.transport.handleRequest(request, { parsedBody: body }), res);
    }
    if (req.method === "POST" && (await isLegacyRequest(request.clone(), body))) {
      if (!isInitializeRequest(body)) return rpcError(res, 400, -32000, "Bad request: no mcp-session-id header, and the body is not an initialize request");
      if (sessions.size >= maxSessions) return rpcError(res, 503, -32000, `Too many open sessions (${maxSessions}); close one or retry later`);
      return sendWebResponse(await openSession(request, body), res);
    }
    const stopWatching = watchListened(body);
    res.once("close", stopWatching);
    return sendWebResponse(await modern.fetch(request, { parsedBody: body }), res);
  };

  const openSession = async (request: Request, body: unknown): Promise<Response> => {
    const server = createMcpServer(rt, "legacy");
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => void sessions.set(id, { transport, server, lastSeen: Date.now(), inflight: 0 }),
    });
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId);
    };
    await server.connect(transport);
    return transport.handleRequest(request, { parsedBody: body });
  };

  /** A 2026 listen stream that names resources: follow them while the stream is open. */
  const watchListened = (body: unknown): (() => void) => {
    const message = body as { method?: string; params?: { notifications?: { resourceSubscriptions?: unknown } } } | undefined;
    const uris = message?.method === "subscriptions/listen" ? message.params?.notifications?.resourceSubscriptions : undefined;
    if (!Array.isArray(uris)) return () => undefined;
    const stops = uris.filter((u): u is string => typeof u === "string").map((uri) => watchResource(rt, uri, () => modern.notify.resourceUpdated(uri)));
    return () => stops.forEach((stop) => stop());
  };

  const http = createServer((req, res) => {
    handle(req, res).catch((err) => {
      options.logger.error("http request failed", { error: err instanceof Error ? err.message : String(err) });
      if (!res.headersSent) rpcError(res, 500, -32603, "Internal error");
      else res.end();
    });
  });
  http.requestTimeout = 0; // long waits stream progress for many minutes
  http.keepAliveTimeout = 30_000;

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
    close: async () => {
      clearInterval(sweep);
      stopListChanges();
      await Promise.all([...sessions.keys()].map(closeSession));
      await modern.close().catch(() => undefined);
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
