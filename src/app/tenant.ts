import type { Config } from "../config.js";
import type { Egress } from "../core/base/egress.js";
import { createLogger } from "../core/base/logger.js";
import type { Sealer } from "../core/base/seal.js";
import { ChangeHub, type ChangeRelay } from "../core/mcp/changes.js";
import type { TenantRuntime } from "../core/mcp/runtime.js";
import type { WatchBudget } from "../core/mcp/watch-budget.js";
import type { ServiceInstance, ServiceModule } from "../core/service/service.js";
import type { TaskRunner } from "../core/tasks/runner.js";
import type { Confirmations } from "../core/tools/confirm.js";
import type { ServiceAdvice } from "../core/tools/errors.js";
import type { SpendOnce } from "../core/tools/idempotency.js";
import type { ToolDef } from "../core/tools/tool.js";
import { LiveInstances } from "../core/vault/live-instances.js";
import { ISSUER, SUBJECT, upstreamKeys } from "./credentials.js";
import type { LinkedKeys } from "./linked.js";
import type { InstanceMaker } from "./service-instances.js";

/** How often a client should poll a task when no service says otherwise. */
const DEFAULT_TASK_POLL_MS = 5000;

/** A tenant's runtime, with what the app needs of it besides: its task poll interval and its close. */
export type Tenant = TenantRuntime & { taskPollIntervalMs: number; close(): Promise<void> };

/** What every tenant shares, made once by createApp. */
export interface TenantShared {
  config: Config;
  /** Keys come per tenant (MCP_CREDENTIALS caller or linked). */
  caller: boolean;
  /** A tenant per caller (per-user keys, or OAuth). */
  perTenant: boolean;
  sealer: Sealer;
  egress: Egress;
  logger: TenantRuntime["logger"];
  enabled: readonly ServiceModule<any>[];
  instance: InstanceMaker;
  relayFor?: (tenantId: string) => ChangeRelay;
  linked?: LinkedKeys;
  /** The service of each toolset: a tool's hooks get that service's deps (tools.ts). */
  serviceOf: ReadonlyMap<string, string>;
  info: TenantRuntime["info"];
  instructions: string;
  tools: readonly ToolDef<any, any>[];
  advice: ReadonlyMap<string, ServiceAdvice>;
  /** Made once the first tenant exists: the services say how often their tasks are worth polling. */
  tasks(): TaskRunner;
  confirmations: Confirmations;
  listKey: object;
  watchBudget: WatchBudget;
  spendOnce?: SpendOnce;
  /** Keeps a tenant (per-user modes) alive; returns the release. */
  pin(tenantId: string): () => void;
}

/**
 * One tenant's runtime: its service instances (with its keys), a derived egress that knows them,
 * pollers namespaced by tenant, its change hub; in linked mode its live instances and link gate.
 */
export function buildTenant(
  shared: TenantShared,
  tenantId: string,
  credentials: Readonly<Record<string, string>> | undefined,
): Tenant {
  const { config, caller, perTenant, sealer, egress, logger, enabled, linked, serviceOf } = shared;
  // With OAuth, tasks belong to the signed-in user whatever keys they act with.
  const owner = credentials?.[ISSUER]
    ? sealer.tenantId({ [ISSUER]: credentials[ISSUER], [SUBJECT]: credentials[SUBJECT] ?? "" })
    : tenantId;
  const tenantEgress = caller ? egress.derive(Object.values(upstreamKeys(credentials))) : egress;
  const tenantLogger = caller ? createLogger(config.logLevel, tenantEgress) : logger;
  const instances: Array<[ServiceModule<any>, ServiceInstance]> = enabled.map((module) => [
    module,
    shared.instance(module, credentials?.[module.name], tenantId, tenantEgress, tenantLogger),
  ]);
  const changes = new ChangeHub(shared.relayFor?.(tenantId));
  const scope = new Map<string, object>(instances.map(([module, i]) => [module.name, i.deps]));
  // Linked keys can change while the tenant runs: its instances are replaced as they do.
  const live =
    linked &&
    new LiveInstances(
      new Map(instances.map(([m, i]) => [m.name, i])),
      scope,
      upstreamKeys(credentials),
      (service, key) =>
        shared.instance(enabled.find((m) => m.name === service)!, key, tenantId, tenantEgress, tenantLogger),
    );
  const mine = live && linked.forTenant(owner, credentials?.[SUBJECT] ?? "you", live, tenantEgress);
  if (mine) scope.set("account", mine.account);
  // Sealed into a task for takeover: the user, and (linked) the keys in use now.
  const currentCredentials = mine ? () => ({ ...credentials, ...mine.keys() }) : () => credentials;
  return Object.assign(new TenantObject(shared.tasks, currentCredentials), {
    info: shared.info,
    instructions: shared.instructions,
    tools: shared.tools,
    resources: live ? live.resources() : instances.flatMap(([, i]) => i.resources ?? []),
    prompts: instances.flatMap(([, i]) => i.prompts ?? []),
    watchers: live ? live.watchers() : instances.flatMap(([, i]) => (i.watch ? [i.watch] : [])),
    egress: tenantEgress,
    logger: tenantLogger,
    logLevel: config.logLevel,
    toolHost: {
      egress: tenantEgress,
      advice: shared.advice,
      deps: (def: ToolDef<any, any, any>) => scope.get(serviceOf.get(def.toolset) ?? def.toolset),
    },
    taskPollIntervalMs: Math.max(...instances.map(([, i]) => i.taskPollIntervalMs ?? 0), 0) || DEFAULT_TASK_POLL_MS,
    confirmations: shared.confirmations,
    changes,
    owner: () => owner,
    linking: mine?.linking,
    pin: () => (perTenant ? shared.pin(tenantId) : () => undefined),
    listKey: shared.listKey,
    watchBudget: shared.watchBudget,
    blockingWaitMs: (config.maxBlockingWaitSeconds ?? 45) * 1000,
    spendOnce: shared.spendOnce,
    close: async () => {
      changes.close();
      await (live ? live.close() : Promise.allSettled(instances.map(([, i]) => i.close())));
    },
  });
}

/**
 * What a tenant reads late, as getters on a shared prototype: the task runner (made after the
 * first tenant) and its credentials (linked keys change). An object literal with getters is kept
 * in dictionary mode by V8 (a 1.9 KB property store per tenant); plain fields added in one order
 * to a class instance share one hidden class.
 */
class TenantObject {
  constructor(
    private readonly taskRunner: () => TaskRunner,
    private readonly currentCredentials: () => Readonly<Record<string, string>> | undefined,
  ) {}
  get tasks(): TaskRunner {
    return this.taskRunner();
  }
  get credentials(): Readonly<Record<string, string>> | undefined {
    return this.currentCredentials();
  }
}
