import { ProtocolError, ProtocolErrorCode, type McpServer, type ServerContext } from "@modelcontextprotocol/server";
import { takeRepeat } from "../tools/ledger.js";
import { annotationsFor, NeedsInput, parseInput, runTool, type ToolDef } from "../tools/tool.js";
import { askForInput } from "./confirm-form.js";
import type { Era } from "./era.js";
import { linkGate } from "./link-gate.js";
import type { LogLevelSession } from "./log-level.js";
import { registeredSchemas } from "./registered-schemas.js";
import type { TenantRuntime } from "./runtime.js";
import { withInputRequired, wrapRequestHandler } from "./sdk-internals.js";
import { startTask } from "./task-call.js";
import { declaresTasks } from "./task-protocol.js";
import { openCall } from "./tool-context.js";

type SdkHandler = (request: any, ctx: ServerContext) => Promise<any>;

/**
 * The only caller of the SDK's registerTool. The SDK's handler of a tool is its blocking path (a
 * call that is not a task); it gets the arguments `routeToolCall` already validated.
 */
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
  const handler = (parsed: Record<string, unknown>, ctx: ServerContext) =>
    runBlocking(server, rt, def, parsed, ctx, session);
  server.registerTool(def.name, config, handler as never);
}

/**
 * tools/call, before the SDK's own handler, for every tool of this instance: the one place that
 * validates a call's arguments (with a message naming the field) and chooses its path. A
 * long-running tool becomes a task when the client asks for one (2025: `params.task`) or supports
 * them (2026: the tasks extension declared on the request); everything else goes to the SDK's
 * handler (`runBlocking`), whose own input check passes the parsed arguments through.
 */
export function interceptToolCalls(server: McpServer, rt: TenantRuntime, era: Era): void {
  const byName = new Map(rt.definition.tools.map((t) => [t.name, t]));
  wrapRequestHandler(
    server,
    "tools/call",
    (sdkHandler) => (request, ctx) =>
      routeToolCall(server, rt, era, byName.get(request.params?.name), sdkHandler, request, ctx),
  );
}

async function routeToolCall(
  server: McpServer,
  rt: TenantRuntime,
  era: Era,
  def: ToolDef<any, any> | undefined,
  sdkHandler: SdkHandler,
  request: any,
  ctx: ServerContext,
) {
  // An unknown tool: the SDK answers it.
  if (!def) return sdkHandler(request, ctx);
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
  const args = parsed.input;
  const asTask =
    def.longRunning &&
    (legacyTaskRequest || (era === "modern" && declaresTasks(ctx) && (def.longRunning.runsAsTask?.(args) ?? true)));
  if (asTask) return withInputRequired(server, (req, c) => startTask(server, rt, def, args, req, c, era), request, ctx);
  return sdkHandler({ ...request, params: { ...request.params, arguments: args } }, ctx);
}

/** A call that is not a task, from the SDK's handler of its tool: link gate, then the ledger or the tool. */
async function runBlocking(
  server: McpServer,
  rt: TenantRuntime,
  def: ToolDef<any, any>,
  args: Record<string, unknown>,
  ctx: ServerContext,
  session: LogLevelSession,
) {
  const { input, repeat } = takeRepeat(def, args);
  const call = openCall(server, rt, def, input, ctx, session, Date.now() + rt.definition.blockingWaitMs);
  try {
    const needsLink = await linkGate(server, rt, def, ctx);
    if (needsLink) return needsLink;
    // A spending call goes through the ledger: a repeat is answered, a first call recorded before it is sent.
    const ledger = def.kind === "spend" ? rt.definition.ledger : undefined;
    if (ledger) return await ledger.run(ledger.call(def, input, repeat, rt.owner(), call.ctx, call.host));
    return await runTool(def, input, call.ctx, call.host);
  } catch (err) {
    if (err instanceof NeedsInput) return askForInput(rt, err, ctx);
    throw err;
  }
}
