import { randomUUID, timingSafeEqual, createHash } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { isLoopbackHost } from "../config.js";
import type { Logger } from "./logger.js";

export interface HttpOptions {
  host: string;
  port: number;
  token?: string;
  allowedOrigins: string[];
  logger: Logger;
  /** Builds the McpServer of a new session. */
  createSession(): McpServer;
  health(): Record<string, unknown>;
  maxBodyBytes?: number;
  maxSessions?: number;
  idleSessionMs?: number;
}

interface Session {
  transport: StreamableHTTPServerTransport;
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

/**
 * Streamable HTTP at /mcp, one McpServer per session, plus GET /healthz. Guards, in order:
 * Host (DNS rebinding), Origin allow-list, bearer token, body size, session cap.
 */
export async function startHttpTransport(options: HttpOptions): Promise<RunningHttp> {
  const sessions = new Map<string, Session>();
  const maxBody = options.maxBodyBytes ?? 1024 * 1024;
  const maxSessions = options.maxSessions ?? 1000;
  const idleMs = options.idleSessionMs ?? 30 * 60_000;
  const tokenDigest = options.token ? digest(options.token) : undefined;
  const loopbackOnly = isLoopbackHost(options.host);

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

    if (url.pathname === "/healthz" && req.method === "GET") return plain(res, 200, { status: "ok", sessions: sessions.size, ...options.health() });
    if (url.pathname !== "/mcp") return plain(res, 404, { error: "Not found; the MCP endpoint is /mcp" });

    if (tokenDigest && !tokenMatches(req.headers.authorization, tokenDigest)) {
      res.setHeader("www-authenticate", 'Bearer realm="switchboard-mcp"');
      return rpcError(res, 401, -32001, "Unauthorized: send Authorization: Bearer <MCP_HTTP_TOKEN>");
    }

    const sessionId = header(req, "mcp-session-id");
    let body: unknown;
    if (req.method === "POST") {
      const read = await readJson(req, maxBody);
      if (read.error) return rpcError(res, read.status, read.code, read.error);
      body = read.value;
    }

    if (sessionId) {
      const session = sessions.get(sessionId);
      if (!session) return rpcError(res, 404, -32001, "Session not found or expired; initialize a new session");
      session.lastSeen = Date.now();
      session.inflight++;
      res.once("close", () => {
        session.inflight--;
        session.lastSeen = Date.now();
      });
      await session.transport.handleRequest(req, res, body);
      return;
    }
    if (req.method !== "POST" || !isInitializeRequest(body)) {
      return rpcError(res, 400, -32000, "Bad request: no mcp-session-id header, and the body is not an initialize request");
    }
    if (sessions.size >= maxSessions) return rpcError(res, 503, -32000, `Too many open sessions (${maxSessions}); close one or retry later`);

    const server = options.createSession();
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        sessions.set(id, { transport, server, lastSeen: Date.now(), inflight: 0 });
      },
    });
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId);
    };
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
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
      await Promise.all([...sessions.keys()].map(closeSession));
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function hostAllowed(host: string | undefined, loopbackOnly: boolean): boolean {
  if (!loopbackOnly) return true; // a non-loopback bind requires the bearer token instead
  if (!host) return false;
  const name = host.startsWith("[") ? host.slice(0, host.indexOf("]") + 1) : host.split(":")[0];
  return isLoopbackHost(name);
}

function originAllowed(origin: string, allowed: string[]): boolean {
  let parsed: URL;
  try {
    parsed = new URL(origin);
  } catch {
    return false;
  }
  const withPort = `${parsed.protocol}//${parsed.host}`;
  const withoutPort = `${parsed.protocol}//${parsed.hostname.includes(":") ? `[${parsed.hostname}]` : parsed.hostname}`;
  return allowed.includes("*") || allowed.includes(withPort) || allowed.includes(withoutPort) || allowed.includes(origin);
}

function digest(value: string): Buffer {
  return createHash("sha256").update(value).digest();
}

/** Compares digests so neither the length nor the content of the token leaks through timing. */
function tokenMatches(authorization: string | undefined, expected: Buffer): boolean {
  const m = /^Bearer\s+(.+)$/i.exec(authorization ?? "");
  return m !== null && timingSafeEqual(digest(m[1].trim()), expected);
}

async function readJson(req: IncomingMessage, max: number): Promise<{ value?: unknown; error?: string; status: number; code: number }> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > max) return { error: `Request body larger than ${max} bytes`, status: 413, code: -32600 };
    chunks.push(chunk as Buffer);
  }
  try {
    return { value: JSON.parse(Buffer.concat(chunks).toString("utf8")), status: 200, code: 0 };
  } catch {
    return { error: "Parse error: the body is not valid JSON", status: 400, code: -32700 };
  }
}

function plain(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

function rpcError(res: ServerResponse, status: number, code: number, message: string): void {
  plain(res, status, { jsonrpc: "2.0", error: { code, message }, id: null });
}
