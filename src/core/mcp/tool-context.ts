import type { McpServer, ServerContext } from "@modelcontextprotocol/server";
import type { CallEgress, Egress } from "../base/egress.js";
import { type CallContext, callHost, verifyOf, type ToolDef, type ToolHost } from "../tools/tool.js";
import { envelopeCapabilities } from "./envelope.js";
import { echoToClient, type LogLevelSession } from "./log-level.js";
import type { TenantRuntime } from "./runtime.js";

/** One call's host (its own scrubber) and context, made once per call for either path. */
export interface OpenCall {
  host: ToolHost & { egress: CallEgress };
  ctx: CallContext;
}

/**
 * A call whose request is still open: progress, logs and questions go to its client.
 * `blockingUntil`: when a call that is not a task must answer (ENV.maxBlockingWaitSeconds).
 */
export function openCall(
  server: McpServer,
  rt: TenantRuntime,
  def: ToolDef<any, any>,
  input: Record<string, unknown>,
  ctx: ServerContext,
  session: LogLevelSession,
  blockingUntil?: number,
): OpenCall {
  const host = callHost(rt.toolHost, def, input);
  const { egress } = host;
  const modern = ctx.mcpReq.envelope !== undefined;
  const call: CallContext = {
    signal: ctx.mcpReq.signal,
    progress: progressSender(egress, ctx),
    logger: rt.logger.withEcho(echoToClient(rt, ctx, session)),
    secret: (value) => egress.addSupplied(value),
    confirm: async (request) => {
      const canAsk = modern
        ? envelopeCapabilities(ctx)?.elicitation !== undefined
        : server.server.getClientCapabilities()?.elicitation !== undefined;
      const verify = def.kind !== "read" ? verifyOf(def, input, rt.toolHost) : undefined;
      return rt.definition.confirmations.confirm(ctx, {
        tool: def.name,
        input,
        request,
        canAsk,
        tenant: rt.owner(),
        verify,
      });
    },
    resourcesChanged: () => rt.changes.resourcesChanged(),
  };
  if (blockingUntil !== undefined) call.blockingUntil = blockingUntil;
  return { host, ctx: call };
}

function progressSender(egress: Egress, ctx: ServerContext): CallContext["progress"] {
  const token = ctx.mcpReq._meta?.progressToken;
  let counter = 0;
  return async ({ message, progress, total }) => {
    if (token === undefined || ctx.mcpReq.signal.aborted) return;
    counter = Math.max(counter + 1, progress ?? 0);
    await ctx.mcpReq
      .notify({
        method: "notifications/progress",
        params: {
          progressToken: token,
          progress: counter,
          ...(total !== undefined ? { total } : {}),
          message: egress.text(message),
        },
      })
      .catch(() => undefined);
  };
}
