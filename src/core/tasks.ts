import { InMemoryTaskStore } from "@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js";
import type { Task } from "@modelcontextprotocol/sdk/types.js";

/**
 * The SDK's in-memory task store, plus one thing it lacks: a way for the work behind a task to
 * notice `tasks/cancel`. The SDK cancels by setting the status; we abort the task's controller
 * when that happens, so polling upstream stops at once.
 */
export class CancellableTaskStore extends InMemoryTaskStore {
  private readonly controllers = new Map<string, AbortController>();

  /** A controller aborted when the task is cancelled or (for real tasks) expires. */
  track(task: Task, abortOnExpiry: boolean): AbortController {
    const controller = new AbortController();
    this.controllers.set(task.taskId, controller);
    if (task.ttl && abortOnExpiry) {
      const expiry = setTimeout(() => controller.abort(new Error("task expired")), task.ttl);
      expiry.unref();
      controller.signal.addEventListener("abort", () => clearTimeout(expiry), { once: true });
    }
    return controller;
  }

  release(taskId: string): void {
    this.controllers.delete(taskId);
  }

  override async updateTaskStatus(taskId: string, status: Task["status"], statusMessage?: string, sessionId?: string): Promise<void> {
    await super.updateTaskStatus(taskId, status, statusMessage, sessionId);
    if (status === "cancelled") {
      this.controllers.get(taskId)?.abort(new Error("task cancelled by the client"));
      this.release(taskId);
    }
  }

  /** Drops a finished task now rather than at its TTL (a plain call's task, once answered). */
  forget(taskId: string): void {
    const self = this as unknown as { tasks: Map<string, unknown>; cleanupTimers: Map<string, NodeJS.Timeout> };
    clearTimeout(self.cleanupTimers.get(taskId));
    self.cleanupTimers.delete(taskId);
    self.tasks.delete(taskId);
  }

  /** Aborts every running task (shutdown). */
  abortAll(): void {
    for (const controller of this.controllers.values()) controller.abort(new Error("server shutting down"));
    this.controllers.clear();
  }
}
