import type { ServerContext } from "@modelcontextprotocol/server";
import type { Confirmations } from "../tools/confirm.js";
import type { Egress } from "../base/egress.js";
import type { SpendLedger } from "../tools/ledger.js";
import type { Logger, LogLevel, LogEcho } from "../base/logger.js";
import type { PromptDef } from "../service/prompts.js";
import type { ServiceResource, ServiceWatcher } from "../service/resources.js";
import type { TaskTool, TaskRunner } from "../tasks/runner.js";
import type { ToolDef, ToolHost } from "../tools/tool.js";
import type { ChangeHub } from "./changes.js";
import type { WatchBudget } from "./watch-budget.js";
import type { Linking } from "./link-gate.js";

/**
 * Everything a server instance needs, built once per process and shared by every instance: the
 * per-request ones of 2026-07-28 HTTP, the sessions of 2025 HTTP, the one of stdio.
 */
export interface TenantRuntime {
  info: { name: string; version: string; title: string };
  instructions: string;
  /** Already filtered by toolset and read-only mode. */
  tools: readonly ToolDef<any, any>[];
  /** Shared by every tenant; each reads with its own deps (`serviceDeps`). */
  resources: readonly ServiceResource[];
  prompts: readonly PromptDef<any>[];
  /** The watchers of the services this tenant has a key for (shared definitions). */
  watchers: readonly ServiceWatcher[];
  /** This tenant's deps of a service (its `ServiceInstance.deps`): what its resources and watchers act with. */
  serviceDeps(service: string): unknown;
  /** Per-user modes: true when this tenant has no key for the service (its reads answer the missing-key error). */
  keyless?(service: string): boolean;
  /** ENV.credentials=linked: brings the tenant's keys up to date before a resource is read. */
  refreshKeys?(): Promise<unknown>;
  egress: Egress;
  logger: Logger & { withEcho(echo: LogEcho): Logger };
  logLevel: LogLevel;
  toolHost: ToolHost;
  tasks: TaskRunner;
  confirmations: Confirmations;
  changes: ChangeHub;
  /**
   * Whose share of the per-tenant caps (sessions, subscriptions) this tenant draws on: its owner, or
   * with per-user keys no upstream accepted yet, one share for all such tenants. Absent: the owner.
   */
  quotaKey?(): string;
  /** The same, asking the shared store about keys this replica has not seen accepted (for a task's cap). */
  quotaKeyNow?(): Promise<string>;
  /** The tenant a request acts for: tasks are visible to their owner only. */
  owner(ctx: ServerContext | undefined): string;
  /** Per-user mode: this tenant's upstream keys, by service (sealed into its tasks for takeover). */
  credentials?: Readonly<Record<string, string>>;
  /** Keeps this runtime alive (a task follows work with it); returns the release. */
  pin(): () => void;
  /** ENV.credentials=linked: this tenant's linked upstream keys (a tool without its key asks for the link). */
  linking?: Linking;
  /** Shared by runtimes whose tools are the same (every tenant of an app): tools/list is shaped once for all. */
  listKey?: object;
  /** The replica's caps on resource subscriptions (shared by every tenant). */
  watchBudget?: WatchBudget;
  /** How long a wait may block a request that is not a task and set no timeoutSeconds (ENV.maxBlockingWaitSeconds). */
  blockingWaitMs: number;
  /** The spend ledger: every spending call goes through it (absent: ENV.repeatWindowSeconds=0). */
  ledger?: SpendLedger;
}

/** A tool of this runtime, ready to run as a task (started here, or adopted from another replica). */
export function taskTool(rt: TenantRuntime, def: ToolDef<any, any>): TaskTool {
  return {
    def,
    toolHost: rt.toolHost,
    logger: rt.logger,
    pin: () => rt.pin(),
    resourcesChanged: () => rt.changes.resourcesChanged(),
  };
}
