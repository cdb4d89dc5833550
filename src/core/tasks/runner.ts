import { randomUUID } from "node:crypto";
import type { CallToolResult } from "@modelcontextprotocol/server";
import type { Logger } from "../logger.js";
import { runTool, type ToolContext, type ToolDef, type ToolRuntime } from "../tool.js";
import { TERMINAL, type TaskRecord, type TaskStore } from "./store.js";

export const DEFAULT_TASK_TTL_MS = 60 * 60_000;
export const MAX_TASK_TTL_MS = 24 * 60 * 60_000;

export interface StartTask {
  owner: string;
  def: ToolDef<any, any>;
  input: Record<string, unknown>;
  ttlMs?: number;
  /** Builds the tool's context for the background run: its signal, and progress that updates the task. */
  context(signal: AbortSignal, onProgress: (message: string) => Promise<void>): ToolContext;
}

/**
 * Runs the work behind tasks in the background and keeps their records up to date: every progress
 * line becomes the status message, the tool's result ends the task. The work is the upstream's; a
 * task only follows it, so cancelling one stops the following, not the upstream work.
 */
export class TaskRunner {
  private readonly running = new Map<string, AbortController>();

  constructor(
    readonly store: TaskStore,
    private readonly runtime: ToolRuntime,
    private readonly logger: Logger,
    readonly pollIntervalMs: number,
  ) {}

  async start(spec: StartTask): Promise<TaskRecord> {
    const now = new Date().toISOString();
    const ttlMs = Math.min(spec.ttlMs ?? DEFAULT_TASK_TTL_MS, MAX_TASK_TTL_MS);
    const record: TaskRecord = {
      taskId: randomUUID(),
      owner: spec.owner,
      tool: spec.def.name,
      status: "working",
      statusMessage: `${spec.def.title}: started`,
      createdAt: now,
      lastUpdatedAt: now,
      ttlMs,
      pollIntervalMs: this.pollIntervalMs,
    };
    // The task must exist before its handle is returned (a tasks/get right after must find it).
    await this.store.create(record);
    const controller = new AbortController();
    this.running.set(record.taskId, controller);
    const expiry = setTimeout(() => controller.abort(new Error("task expired")), ttlMs);
    expiry.unref();
    const { taskId } = record;
    const progress = async (message: string) => {
      await this.store.update(taskId, { statusMessage: this.runtime.egress.text(message) }).catch(() => undefined);
    };
    void runTool(spec.def, spec.input, spec.context(controller.signal, progress), this.runtime, true)
      .then(async (result) => {
        if (controller.signal.aborted) return;
        const line = result.content.find((c) => c.type === "text");
        const summary = line && "text" in line ? line.text.split("\n")[0] : undefined;
        await this.store.update(taskId, { status: "completed", result, statusMessage: summary });
      })
      .catch((err) => this.logger.error("task ended without a result", { taskId, error: String(err) }))
      .finally(() => {
        clearTimeout(expiry);
        this.running.delete(taskId);
      });
    return record;
  }

  /** A task that ended before any work began (a refused spend asked for as a 2025 task). */
  async settled(owner: string, def: ToolDef<any, any>, result: CallToolResult): Promise<TaskRecord> {
    const now = new Date().toISOString();
    const record: TaskRecord = { taskId: randomUUID(), owner, tool: def.name, status: "completed", result, createdAt: now, lastUpdatedAt: now, ttlMs: DEFAULT_TASK_TTL_MS, pollIntervalMs: this.pollIntervalMs };
    await this.store.create(record);
    return record;
  }

  /** Cancels a task of this owner; undefined when there is no such task. */
  async cancel(taskId: string, owner: string): Promise<TaskRecord | undefined> {
    const record = await this.store.get(taskId);
    if (!record || record.owner !== owner) return undefined;
    const updated = TERMINAL.has(record.status) ? record : await this.store.update(taskId, { status: "cancelled", statusMessage: "Cancelled by the client; the upstream work itself goes on." });
    this.running.get(taskId)?.abort(new Error("task cancelled by the client"));
    return updated;
  }

  /** The task of this owner, or undefined (an unknown id and another owner's id look the same). */
  async get(taskId: string, owner: string): Promise<TaskRecord | undefined> {
    const record = await this.store.get(taskId);
    return record && record.owner === owner ? record : undefined;
  }

  /** Resolves when the task ends (for 2025's blocking tasks/result). */
  async whenTerminal(taskId: string, signal: AbortSignal): Promise<TaskRecord | undefined> {
    return new Promise((resolve, reject) => {
      const stop = this.store.onChange((r) => {
        if (r.taskId === taskId && TERMINAL.has(r.status)) finish(() => resolve(r));
      });
      const onAbort = () => finish(() => reject(signal.reason ?? new Error("aborted")));
      const finish = (fn: () => void) => {
        stop();
        signal.removeEventListener("abort", onAbort);
        fn();
      };
      signal.addEventListener("abort", onAbort, { once: true });
      void this.store.get(taskId).then((r) => {
        if (!r || TERMINAL.has(r.status)) finish(() => resolve(r));
      });
    });
  }

  /** Shutdown: tasks this process follows end as failed, saying the upstream work goes on. */
  async stopAll(): Promise<void> {
    for (const [taskId, controller] of this.running) {
      controller.abort(new Error("server shutting down"));
      await this.store
        .update(taskId, { status: "failed", error: { code: -32603, message: "The server stopped before the work ended; the upstream work goes on: follow it again with build_wait." } })
        .catch(() => undefined);
    }
    this.running.clear();
  }
}
