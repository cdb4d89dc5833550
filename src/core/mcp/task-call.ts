import { ProtocolError, type CallToolResult, type McpServer, type ServerContext } from "@modelcontextprotocol/server";
import { TaskLimitError } from "../tasks/runner.js";
import { takeRepeat } from "../tools/ledger.js";
import { failure, NeedsInput, runBefore, type ToolDef } from "../tools/tool.js";
import { askForInput } from "./confirm-form.js";
import type { Era } from "./era.js";
import { linkGate } from "./link-gate.js";
import { taskTool, type TenantRuntime } from "./runtime.js";
import { legacyTask, modernTask } from "./task-protocol.js";
import { openCall } from "./tool-context.js";

/** A task-augmented 2025 call past the tenant's cap of working tasks (2026-07-28 gets an isError result). */
const TASK_LIMIT_CODE = -32000;

/** A long-running tool's call that becomes a task: admitted, asked, refused or started. */
export async function startTask(
  server: McpServer,
  rt: TenantRuntime,
  def: ToolDef<any, any>,
  args: Record<string, unknown>,
  request: any,
  ctx: ServerContext,
  era: Era,
) {
  const limited = (err: unknown) => {
    if (!(err instanceof TaskLimitError)) throw err;
    if (era === "legacy") throw new ProtocolError(TASK_LIMIT_CODE, err.message);
    return { content: [{ type: "text", text: err.message }], isError: true } satisfies CallToolResult;
  };
  const { input, repeat } = takeRepeat(def, args);
  let quota: string;
  try {
    // Keys no upstream accepted yet share one share of the cap (made-up keys cannot hold many tasks).
    quota = (await rt.quotaKeyNow?.()) ?? rt.owner();
    // Before `before`: a confirmation is not spent on a task that would be refused.
    await rt.definition.tasks.admit(rt.owner(), quota);
  } catch (err) {
    return limited(err);
  }
  const { host: call, ctx: toolCtx } = openCall(server, rt, def, input, ctx, { logLevelSet: true });
  let refused: CallToolResult | undefined;
  // A spending call goes through the ledger: a repeat gets the first call's task or outcome.
  const ledger = def.kind === "spend" ? rt.definition.ledger : undefined;
  const spend = ledger?.call(def, input, repeat, rt.owner(), toolCtx, call);
  try {
    const needsLink = await linkGate(server, rt, def, ctx);
    if (needsLink && "resultType" in needsLink) return needsLink;
    if (needsLink) refused = needsLink;
    else if (ledger && spend) {
      const opened = await ledger.open(spend);
      const first = opened.prior?.task && (await rt.definition.tasks.get(opened.prior.task, rt.owner()));
      if (first) return era === "legacy" ? { task: legacyTask(first) } : { resultType: "task", ...modernTask(first) };
      refused = opened.answer;
    } else refused = await runBefore(def, input, toolCtx, call);
  } catch (err) {
    if (err instanceof NeedsInput) return askForInput(rt, err, ctx);
    refused = failure(def, input, err, toolCtx, call, performance.now());
  }
  // A refusal before any work (too few credits, a declined confirmation) is the call's answer: as
  // is on 2026-07-28 (the server decides whether to make a task), as an ended task on 2025.
  if (refused)
    return era === "legacy"
      ? { task: legacyTask(await rt.definition.tasks.settled(rt.owner(), def, refused)) }
      : refused;
  const requestedTtl = era === "legacy" ? (request.params?.task as { ttl?: number } | undefined)?.ttl : undefined;
  // The cap is taken atomically here (admit above only refuses early): concurrent calls never pass it.
  const record = await rt.definition.tasks
    .start({
      owner: rt.owner(),
      quota,
      tool: taskTool(rt, def),
      credentials: rt.credentials ? { ...rt.credentials } : undefined,
      input,
      ttlMs: requestedTtl ?? undefined,
      scope: ctx.mcpReq.signal,
    })
    .catch(async (err: unknown) => {
      // Not started: nothing was sent, so the ledger's record goes.
      if (spend) await ledger!.abandon(spend);
      return limited(err);
    });
  if (!("taskId" in record)) return record;
  if (spend) await ledger!.started(spend, record.taskId);
  return era === "legacy" ? { task: legacyTask(record) } : { resultType: "task", ...modernTask(record) };
}
