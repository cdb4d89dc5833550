import { createMcpHandler, type McpHttpHandler } from "@modelcontextprotocol/server";
import type { Logger } from "../base/logger.js";
import { createMcpServer, type OneRequest } from "../mcp/server.js";
import type { TenantRuntime } from "../mcp/runtime.js";
import { watchResources } from "../mcp/subscriptions.js";
import { WatchLimitError } from "../mcp/watch-budget.js";
import { answerTaskGet } from "../mcp/task-protocol.js";
import { plain, toWebRequest, webRequestOf } from "./guards.js";
import { createInstancePool, type LeanRequest, oneRequestOf, serveLean } from "./modern.js";
import { type Admitted, rpcRefusal, send } from "./pipeline.js";
import type { Deliver } from "./sessions.js";

/** What a 2026-07-28 request asks, from its headers (the SDK checks them against the body before the factory runs). */
const oneRequest = (request?: Request): OneRequest | undefined =>
  request
    ? { method: request.headers.get("mcp-method") ?? undefined, name: request.headers.get("mcp-name") ?? undefined }
    : undefined;

/**
 * The web Request the shared handler is given: it carries the tenant the request acts for, and the
 * SDK hands this same object to the factory (`requestInfo`), which builds that tenant's instance.
 */
export class TenantRequest extends Request {
  constructor(
    readonly tenant: TenantRuntime,
    ...init: [string, RequestInit]
  ) {
    super(...init);
  }
}

/** The tenant of a request the shared handler's factory was handed (a TenantRequest, or a bug). */
export function tenantOfRequest(request: Request | undefined): TenantRuntime {
  if (request instanceof TenantRequest) return request.tenant;
  throw new Error("a request reached the shared handler without its tenant");
}

/**
 * The 2026-07-28 path: every request stateless. `lean` serves tools/call and tasks/* on pooled
 * instances (modern.ts), `listen` a listen stream on its tenant's own handler, `modern` anything
 * else through one `createMcpHandler` for every tenant.
 */
export function createStatelessEra(maxBodyBytes: number, logger: Logger, deliver: Deliver) {
  const handlerOptions = {
    legacy: "reject" as const,
    maxRequestBodySize: maxBodyBytes,
    onerror: (err: Error) => logger.debug("mcp handler error", { error: err.message }),
  };
  const shared = createMcpHandler(
    ({ requestInfo }) => createMcpServer(tenantOfRequest(requestInfo), "modern", oneRequest(requestInfo)),
    handlerOptions,
  );
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

  /** tools/call and tasks/*: a tasks/get from the store, else a pooled instance, answered directly. */
  const lean = async ({ res, tenant }: Admitted, request: LeanRequest): Promise<void> => {
    if (request.message.method === "tasks/get") {
      const answer = await answerTaskGet(tenant, request.message);
      if (answer) return plain(res, 200, answer);
    }
    const { server, release } = instances.take(tenant, oneRequestOf(request));
    let answered = false;
    res.once("close", () => answered && res.writableFinished && release());
    const left = (stop: () => void) => res.once("close", () => res.writableFinished || stop());
    const answer = await serveLean(server, request, left, () => (answered = true));
    if (answer instanceof Response) return deliver(answer, res);
    return void res.writeHead(200, { "content-type": "application/json" }).end(answer.json);
  };

  /** A listen stream, following the resources it names within the subscription caps. */
  const listen = async ({ req, res, body, tenant, signal }: Admitted): Promise<void> => {
    const request = toWebRequest(req, body, signal);
    const handler = listenFor(tenant);
    let stopWatching: () => void;
    try {
      stopWatching = watchListened(tenant, handler, body);
    } catch (err) {
      if (err instanceof WatchLimitError) return send(res, rpcRefusal(429, -32000, err.message));
      throw err;
    }
    res.once("close", stopWatching);
    return deliver(await handler.fetch(request, { parsedBody: body }), res);
  };

  const modern = async ({ req, res, body, tenant, signal }: Admitted): Promise<void> => {
    const request = new TenantRequest(tenant, ...webRequestOf(req, body, signal));
    return deliver(await shared.fetch(request, { parsedBody: body }), res);
  };

  return {
    lean,
    listen,
    modern,
    /** Tenants with a listen handler, and the instance pool's counts (/healthz). */
    stats: () => ({ listening: handlers.size, instances: instances.stats() }),
    close: () => {
      for (const { stop } of [...handlers.values()]) stop();
      void shared.close().catch(() => undefined);
      instances.clear();
    },
  };
}

/**
 * A 2026 listen stream that names resources: follow them while the stream is open, within the
 * subscription caps (WatchLimitError past one: the request is refused before it is answered).
 */
function watchListened(tenant: TenantRuntime, handler: McpHttpHandler, body: unknown): () => void {
  const message = body as
    | { method?: string; params?: { notifications?: { resourceSubscriptions?: unknown } } }
    | undefined;
  const uris =
    message?.method === "subscriptions/listen" ? message.params?.notifications?.resourceSubscriptions : undefined;
  if (!Array.isArray(uris)) return () => undefined;
  tenant.definition.watchBudget?.checkRequest(uris.length);
  const named = [...new Set(uris.filter((u): u is string => typeof u === "string"))];
  return watchResources(tenant, named, (uri) => handler.notify.resourceUpdated(uri));
}
