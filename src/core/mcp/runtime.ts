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
 * What this process serves, the same for every tenant: made once (server.ts createApp) and shared
 * by every server instance (the per-request ones of 2026-07-28 HTTP, the sessions of 2025 HTTP,
 * the one of stdio). It also keys what is shaped once for all tenants (tools/list).
 */
export interface ServerDefinition {
  info: { name: string; version: string; title: string };
  instructions: string;
  /** Already filtered by toolset and read-only mode. */
  tools: readonly ToolDef<any, any>[];
  /** Each tenant reads them with its own deps (`TenantContext.serviceDeps`). */
  resources: readonly ServiceResource[];
  prompts: readonly PromptDef<any>[];
  /** ENV.logLevel: the level a 2025 client gets until it sets its own. */
  logLevel: LogLevel;
  confirmations: Confirmations;
  tasks: TaskRunner;
  /** The spend ledger: every spending call goes through it (absent: ENV.repeatWindowSeconds=0). */
  ledger?: SpendLedger;
  /** The replica's caps on resource subscriptions. */
  watchBudget?: WatchBudget;
  /** How long a wait may block a request that is not a task and set no timeoutSeconds (ENV.maxBlockingWaitSeconds). */
  blockingWaitMs: number;
}

/** One tenant (a key set; with OAuth, a user): what its keys make, made on first use (app/build-tenant.ts). */
export interface TenantContext {
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
  toolHost: ToolHost;
  changes: ChangeHub;
  /**
   * Whose share of the per-tenant caps (sessions, subscriptions) this tenant draws on: its owner, or
   * with per-user keys no upstream accepted yet, one share for all such tenants. Absent: the owner.
   */
  quotaKey?(): string;
  /** The same, asking the shared store about keys this replica has not seen accepted (for a task's cap). */
  quotaKeyNow?(): Promise<string>;
  /** Whom this tenant acts for: with OAuth the signed-in user, else the tenant. Tasks are its owner's alone. */
  owner(): string;
  /** Per-user mode: this tenant's upstream keys, by service (sealed into its tasks for takeover). */
  credentials?: Readonly<Record<string, string>>;
  /** Keeps this runtime alive (a task follows work with it); returns the release. */
  pin(): () => void;
  /** ENV.credentials=linked: this tenant's linked upstream keys (a tool without its key asks for the link). */
  linking?: Linking;
}

/** Everything a server instance needs: what the process serves, and the tenant it serves it to. */
export interface TenantRuntime extends TenantContext {
  readonly definition: ServerDefinition;
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
