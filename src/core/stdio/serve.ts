import type { McpServer } from "@modelcontextprotocol/server";
import { serveStdio } from "@modelcontextprotocol/server/stdio";
import { createMcpServer } from "../mcp/server.js";
import type { TenantRuntime } from "../mcp/runtime.js";
import { watchResource } from "../mcp/subscriptions.js";
import { LineTransport } from "./transport.js";

/**
 * Serves one stdio connection in whichever era its opening picks (serveStdio pins it): a 2025
 * `initialize` or a 2026-07-28 `server/discover`. On 2026-07-28, resource updates reach a client
 * on its `subscriptions/listen` stream: the resources it names are followed while the stream lasts.
 */
export function serveStdioApp(rt: TenantRuntime, onEnd: () => void): void {
  const transport = new LineTransport(process.stdin, process.stdout);
  let instance: McpServer | undefined;
  const listens = new Map<string | number, () => void>();
  transport.observe = (message) => {
    const m = message as { id?: string | number; method?: string; params?: Record<string, any> };
    if (m.method === "subscriptions/listen" && m.id !== undefined) {
      const uris: unknown = m.params?.notifications?.resourceSubscriptions;
      if (!Array.isArray(uris)) return;
      const stops = uris
        .filter((u): u is string => typeof u === "string")
        .map((uri) =>
          watchResource(rt, uri, () => void instance?.server.sendResourceUpdated({ uri }).catch(() => undefined)),
        );
      listens.set(m.id, () => stops.forEach((stop) => stop()));
    } else if (m.method === "notifications/cancelled") {
      const id = m.params?.requestId;
      listens.get(id)?.();
      listens.delete(id);
    }
  };
  transport.afterClose = () => {
    for (const stop of listens.values()) stop();
    listens.clear();
    onEnd();
  };
  serveStdio(
    ({ era }) => {
      instance = createMcpServer(rt, era);
      if (era === "modern") {
        const server = instance;
        rt.changes.add(() => server.sendResourceListChanged());
      }
      return instance;
    },
    { transport, onerror: (err) => rt.logger.debug("stdio transport error", { error: err.message }) },
  );
}
