import type { McpServer, ServerContext } from "@modelcontextprotocol/server";

type Handler = (request: any, ctx: ServerContext) => Promise<any>;

/**
 * McpServer offers no hook around its own request handlers. The places that need one (shaping
 * tools/list per protocol revision, turning a tools/call into a task, noticing logging/setLevel)
 * wrap the handler in the SDK's map, and the task path runs the SDK's multi-round-trip seam
 * itself. The SDK version is pinned; test/unit/sdk-internals.test.ts drives each member through
 * a real server and client, so an upgrade that changes one fails `npm test`. docs/architecture.md
 * proposes the public hook that would replace each.
 */
interface ServerInternals {
  _requestHandlers: Map<string, Handler>;
  _invokeInputRequiredCapableHandler(
    method: string,
    handler: Handler,
    request: unknown,
    ctx: ServerContext,
  ): Promise<any>;
}

function internals(server: McpServer): ServerInternals {
  const inner = server.server as unknown as Partial<ServerInternals>;
  if (!(inner._requestHandlers instanceof Map) || typeof inner._invokeInputRequiredCapableHandler !== "function") {
    const members = "_requestHandlers, _invokeInputRequiredCapableHandler";
    throw new Error(`switchboard-mcp: the SDK's Server changed shape (${members}); update core/mcp/sdk-internals.ts`);
  }
  return inner as ServerInternals;
}

export function wrapRequestHandler(server: McpServer, method: string, wrap: (original: Handler) => Handler): void {
  const handlers = internals(server)._requestHandlers;
  const original = handlers.get(method);
  if (!original)
    throw new Error(
      `switchboard-mcp: the SDK has no ${method} handler to wrap; check core/mcp/sdk-internals.ts after an SDK upgrade`,
    );
  handlers.set(method, wrap(original));
}

/** Wraps every request handler registered so far (call it once every handler is in place). */
export function wrapEveryRequestHandler(server: McpServer, wrap: (original: Handler) => Handler): void {
  const handlers = internals(server)._requestHandlers;
  for (const [method, original] of handlers) handlers.set(method, wrap(original));
}

/** Runs a tools/call handler through the SDK's input_required seam (requestState check, legacy shim). */
export function withInputRequired(
  server: McpServer,
  handler: Handler,
  request: unknown,
  ctx: ServerContext,
): Promise<any> {
  return internals(server)._invokeInputRequiredCapableHandler.call(server.server, "tools/call", handler, request, ctx);
}

/**
 * Runs `register` on an instance that is already connected without announcing list changes:
 * McpServer's register* methods tell a connected client its list changed, yet these are what the
 * instance advertised from the start (a stdio start registers them after its first answer).
 */
export function registerQuietly(server: McpServer, register: () => void): void {
  const quiet = server as unknown as Record<string, unknown>;
  const methods = ["sendToolListChanged", "sendResourceListChanged", "sendPromptListChanged"];
  for (const m of methods) quiet[m] = () => undefined;
  try {
    register();
  } finally {
    for (const m of methods) delete quiet[m];
  }
}

/**
 * McpServer adds the completion/complete handler, and the capability with it, when the first
 * resource with completions registers, which it refuses once connected. An instance that will
 * register such resources after connecting (registerQuietly) adds the handler before.
 */
export function prepareCompletions(server: McpServer): void {
  const inner = server as unknown as { setCompletionRequestHandler?: () => void };
  if (typeof inner.setCompletionRequestHandler !== "function")
    throw new Error(
      "switchboard-mcp: the SDK's McpServer changed shape (setCompletionRequestHandler); " +
        "update core/mcp/sdk-internals.ts",
    );
  inner.setCompletionRequestHandler();
}
