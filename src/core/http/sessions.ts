import { randomUUID } from "node:crypto";
import type { ServerResponse } from "node:http";
import { WebStandardStreamableHTTPServerTransport, type McpServer } from "@modelcontextprotocol/server";
import { telemetry } from "../base/telemetry.js";
import { ENV } from "../base/settings.js";
import { createMcpServer } from "../mcp/server.js";
import type { TenantRuntime } from "../mcp/runtime.js";
import { toWebRequest } from "./guards.js";
import { type Admitted, rpcRefusal, send } from "./pipeline.js";

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

export interface SessionRules {
  maxSessions: number;
  /** 2025 sessions one tenant (one set of keys; every keyless caller together) may hold open. */
  maxPerTenant: number;
  idleMs: number;
  /** Starts session ids, so a balancer can route a session back to its replica. */
  replicaId?: string;
}

/** Writes a web Response to the node response (transport.ts: it also tracks streams for a drain). */
export type Deliver = (response: Response, res: ServerResponse) => Promise<void>;

/**
 * The 2025 path: sessions with a cap, a cap per tenant and idle expiry. `serve` answers a request
 * of an open session, `open` an initialize (router.ts decides which).
 */
export function createSessions(rules: SessionRules, deliver: Deliver) {
  const sessions = new Map<string, Session>();
  // Sessions by tenant, counted from the initialize that opens one until it closes.
  const sessionsOf = new Map<string, number>();

  const closeSession = async (id: string) => {
    const session = sessions.get(id);
    if (!session) return;
    sessions.delete(id);
    await session.transport.close().catch(() => undefined);
    await session.server.close().catch(() => undefined);
  };
  const sweep = setInterval(
    () => {
      const cutoff = Date.now() - rules.idleMs;
      for (const [id, s] of sessions) if (s.inflight === 0 && s.lastSeen < cutoff) void closeSession(id);
    },
    Math.min(rules.idleMs, 60_000),
  );
  sweep.unref();

  /** A request of session `id`: only for the tenant (or owner) that opened it. */
  const serve = async ({ req, res, body, tenant, signal }: Admitted, id: string): Promise<void> => {
    const session = sessions.get(id);
    if (!session) return send(res, rpcRefusal(404, -32001, "Session not found or expired; initialize a new session"));
    if (session.runtime !== tenant && session.runtime.owner() !== tenant.owner()) {
      const message =
        "This session was opened with other upstream keys; send the same keys, or initialize a new session";
      return send(res, rpcRefusal(403, -32001, message));
    }
    session.lastSeen = Date.now();
    session.inflight++;
    res.once("close", () => {
      session.inflight--;
      session.lastSeen = Date.now();
    });
    const request = toWebRequest(req, body, signal);
    return deliver(await session.transport.handleRequest(request, { parsedBody: body }), res);
  };

  /** An initialize: a new session, within ENV.maxSessions and ENV.maxSessionsPerTenant. */
  const open = async ({ req, res, body, tenant, signal }: Admitted): Promise<void> => {
    if (sessions.size >= rules.maxSessions) {
      telemetry.add("caps", 1, { setting: ENV.maxSessions });
      return send(
        res,
        rpcRefusal(503, -32000, `Too many open sessions (${rules.maxSessions}); close one or retry later`),
      );
    }
    const quota = tenant.quotaKey?.() ?? tenant.owner();
    if ((sessionsOf.get(quota) ?? 0) >= rules.maxPerTenant) {
      const whose =
        tenant.credentials && Object.keys(tenant.credentials).length === 0
          ? "Callers without keys"
          : quota !== tenant.owner()
            ? "Keys no service has accepted yet (together)"
            : "These keys";
      telemetry.add("caps", 1, { setting: ENV.maxSessionsPerTenant });
      const message =
        `${whose} hold ${rules.maxPerTenant} open sessions on this server, the limit (${ENV.maxSessionsPerTenant}); ` +
        `close one (HTTP DELETE) or let one expire (${ENV.sessionIdleMs}) first`;
      return send(res, rpcRefusal(429, -32000, message));
    }
    return deliver(await openSession(tenant, toWebRequest(req, body, signal), body), res);
  };

  const openSession = async (tenant: TenantRuntime, request: Request, body: unknown): Promise<Response> => {
    const server = createMcpServer(tenant, "legacy");
    const prefix = rules.replicaId ? `${rules.replicaId}.` : "";
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => `${prefix}${randomUUID()}`,
      onsessioninitialized: (id) =>
        void sessions.set(id, { transport, server, runtime: tenant, lastSeen: Date.now(), inflight: 0 }),
    });
    const unpin = tenant.pin();
    const owner = tenant.quotaKey?.() ?? tenant.owner();
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

  return {
    serve,
    open,
    size: () => sessions.size,
    close: async () => {
      clearInterval(sweep);
      await Promise.all([...sessions.keys()].map(closeSession));
    },
  };
}
