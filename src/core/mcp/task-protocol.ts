import {
  CancelTaskRequestSchema,
  GetTaskPayloadRequestSchema,
  GetTaskRequestSchema,
  ListTasksRequestSchema,
} from "@modelcontextprotocol/core";
import {
  MissingRequiredClientCapabilityError,
  ProtocolError,
  ProtocolErrorCode,
  CLIENT_CAPABILITIES_META_KEY,
  RELATED_TASK_META_KEY,
  SERVER_INFO_META_KEY,
  type JSONRPCRequest,
  type McpServer,
  type ServerContext,
} from "@modelcontextprotocol/server";
import { z } from "zod";
import { telemetry } from "../base/telemetry.js";
import { envelopeCapabilities } from "./envelope.js";
import { MODERN_REVISION } from "./era.js";
import { TASKS_EXTENSION } from "./shell.js";
import type { TenantRuntime } from "./runtime.js";
import { BadCursorError, TERMINAL, type TaskRecord } from "../tasks/store.js";

/** The 2026-07-28 tasks extension (SEP-2663); declared in mcp/shell.ts, which answers before this module loads. */
export { TASKS_EXTENSION };

/** Did this 2026-07-28 request declare the tasks extension? */
export function declaresTasks(ctx: ServerContext): boolean {
  return envelopeCapabilities(ctx)?.extensions?.[TASKS_EXTENSION] !== undefined;
}

/** 2025-11-25's Task: a bare status, its TTL as `ttl`, its interval as `pollInterval`. */
export function legacyTask(r: TaskRecord) {
  // A tool result with isError ended the work in failure, which 2025-11-25 calls "failed".
  const status = r.status === "completed" && r.result?.isError ? "failed" : r.status;
  return {
    taskId: r.taskId,
    status,
    statusMessage: r.statusMessage,
    createdAt: r.createdAt,
    lastUpdatedAt: r.lastUpdatedAt,
    ttl: r.ttlMs,
    pollInterval: r.pollIntervalMs,
  };
}

/** 2026-07-28's task handle (`resultType: "task"` is added by the caller). */
export function modernTask(r: TaskRecord) {
  return {
    taskId: r.taskId,
    status: r.status,
    statusMessage: r.statusMessage,
    createdAt: r.createdAt,
    lastUpdatedAt: r.lastUpdatedAt,
    ttlMs: r.ttlMs,
    pollIntervalMs: r.pollIntervalMs,
  };
}

/** A DetailedTask: the handle plus the result or error, inline, once the task has ended. */
function detailedTask(r: TaskRecord) {
  const base = modernTask(r);
  // The inline result is the tools/call result as the wire would carry it, discriminator included.
  if (r.status === "completed" && r.result) return { ...base, result: { ...r.result, resultType: "complete" } };
  if (r.status === "failed")
    return { ...base, error: r.error ?? { code: -32603, message: r.statusMessage ?? "The task failed." } };
  return base;
}

/** Tasks per tasks/list page (2025-11-25): a tenant's full list was one 420 KB answer at 1,500 tasks. */
const TASKS_PAGE_SIZE = 50;

/** A store that cannot answer (Redis away) is a clear, retryable error, never a hang. */
async function stateCall<T>(rt: TenantRuntime, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof ProtocolError) throw err;
    if (err instanceof BadCursorError) throw new ProtocolError(ProtocolErrorCode.InvalidParams, err.message);
    const cause = rt.egress.text(err instanceof Error ? err.message : String(err));
    throw new ProtocolError(
      ProtocolErrorCode.InternalError,
      `The task store is unavailable right now (${cause}); retry in a few seconds. The upstream work is not affected.`,
    );
  }
}

const notFound = (taskId: string) =>
  new ProtocolError(
    ProtocolErrorCode.InvalidParams,
    `Failed to retrieve task: Task not found (${taskId}); it may have expired`,
  );
const taskIdParams = z.looseObject({ taskId: z.string().min(1) });

/**
 * A 2026-07-28 tasks/get answered without a server instance (a client polls it every second or
 * two), for the one outcome that needs nothing of the SDK: a request that declared the extension
 * asks for a task of its tenant, found or not. The answer is what the instance's handler below
 * returns, encoded as the SDK encodes a result (`resultType`, its serverInfo in `_meta`), or its
 * "not found" error (scrubbed as every handler's error is); a differential test compares the two.
 * Undefined otherwise (not declared, a store that fails, a malformed id): the instance answers
 * those, with its own errors. `message` has passed the entry's checks (http/modern.ts).
 */
export async function answerTaskGet(rt: TenantRuntime, message: JSONRPCRequest): Promise<object | undefined> {
  const params = message.params as { taskId?: unknown; _meta?: Record<string, any> } | undefined;
  const taskId = params?.taskId;
  const declared = params?._meta?.[CLIENT_CAPABILITIES_META_KEY]?.extensions?.[TASKS_EXTENSION] !== undefined;
  if (!declared || typeof taskId !== "string" || taskId.length === 0) return undefined;
  // Its SERVER span, as the instance's handlers get theirs (mcp/traced.ts), linked to the task's.
  // No SDK request here: a signal of its own is the scope the link finds the span by.
  const scope = new AbortController().signal;
  const op = {
    method: "tasks/get",
    id: message.id,
    protocolVersion: MODERN_REVISION,
    meta: params?._meta,
    signal: scope,
  };
  return telemetry.operation(
    op,
    async () => {
      let record: TaskRecord | undefined;
      try {
        record = await rt.definition.tasks.get(taskId, rt.owner());
      } catch {
        return undefined;
      }
      // A miss is answered from this read too: the instance would only read the store again.
      if (!record) {
        const error = { code: ProtocolErrorCode.InvalidParams, message: rt.egress.text(notFound(taskId).message) };
        return { jsonrpc: "2.0", id: message.id, error };
      }
      telemetry.link(record.traceparent, "task", scope);
      const result = {
        ...detailedTask(record),
        resultType: "complete",
        _meta: { [SERVER_INFO_META_KEY]: rt.definition.info },
      };
      return { result, jsonrpc: "2.0", id: message.id };
    },
    (text) => rt.egress.text(text),
  );
}

/**
 * tasks/* for the era an instance serves. 2025: get, result, list, cancel (the SDK v2 no longer
 * implements them; the deprecated wire schemas it still exports validate the requests). 2026:
 * get, update, cancel of the extension, refused (-32021) to a request that did not declare it.
 */
export function registerTaskMethods(server: McpServer, rt: TenantRuntime, era: "legacy" | "modern"): void {
  const tasks = rt.definition.tasks;
  // A client's poll of a task (tasks/get, tasks/result, ...) links its span to the task's.
  const find = async (taskId: string, ctx: ServerContext) => {
    const record = await stateCall(rt, () => tasks.get(taskId, rt.owner()));
    if (!record) throw notFound(taskId);
    telemetry.link(record.traceparent, "task", ctx.mcpReq.signal);
    return record;
  };
  const s = server.server;
  if (era === "legacy") {
    s.setRequestHandler("tasks/get", { params: GetTaskRequestSchema.shape.params }, async ({ taskId }, ctx) =>
      legacyTask(await find(taskId, ctx)),
    );
    s.setRequestHandler(
      "tasks/list",
      { params: ListTasksRequestSchema.shape.params ?? z.looseObject({}).optional() },
      async (params) => {
        const cursor = (params as { cursor?: string } | undefined)?.cursor;
        const page = await stateCall(rt, () => tasks.store.list(rt.owner(), { cursor, limit: TASKS_PAGE_SIZE }));
        return { tasks: page.tasks.map(legacyTask), ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}) };
      },
    );
    s.setRequestHandler("tasks/cancel", { params: CancelTaskRequestSchema.shape.params }, async ({ taskId }, ctx) => {
      const before = await find(taskId, ctx);
      if (TERMINAL.has(before.status))
        throw new ProtocolError(
          ProtocolErrorCode.InvalidParams,
          `Cannot cancel task ${taskId}: it is already ${legacyTask(before).status}`,
        );
      return legacyTask((await stateCall(rt, () => tasks.cancel(taskId, rt.owner()))) ?? before);
    });
    s.setRequestHandler(
      "tasks/result",
      { params: GetTaskPayloadRequestSchema.shape.params },
      async ({ taskId }, ctx) => {
        const done = await tasks.whenTerminal(await find(taskId, ctx), ctx.mcpReq.signal);
        if (!done) throw notFound(taskId);
        const meta = { [RELATED_TASK_META_KEY]: { taskId } };
        if (done.result) return { ...done.result, _meta: { ...done.result._meta, ...meta } };
        throw new ProtocolError(
          done.error?.code ?? ProtocolErrorCode.InternalError,
          done.error?.message ?? `Task ${taskId} was ${done.status} before it produced a result`,
        );
      },
    );
    return;
  }
  const requireExtension = (ctx: ServerContext) => {
    if (!declaresTasks(ctx))
      throw new MissingRequiredClientCapabilityError(
        { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
        "Missing required client capability: the tasks extension",
      );
  };
  s.setRequestHandler("tasks/get", { params: taskIdParams }, async ({ taskId }, ctx) => {
    requireExtension(ctx);
    return detailedTask(await find(taskId, ctx));
  });
  s.setRequestHandler("tasks/update", { params: taskIdParams }, async ({ taskId }, ctx) => {
    requireExtension(ctx);
    // No tool here asks for input mid-task; answers to requests it never made are ignored (spec).
    await find(taskId, ctx);
    return {};
  });
  s.setRequestHandler("tasks/cancel", { params: taskIdParams }, async ({ taskId }, ctx) => {
    requireExtension(ctx);
    await find(taskId, ctx);
    await stateCall(rt, () => tasks.cancel(taskId, rt.owner()));
    return {};
  });
}
