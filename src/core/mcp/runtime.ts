import type { ServerContext } from "@modelcontextprotocol/server";
import type { Confirmations } from "../confirm.js";
import type { Egress } from "../egress.js";
import type { Logger, LogLevel, LogEcho } from "../logger.js";
import type { PromptDef } from "../prompts.js";
import type { ResourceDef, ResourceWatcher } from "../resources.js";
import type { TaskRunner } from "../tasks/runner.js";
import type { ToolDef, ToolRuntime } from "../tool.js";

/** Where resource-list changes go: every legacy session, the modern listen streams. */
export class ChangeHub {
  private readonly sinks = new Set<() => void>();

  add(onListChanged: () => void): () => void {
    this.sinks.add(onListChanged);
    return () => this.sinks.delete(onListChanged);
  }

  resourcesChanged(): void {
    for (const sink of this.sinks) {
      try {
        sink();
      } catch {
        // a session that went away must not stop the others from hearing it
      }
    }
  }
}

/**
 * Everything a server instance needs, built once per process and shared by every instance: the
 * per-request ones of 2026-07-28 HTTP, the sessions of 2025 HTTP, the one of stdio.
 */
export interface McpRuntime {
  info: { name: string; version: string; title: string };
  instructions: string;
  /** Already filtered by toolset and read-only mode. */
  tools: readonly ToolDef<any, any>[];
  resources: readonly ResourceDef[];
  prompts: readonly PromptDef<any>[];
  watchers: readonly ResourceWatcher[];
  egress: Egress;
  logger: Logger & { withEcho(echo: LogEcho): Logger };
  logLevel: LogLevel;
  toolRuntime: ToolRuntime;
  tasks: TaskRunner;
  confirmations: Confirmations;
  changes: ChangeHub;
  /** The tenant a request acts for: tasks are visible to their owner only. */
  owner(ctx: ServerContext | undefined): string;
}

/** Starts following a resource for one subscriber; the first watcher that knows the URI wins. */
export function watchResource(rt: McpRuntime, uri: string, onChange: () => void): () => void {
  for (const watch of rt.watchers) {
    const stop = watch(uri, onChange);
    if (stop) return stop;
  }
  // MCP allows subscribing to anything; a resource nobody watches simply never updates.
  return () => undefined;
}
