import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { SubscribeRequestSchema, UnsubscribeRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "./logger.js";

/** Something that calls `onChange` whenever the resource behind a URI changes, until stopped. */
export type ResourceWatcher = (uri: string, onChange: () => void) => (() => void) | undefined;

/**
 * resources/subscribe and resources/unsubscribe for one session. Services say which URIs they can
 * watch; a subscription lasts until unsubscribe or the end of the session. Subscribing to a
 * resource nobody watches is accepted (MCP allows it) and simply never produces an update.
 */
export function enableSubscriptions(server: McpServer, watchers: ResourceWatcher[], logger: Logger): void {
  const active = new Map<string, () => void>();
  server.server.registerCapabilities({ resources: { subscribe: true, listChanged: true } });
  server.server.setRequestHandler(SubscribeRequestSchema, async ({ params: { uri } }) => {
    if (active.has(uri)) return {};
    for (const watch of watchers) {
      const stop = watch(uri, () => {
        server.server.sendResourceUpdated({ uri }).catch((err) => logger.debug("resource update not delivered", { uri, error: String(err) }));
      });
      if (stop) {
        active.set(uri, stop);
        return {};
      }
    }
    logger.debug("subscription to a resource that does not change on its own", { uri });
    active.set(uri, () => undefined);
    return {};
  });
  server.server.setRequestHandler(UnsubscribeRequestSchema, async ({ params: { uri } }) => {
    active.get(uri)?.();
    active.delete(uri);
    return {};
  });
  const previous = server.server.onclose;
  server.server.onclose = () => {
    for (const stop of active.values()) stop();
    active.clear();
    previous?.();
  };
}
