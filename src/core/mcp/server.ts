import type { McpServer } from "@modelcontextprotocol/server";
import { telemetry } from "../base/telemetry.js";
import type { ToolDef } from "../tools/tool.js";
import type { Era } from "./era.js";
import { ajvFormValidator } from "./form-validator.js";
import { followLogLevel } from "./log-level.js";
import { registerPrompt } from "./prompts.js";
import { registerResource, shapeResourceList } from "./resources.js";
import type { TenantRuntime } from "./runtime.js";
import { wrapEveryRequestHandler } from "./sdk-internals.js";
import { enableLegacySubscriptions } from "./subscriptions.js";
import { newMcpServer } from "./shell.js";
import { registerTaskMethods } from "./task-protocol.js";
import { interceptToolCalls, registerTool } from "./tool-call.js";
import { shapeToolList } from "./tool-list.js";
import { traceOperations } from "./traced.js";

/**
 * What one 2026-07-28 HTTP request asks (its Mcp-Method and Mcp-Name headers, which the SDK checks
 * against the body before the instance is made).
 */
export interface OneRequest {
  method?: string;
  name?: string;
}

/**
 * Builds one server instance for one era: per request (2026-07-28 HTTP), per session (2025
 * HTTP), or per connection (stdio). Cheap: everything heavy lives in the shared runtime.
 * `request`: the instance answers that one request, so it registers only what the request can
 * reach (registrationsFor); registering every tool was a tenth of a tools/call's CPU and most of
 * a tasks/get's.
 */
export function createMcpServer(rt: TenantRuntime, era: Era, request?: OneRequest): McpServer {
  const facts = {
    tasks: rt.definition.tools.some((t) => t.longRunning),
    completions: rt.definition.resources.some((r) => r.complete),
  };
  const shell = {
    ...facts,
    info: rt.definition.info,
    instructions: rt.definition.instructions,
    verifyRequestState: rt.definition.confirmations.verify,
    formValidator: ajvFormValidator,
  };
  return completeMcpServer(newMcpServer(shell, era), rt, era, request);
}

/**
 * Registers on `server` (made by newMcpServer with the same capabilities) what `rt` serves. A
 * stdio start calls it once its first answer is out (core/stdio/serve.ts), before the instance
 * sees a request that needs it.
 */
export function completeMcpServer(server: McpServer, rt: TenantRuntime, era: Era, request?: OneRequest): McpServer {
  const hasTaskTools = rt.definition.tools.some((t) => t.longRunning);
  const session = { logLevelSet: false };
  const needs = registrationsFor(rt, request);
  for (const def of needs.tools) registerTool(server, rt, def, session);
  for (const def of needs.resources ? rt.definition.resources : []) registerResource(server, rt, def);
  if (needs.resources && rt.definition.resources.length) shapeResourceList(server, rt);
  for (const def of needs.prompts ? rt.definition.prompts : []) registerPrompt(server, rt, def);
  shapeToolList(server, rt);
  interceptToolCalls(server, rt, era);
  if (hasTaskTools) registerTaskMethods(server, rt, era);
  if (era === "legacy") {
    enableLegacySubscriptions(server, rt);
    followLogLevel(server, session);
  }
  if (era === "modern") holdToExchange(server);
  scrubErrors(server, rt);
  if (telemetry.on) traceOperations(server, rt, era);
  return server;
}

/**
 * A 2026-07-28 instance may serve one exchange after another (http/modern.ts): a notification
 * that a handler sends once its exchange is over (a log line from work it left running) is
 * dropped, never delivered into the answer of the request the instance serves next.
 */
function holdToExchange(server: McpServer): void {
  wrapEveryRequestHandler(server, (original) => async (request, ctx) => {
    const exchange = server.server.transport;
    const live = () => server.server.transport === exchange;
    const { notify, log } = ctx.mcpReq;
    ctx.mcpReq.notify = (notification) => (live() ? notify(notification) : Promise.resolve());
    ctx.mcpReq.log = (level, data, logger) => (live() ? log(level, data, logger) : Promise.resolve());
    return original(request, ctx);
  });
}

/**
 * A protocol error leaves through the egress step like everything else: its message and data can
 * carry upstream words (a 404 that echoes the key), so every handler's error is scrubbed on its way out.
 */
function scrubErrors(server: McpServer, rt: TenantRuntime): void {
  wrapEveryRequestHandler(server, (original) => async (request, ctx) => {
    try {
      return await original(request, ctx);
    } catch (err) {
      if (err instanceof Error) {
        err.message = rt.egress.text(err.message);
        const holder = err as { data?: unknown };
        if (holder.data !== undefined) holder.data = rt.egress.json(holder.data);
      }
      throw err;
    }
  });
}

/**
 * What an instance for `request` must register: a tools/call its one tool (all of them when the
 * header names none: an unknown tool, or a name in the header's Base64 form), tools/list every tool,
 * resources/* the resources, prompts/* the prompts, completion/complete both; tasks/*, discovery,
 * listen, ping and notifications nothing. Without a request (sessions, stdio): everything.
 */
function registrationsFor(
  rt: TenantRuntime,
  request: OneRequest | undefined,
): { tools: readonly ToolDef<any, any>[]; resources: boolean; prompts: boolean } {
  const method = request?.method;
  if (method === undefined) return { tools: rt.definition.tools, resources: true, prompts: true };
  if (method === "tools/call") {
    const called = rt.definition.tools.filter((t) => t.name === request?.name);
    return { tools: called.length ? called : rt.definition.tools, resources: false, prompts: false };
  }
  return {
    tools: method === "tools/list" ? rt.definition.tools : [],
    resources: method.startsWith("resources/") || method === "completion/complete",
    prompts: method.startsWith("prompts/") || method === "completion/complete",
  };
}
