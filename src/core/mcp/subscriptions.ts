import { ProtocolError, type McpServer } from "@modelcontextprotocol/server";
import type { TenantRuntime } from "./runtime.js";
import { WatchLimitError } from "./watch-budget.js";

/** A subscription past one of the replica's caps (the HTTP transport answers 429 with the same message). */
const SUBSCRIPTION_LIMIT_CODE = -32000;

/**
 * 2025 resources/subscribe for one session: a subscription lasts until unsubscribe or the end of
 * the session; list changes reach every session through the runtime's change hub.
 */
export function enableLegacySubscriptions(server: McpServer, rt: TenantRuntime): void {
  const active = new Map<string, () => void>();
  server.server.setRequestHandler("resources/subscribe", async ({ params: { uri } }) => {
    if (active.has(uri)) return {};
    try {
      active.set(
        uri,
        watchResources(rt, [uri], () => void server.server.sendResourceUpdated({ uri }).catch(() => undefined)),
      );
    } catch (err) {
      if (err instanceof WatchLimitError) throw new ProtocolError(SUBSCRIPTION_LIMIT_CODE, err.message);
      throw err;
    }
    return {};
  });
  server.server.setRequestHandler("resources/unsubscribe", async ({ params: { uri } }) => {
    active.get(uri)?.();
    active.delete(uri);
    return {};
  });
  const stopListChanges = rt.changes.add(() => {
    if (server.isConnected()) server.sendResourceListChanged();
  });
  const previous = server.server.onclose;
  server.server.onclose = () => {
    for (const stop of active.values()) stop();
    active.clear();
    stopListChanges();
    previous?.();
  };
}

/**
 * Follows `uris` for one subscriber within the replica's subscription caps (throws
 * WatchLimitError past one, having started nothing); returns the stop.
 */
export function watchResources(
  rt: TenantRuntime,
  uris: readonly string[],
  onChange: (uri: string) => void,
): () => void {
  // A tenant without a key for any service that follows resources polls nothing (its watchers are none).
  const quota = rt.quotaKey?.() ?? rt.owner();
  const release = rt.definition.watchBudget?.acquire(quota, uris, rt.watchers.length > 0) ?? (() => undefined);
  const stops = uris.map((uri) => watchResource(rt, uri, () => onChange(uri)));
  return () => {
    for (const stop of stops) stop();
    release();
  };
}

/** Starts following a resource for one subscriber; the first watcher that knows the URI wins. */
export function watchResource(rt: TenantRuntime, uri: string, onChange: () => void): () => void {
  for (const { service, watch } of rt.watchers) {
    const stop = watch(uri, onChange, rt.serviceDeps(service));
    if (stop) return stop;
  }
  // MCP allows subscribing to anything; a resource nobody watches simply never updates.
  return () => undefined;
}
