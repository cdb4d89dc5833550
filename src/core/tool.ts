import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CreateTaskRequestHandlerExtra } from "@modelcontextprotocol/sdk/experimental/tasks/interfaces.js";
import { ElicitResultSchema, type CallToolResult, type ServerNotification, type ServerRequest, type ToolAnnotations } from "@modelcontextprotocol/sdk/types.js";
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js";
import { z } from "zod";
import type { Toolset } from "../config.js";
import { describeError } from "./errors.js";
import { fitStructured, fitText } from "./fit.js";
import { isTaskRequest } from "./sdk-hooks.js";
import { DEFAULT_WAIT_SECONDS } from "./wait.js";
import type { Logger } from "./logger.js";
import type { SecretRegistry } from "./redact.js";
import type { CancellableTaskStore } from "./tasks.js";

/**
 * What a tool does to the world. It decides the annotations and whether `--read-only` keeps it:
 * only `read` tools survive read-only mode.
 */
export type ToolKind = "read" | "write" | "spend" | "destructive";

export interface ProgressUpdate {
  message: string;
  /** Defaults to a counter that rises by one on every update. */
  progress?: number;
  total?: number;
}

export type ElicitOutcome = { action: "accept"; content: Record<string, unknown> } | { action: "decline" | "cancel" } | { action: "unsupported" };

export interface ToolContext {
  /** Aborted when the client cancels the call or its task, or the session ends. */
  signal: AbortSignal;
  /** Sends notifications/progress when the client asked for progress, and updates the task's status. */
  progress(update: ProgressUpdate): Promise<void>;
  logger: Logger;
  /** Registers a value the caller supplied as secret, so it is scrubbed from every output and log. */
  secret(value: string | undefined): void;
  /** Asks the user through MCP elicitation; `unsupported` when the client cannot be asked. */
  elicit(message: string, schema: ElicitSchema): Promise<ElicitOutcome>;
  /** Tells every connected session that the resource list changed. */
  resourcesChanged(): void;
}

/** The one form this server asks for: yes/no fields. */
export interface ElicitSchema {
  type: "object";
  properties: Record<string, { type: "boolean"; title?: string; description?: string; default?: boolean }>;
  required?: string[];
}

type Shape = z.ZodRawShape;
type Obj<S extends Shape> = z.infer<z.ZodObject<S>>;

export interface ToolDef<In extends Shape = Shape, Out extends z.ZodObject = z.ZodObject> {
  name: string;
  title: string;
  /** When to use it, what it costs, what comes back. Every token here is paid by every conversation. */
  description: string;
  toolset: Toolset;
  kind: ToolKind;
  /** Defaults: true for read and destructive (DELETE) tools, false otherwise. */
  idempotent?: boolean;
  /** Can run for minutes: declares optional MCP task support. */
  longRunning?: boolean;
  input: In;
  output: Out;
  /** Runs in the foreground before `run`, even for a task: confirmations and guards that may refuse. */
  before?(input: Obj<In>, ctx: ToolContext): Promise<void>;
  run(input: Obj<In>, ctx: ToolContext): Promise<z.infer<Out>>;
  /** A short summary for people and models; structuredContent carries the data. */
  render(output: z.infer<Out>, input: Obj<In>): string;
  /** For writes: how to check whether a request whose answer was lost went through. */
  verify?: (input: Obj<In>) => string;
}

/** Identity function that lets TypeScript infer a tool's input and output types from its schemas. */
export function defineTool<In extends Shape, Out extends z.ZodObject>(def: ToolDef<In, Out>): ToolDef<In, Out> {
  return def;
}

/** A tool failure we detected ourselves (a failed build, a declined confirmation...). */
export class ToolError extends Error {
  constructor(
    message: string,
    readonly structured?: Record<string, unknown>,
  ) {
    super(message);
    this.name = "ToolError";
  }
}

export function annotationsFor(def: Pick<ToolDef, "kind" | "idempotent" | "title">): ToolAnnotations {
  return {
    title: def.title,
    readOnlyHint: def.kind === "read",
    destructiveHint: def.kind === "destructive",
    idempotentHint: def.idempotent ?? (def.kind === "read" || def.kind === "destructive"),
    openWorldHint: true,
  };
}

export interface RegistrationOptions {
  toolsets: readonly Toolset[];
  readOnly: boolean;
  logger: Logger;
  secrets: SecretRegistry;
  taskStore: CancellableTaskStore;
  /** What tasks/get tells clients about how often to poll. */
  taskPollIntervalMs: number;
  resourcesChanged(): void;
}

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

const DEFAULT_TASK_TTL_MS = 60 * 60_000;
const MAX_TASK_TTL_MS = 24 * 60 * 60_000;
/** A task-capable call that finishes this fast comes back already completed. */
const QUICK_RESULT_GRACE_MS = 1500;
const PROGRESS_SETTLE_MS = 25;
const PLAIN_CALL_POLL_MS = 100;

/**
 * The one place a tool is registered. Filtering by toolset and read-only mode, annotations,
 * structured content plus text, error mapping, secret scrubbing and task support happen here,
 * the same for every tool.
 */
export function registerTools(server: McpServer, tools: readonly ToolDef<any, any>[], options: RegistrationOptions): string[] {
  const registered: string[] = [];
  for (const def of tools) {
    if (!options.toolsets.includes(def.toolset)) continue;
    if (options.readOnly && def.kind !== "read") continue;
    const config = {
      title: def.title,
      description: def.description,
      inputSchema: def.input,
      outputSchema: def.output,
      annotations: annotationsFor(def),
    };
    if (def.longRunning) {
      server.experimental.tasks.registerToolTask(def.name, { ...config, execution: { taskSupport: "optional" } }, {
        createTask: ((input: Record<string, unknown>, extra: CreateTaskRequestHandlerExtra) => createTask(def, input, extra, server, options)) as never,
        getTask: (async (_input: unknown, extra: { taskId: string; taskStore: { getTask(id: string): Promise<unknown> } }) => extra.taskStore.getTask(extra.taskId)) as never,
        getTaskResult: (async (_input: unknown, extra: { taskId: string; taskStore: { getTaskResult(id: string): Promise<unknown> } }) =>
          extra.taskStore.getTaskResult(extra.taskId)) as never,
      });
    } else {
      server.registerTool(def.name, config, ((input: Record<string, unknown>, extra: Extra) =>
        invoke(def, input, contextFor(extra, server, options), options.secrets)) as never);
    }
    registered.push(def.name);
  }
  return registered;
}

function contextFor(extra: Extra, server: McpServer, options: RegistrationOptions, overrides: Partial<ToolContext> = {}): ToolContext {
  return {
    signal: extra.signal,
    progress: progressSender(extra, options.secrets),
    logger: options.logger,
    secret: (v) => options.secrets.add(v),
    elicit: (message, schema) => elicit(server, extra, message, schema),
    resourcesChanged: options.resourcesChanged,
    ...overrides,
  };
}

/** Runs `before` then `run`, and turns the outcome into a CallToolResult. Never throws. */
async function invoke(def: ToolDef<any, any>, input: Record<string, unknown>, ctx: ToolContext, secrets: SecretRegistry, skipBefore = false): Promise<CallToolResult> {
  const started = performance.now();
  try {
    if (def.before && !skipBefore) await def.before(input, ctx);
    return success(def, input, await def.run(input, ctx), ctx, secrets, started);
  } catch (err) {
    return failure(def, input, err, ctx, secrets, started);
  }
}

function success(def: ToolDef<any, any>, input: Record<string, unknown>, raw: unknown, ctx: ToolContext, secrets: SecretRegistry, started: number): CallToolResult {
  const { output, trims } = fitStructured(secrets.scrub(raw) as Record<string, unknown>);
  ctx.logger.debug("tool call", { tool: def.name, ms: Math.round(performance.now() - started), ok: true });
  return { content: [{ type: "text", text: fitText(secrets.scrubText(def.render(output, input)), trims) }], structuredContent: output };
}

function failure(def: ToolDef<any, any>, input: Record<string, unknown>, err: unknown, ctx: ToolContext, secrets: SecretRegistry, started: number): CallToolResult {
  const message = secrets.scrubText(describeError(err, def.kind !== "read" ? def.verify?.(input) : undefined));
  const level = err instanceof ToolError ? "info" : "warn";
  ctx.logger[level]("tool call failed", { tool: def.name, ms: Math.round(performance.now() - started), error: message });
  const result: CallToolResult = { content: [{ type: "text", text: message }], isError: true };
  if (err instanceof ToolError && err.structured) result.structuredContent = secrets.scrub(err.structured);
  return result;
}

/**
 * Task path. Guards run while the request is still open (a confirmation needs the user); then the
 * work runs in the background, updating the task's status message on every progress line, until
 * it completes, fails, is cancelled with tasks/cancel, or its TTL runs out.
 */
async function createTask(def: ToolDef<any, any>, input: Record<string, unknown>, extra: CreateTaskRequestHandlerExtra, server: McpServer, options: RegistrationOptions) {
  // A plain call also arrives here (the SDK then polls the store for it): its task must outlive
  // the whole wait, and is dropped as soon as the answer has been read.
  const asTask = isTaskRequest(extra.signal);
  const budgetMs = (typeof input.timeoutSeconds === "number" ? input.timeoutSeconds : DEFAULT_WAIT_SECONDS) * 1000 + 60_000;
  const ttl = asTask ? Math.min(extra.taskRequestedTtl ?? DEFAULT_TASK_TTL_MS, MAX_TASK_TTL_MS) : Math.max(DEFAULT_TASK_TTL_MS, budgetMs);
  const task = await extra.taskStore.createTask({ ttl, pollInterval: options.taskPollIntervalMs });
  const controller = options.taskStore.track(task, asTask);
  const signal = AbortSignal.any([controller.signal, extra.signal]);
  const sendProgress = progressSender(extra, options.secrets);
  let lastProgressAt = 0;
  const ctx = contextFor(extra, server, options, {
    signal,
    progress: async (update) => {
      await options.taskStore.updateTaskStatus(task.taskId, "working", options.secrets.scrubText(update.message), extra.sessionId).catch(() => undefined);
      await sendProgress(update);
      lastProgressAt = Date.now();
    },
  });

  let preflight: CallToolResult | undefined;
  if (def.before) {
    try {
      await def.before(input, ctx);
    } catch (err) {
      preflight = failure(def, input, err, ctx, options.secrets, performance.now());
    }
  }
  const work = (preflight ? Promise.resolve(preflight) : invoke(def, input, ctx, options.secrets, true))
    .then(async (result) => {
      // The SDK client handles progress notifications a tick later than responses, so a final
      // progress line read in the same chunk as the result would be dropped. Keep them apart.
      const sinceProgress = Date.now() - lastProgressAt;
      if (sinceProgress < PROGRESS_SETTLE_MS) await new Promise((r) => setTimeout(r, PROGRESS_SETTLE_MS - sinceProgress));
      if (signal.aborted) return;
      await options.taskStore.storeTaskResult(task.taskId, result.isError ? "failed" : "completed", result, extra.sessionId);
      if (!asTask) setTimeout(() => options.taskStore.forget(task.taskId), options.taskPollIntervalMs * 2 + 1_000).unref();
    })
    .catch((err) => options.logger.debug("task ended without a stored result", { task: task.taskId, reason: String(err) }))
    .finally(() => options.taskStore.release(task.taskId));

  // The SDK polls the store for a plain call every pollInterval: giving quick work a moment to
  // finish returns it at once instead of one poll interval later.
  if (!asTask) await Promise.race([work, new Promise((r) => setTimeout(r, QUICK_RESULT_GRACE_MS).unref())]);
  const current = (await extra.taskStore.getTask(task.taskId)) ?? task;
  // For a plain call this task goes only to the SDK's own loop, which reads the local store at the
  // pollInterval it is given: a short one answers soon after the work ends, not up to 12 s later.
  return { task: asTask ? current : { ...current, pollInterval: Math.min(options.taskPollIntervalMs, PLAIN_CALL_POLL_MS) } };
}

async function elicit(server: McpServer, extra: Extra, message: string, schema: ElicitSchema): Promise<ElicitOutcome> {
  if (!server.server.getClientCapabilities()?.elicitation) return { action: "unsupported" };
  const result = await extra.sendRequest({ method: "elicitation/create", params: { message, requestedSchema: schema } }, ElicitResultSchema);
  if (result.action === "accept") return { action: "accept", content: (result.content ?? {}) as Record<string, unknown> };
  return { action: result.action };
}

function progressSender(extra: Extra, secrets: SecretRegistry): ToolContext["progress"] {
  const token = extra._meta?.progressToken;
  let counter = 0;
  return async ({ message, progress, total }) => {
    if (token === undefined || extra.signal.aborted) return;
    counter = Math.max(counter + 1, progress ?? 0);
    try {
      await extra.sendNotification({
        method: "notifications/progress",
        params: { progressToken: token, progress: counter, ...(total !== undefined ? { total } : {}), message: secrets.scrubText(message) },
      });
    } catch {
      // the client went away; the tool notices through its signal
    }
  };
}
