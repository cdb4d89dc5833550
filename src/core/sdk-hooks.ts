import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";

type Handler = (request: any, extra: any) => Promise<unknown>;

/**
 * McpServer offers no hook around its own request handlers, so the two places that need one
 * (compacting tools/list, telling a task-augmented tools/call from a plain one) wrap the handler
 * in the SDK's map. The SDK version is pinned; tests fail if a wrap stops taking effect.
 */
export function wrapRequestHandler(server: McpServer, method: string, wrap: (original: Handler) => Handler): void {
  const handlers = (server.server as unknown as { _requestHandlers: Map<string, Handler> })._requestHandlers;
  const original = handlers.get(method);
  if (original) handlers.set(method, wrap(original));
}

/** Calls `onLevel` whenever the client sets its logging level (the SDK keeps it private). */
export function onSetLoggingLevel(server: McpServer, onLevel: (level: string) => void): void {
  wrapRequestHandler(server, "logging/setLevel", (original) => async (request, extra) => {
    const answer = await original(request, extra);
    if (typeof request?.params?.level === "string") onLevel(request.params.level);
    return answer;
  });
}

/** Signals of tools/call requests that asked for a task (the task handler sees the same signal). */
const taskRequests = new WeakSet<AbortSignal>();

export function markTaskRequests(server: McpServer): void {
  wrapRequestHandler(server, "tools/call", (original) => (request, extra) => {
    if (request?.params?.task) taskRequests.add(extra.signal);
    return original(request, extra);
  });
}

export function isTaskRequest(signal: AbortSignal): boolean {
  return taskRequests.has(signal);
}
