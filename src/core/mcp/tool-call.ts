import { ProtocolError, ProtocolErrorCode, type McpServer, type ServerContext } from "@modelcontextprotocol/server";
import { takeRepeat } from "../tools/ledger.js";
import { annotationsFor, callHost, NeedsInput, parseInput, runTool, type ToolDef } from "../tools/tool.js";
import { askForInput } from "./confirm-form.js";
import type { Era } from "./era.js";
import { linkGate } from "./link-gate.js";
import type { LogLevelSession } from "./log-level.js";
import { registeredSchemas } from "./registered-schemas.js";
import type { TenantRuntime } from "./runtime.js";
import { withInputRequired, wrapRequestHandler } from "./sdk-internals.js";
import { startTask } from "./task-call.js";
import { declaresTasks } from "./task-protocol.js";
import { requestContext } from "./tool-context.js";

/** The only caller of the SDK's registerTool: a tool's blocking path (a call that is not a task). */
export function registerTool(
  server: McpServer,
  rt: TenantRuntime,
  def: ToolDef<any, any>,
  session: LogLevelSession,
): void {
  const schemas = registeredSchemas(def);
  const config = {
    title: def.title,
    description: def.description,
    inputSchema: schemas.input,
    outputSchema: schemas.output,
    annotations: annotationsFor(def),
    // MCP Apps: the view that shows this tool's result (the legacy key too, for older hosts).
    ...(def.view ? { _meta: { ui: { resourceUri: def.view }, "ui/resourceUri": def.view } } : {}),
  };
  const handler = async (parsed: Record<string, unknown>, ctx: ServerContext) => {
    const { input, repeat } = takeRepeat(parsed);
    const call = callHost(rt.toolHost, def, input);
    const toolCtx = requestContext(server, rt, call.egress, def, input, ctx, session);
    toolCtx.blockingUntil = Date.now() + rt.blockingWaitMs;
    try {
      const needsLink = await linkGate(server, rt, def, ctx);
      if (needsLink) return needsLink;
      // A spending call goes through the ledger: a repeat is answered, a first call recorded before it is sent.
      const ledger = def.kind === "spend" ? rt.ledger : undefined;
      if (ledger) return await ledger.run(ledger.call(def, input, repeat, rt.owner(ctx), toolCtx, call));
      return await runTool(def, input, toolCtx, call);
    } catch (err) {
      if (err instanceof NeedsInput) return askForInput(rt, err, ctx);
      throw err;
    }
  };
  server.registerTool(def.name, config, handler as never);
}

/**
 * tools/call, before the SDK's own handler: one clear field error for invalid arguments, and the
 * task path. A long-running tool becomes a task when the client asks for one (2025: `params.task`)
 * or supports them (2026: the tasks extension declared on the request); everything else, and
 * every other tool, goes to the SDK's blocking path with progress.
 */
export function interceptToolCalls(server: McpServer, rt: TenantRuntime, era: Era): void {
  const byName = new Map(rt.tools.map((t) => [t.name, t]));
  wrapRequestHandler(server, "tools/call", (original) => async (request, ctx) => {
    const def = byName.get(request.params?.name);
    if (!def) return original(request, ctx);
    // 2025-11-25: a task-augmented call carries `task` (its TTL) in the params.
    const legacyTaskRequest =
      era === "legacy" && typeof request.params?.task === "object" && request.params.task !== null;
    if (legacyTaskRequest && !def.longRunning)
      throw new ProtocolError(
        ProtocolErrorCode.MethodNotFound,
        `Tool ${def.name} does not support task-augmented execution; call it without "task"`,
      );
    const parsed = parseInput(def, request.params?.arguments);
    if (!parsed.ok) return parsed.result;
    const { input, repeat } = takeRepeat(parsed.input);
    const modernTask = era === "modern" && declaresTasks(ctx) && (def.longRunning?.runsAsTask?.(input) ?? true);
    const asTask = def.longRunning && (legacyTaskRequest || modernTask);
    // The SDK's handler gets the parsed arguments; its own validation passes them through (registered-schemas.ts).
    if (!asTask) return original({ ...request, params: { ...request.params, arguments: parsed.input } }, ctx);
    return withInputRequired(server, (req, c) => startTask(server, rt, def, input, repeat, req, c, era), request, ctx);
  });
}
