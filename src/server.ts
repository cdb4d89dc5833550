import { randomBytes } from "node:crypto";
import { credentialHeader, enabledToolsets, type Config } from "./config.js";
import { Confirmations, MemoryNonceStore, type NonceStore } from "./core/tools/confirm.js";
import { Egress } from "./core/base/egress.js";
import { MemoryRepeatStore, SpendOnce, type RepeatStore } from "./core/tools/idempotency.js";
import type { ServiceAdvice } from "./core/tools/errors.js";
import { createLogger } from "./core/base/logger.js";
import { ChangeHub, taskTool, type ChangeRelay, type TenantRuntime } from "./core/mcp/runtime.js";
import { localPollers, type PollerFactory } from "./core/upstream/poller.js";
import type { ServiceInstance, ServiceModule } from "./core/service/service.js";
import { clusterPollers } from "./core/state/cluster-poller.js";
import type { RedisState } from "./core/state/redis.js";
import { Sealer } from "./core/base/seal.js";
import { MemoryTaskStore, type TaskStore } from "./core/tasks/store.js";
import { DEFAULT_LEASE_MS, DEFAULT_MAX_TASKS_PER_TENANT, TaskRunner } from "./core/tasks/runner.js";
import { TenantScopes } from "./core/tenancy/tenant-scope.js";
import { TenantCache } from "./core/tenancy/tenants.js";
import { DEFAULT_WATCH_LIMITS, WatchBudget } from "./core/mcp/watch-budget.js";
import { PoolCache, UpstreamClient } from "./core/upstream/upstream.js";
import { declaredServer } from "./instructions.js";
import type { Logger } from "./core/base/logger.js";
import type { ConnectPageOptions } from "./core/http/connect-page.js";
import { LiveInstances } from "./core/vault/live-instances.js";
import { LinkedKeys } from "./linked.js";

/** What the server runs on, and what to close at the end. */
export interface App {
  /** Single-account mode: the one runtime. Per-user mode: the runtime of a caller who sent no key. */
  runtime: TenantRuntime;
  /** The runtime that acts with these upstream keys (per-user mode); `runtime` in single-account mode. */
  runtimeFor(credentials: Readonly<Record<string, string>> | undefined): TenantRuntime;
  credentials: Config["credentials"];
  /** A tenant per caller (per-user keys, or OAuth): the per-tenant caps apply. */
  perTenant: boolean;
  /** Per-user mode: the header that carries each service's key, and the prefix of a key that may come as a bearer. */
  credentialHeaders: ReadonlyArray<{ service: string; header: string; bearerKeyPrefix?: string }>;
  replicaId: string;
  toolsets: string[];
  /** MCP_CREDENTIALS=linked: what the connect page (core/http/connect-page.ts) needs. */
  connect?: ConnectPageOptions;
  /** Readiness: shared state reachable (always, in process). */
  ready(): Promise<{ ok: boolean; state: "memory" | "redis" }>;
  stats(): { tenants: number; pollers: number; redisRoundTrips?: number };
  close(): Promise<void>;
}

/** How often a client should poll a task when no service says otherwise. */
const DEFAULT_TASK_POLL_MS = 5000;

/** The Redis backend, which the CLI loads only when MCP_STATE_URL is set (it stays off the start path otherwise). */
export type RedisModule = typeof import("./core/state/redis.js");

/** `services`: the modules the config was parsed against, loaded (services/registry.ts loadServices; a test may add one). */
export function createApp(
  config: Config,
  redisModule: RedisModule | undefined,
  services: readonly ServiceModule<any>[],
): App {
  const egress = new Egress();
  for (const [name, settings] of config.services) {
    const module = services.find((s) => s.name === name)!;
    for (const v of module.env)
      if (v.secret && settings[v.name] !== undefined) egress.addConfigured(settings[v.name] as string);
  }
  for (const secret of [
    config.httpToken,
    config.requestStateKey,
    config.stateKey,
    config.authClientSecret,
    stateUrlPassword(config.stateUrl),
  ])
    egress.addConfigured(secret);
  const logger = createLogger(config.logLevel, egress);
  const toolsets = enabledToolsets(config, config.services.keys(), services);
  const enabled = services.filter(
    (s) => config.services.has(s.name) && s.toolsets.some((t) => toolsets.includes(t.id)),
  );
  const replicaId = config.replicaId ?? randomBytes(4).toString("hex");
  const sealer = new Sealer(config.stateKey);
  // caller: keys come with each request; linked: each signed-in user linked theirs. Either way a key per tenant.
  const caller = config.credentials !== "operator";
  // A runtime per tenant: per key set, and with OAuth per signed-in user (their tasks are theirs alone).
  const perTenant = caller || config.auth === "oauth";

  if (config.stateUrl && !redisModule) throw new Error("MCP_STATE_URL is set but the Redis backend was not loaded");
  const redis =
    config.stateUrl && redisModule
      ? new redisModule.RedisState({ url: config.stateUrl, replicaId, logger, leaseMs: leaseMs() })
      : undefined;
  const store: TaskStore = redis ? new redisModule!.RedisTaskStore(redis) : new MemoryTaskStore();
  const nonces: NonceStore = redis ? new redisModule!.RedisNonceStore(redis) : new MemoryNonceStore();
  const pollers: PollerFactory = redis ? clusterPollers(redis) : localPollers;
  const pools = new PoolCache();
  const repeats: RepeatStore = redis ? new redisModule!.RedisRepeatStore(redis) : new MemoryRepeatStore();
  const windowMs = (config.repeatWindowSeconds ?? 600) * 1000;
  const fingerprint = (text: string) => sealer.fingerprint(text);
  const spendOnce = windowMs > 0 ? new SpendOnce(repeats, windowMs, logger, redis && sealer, fingerprint) : undefined;
  const relayFor = redis ? changeRelays(redis) : undefined;
  const confirmations = new Confirmations(
    config.requestStateKey ?? (config.stateKey ? sealer.requestStateKey : randomBytes(32)),
    nonces,
  );
  const headers = enabled.map((s) => ({
    service: s.name,
    header: credentialHeader(s.name),
    bearerKeyPrefix: s.bearerKeyPrefix,
  }));
  const watchBudget = new WatchBudget({
    perRequest: config.maxListenUris ?? DEFAULT_WATCH_LIMITS.perRequest,
    // With one account every caller is the one tenant: only the replica's cap applies.
    perTenant: perTenant
      ? (config.maxSubscriptionsPerTenant ?? DEFAULT_WATCH_LIMITS.perTenant)
      : Number.POSITIVE_INFINITY,
    perReplica: config.maxPollers ?? DEFAULT_WATCH_LIMITS.perReplica,
  });

  type Tenant = TenantRuntime & { taskPollIntervalMs: number; close(): Promise<void> };
  // Made once the first tenant exists: the services say how often their tasks are worth polling.
  let tasks: TaskRunner;
  const listKey = {};
  // Built once; each tenant runs them with its own services' dependencies (core/tenancy/tenant-scope.ts).
  const scopes = new TenantScopes();
  // Tools of toolsets that are off are not built (start-up time), except in linked mode, whose key
  // check may use a tool of any toolset (src/linked.ts).
  const on = (toolset: string) => toolsets.includes(toolset);
  const serviceTools = enabled.flatMap((module) =>
    module.tools(scopes.deps(module.name), config.credentials === "linked" ? undefined : on),
  );
  const makeInstance = (
    module: ServiceModule<any>,
    key: string | undefined,
    tenantId: string,
    tenantEgress: Egress,
    tenantLogger: Logger,
  ): ServiceInstance => {
    let settings = config.services.get(module.name)!;
    if (caller && key) settings = { ...settings, [module.apiKeyVar]: key };
    const missingKey = caller && !key ? missingKeyMessage(module, config) : undefined;
    const instance = module.create(settings, {
      logger: tenantLogger,
      upstream: (spec) =>
        new UpstreamClient({
          ...spec,
          service: module.name,
          keyVariable: module.apiKeyVar,
          timeoutMs: config.upstreamTimeoutMs,
          logger: tenantLogger,
          redact: (t) => tenantEgress.text(t),
          pools,
          missingKey,
        }),
      createPoller: (namespace, fetch, options) => pollers(`${tenantId}:${module.name}:${namespace}`, fetch, options),
    });
    // Without the caller's key nothing can be read: a subscription starts no poller (issue 18 item 6).
    return missingKey ? { ...instance, watch: undefined } : instance;
  };
  // MCP_CREDENTIALS=linked: keys each signed-in user linked through the connect page (src/linked.ts).
  const linked =
    config.credentials === "linked"
      ? new LinkedKeys({
          publicUrl: config.publicUrl!,
          enabled,
          sealer,
          nonces,
          redis: redis && { state: redis, module: redisModule! },
          scopes,
          allTools: serviceTools,
          instance: (module, key, tenantId) => makeInstance(module, key, tenantId, egress.derive([key]), logger),
          logger,
        })
      : undefined;
  const definitions = [...serviceTools, ...(linked?.accountTools() ?? [])].filter(
    (t) => (t.toolset === "account" || toolsets.includes(t.toolset)) && (!config.readOnly || t.kind === "read"),
  );
  // The same for every tenant: made once.
  const keyVariable = (s: ServiceModule<any>) =>
    config.credentials === "linked"
      ? `the ${s.title} key you linked (account_unlink_service, then call the tool again to link another)`
      : caller
        ? `your ${credentialHeader(s.name)} header`
        : s.apiKeyVar;
  const advice = new Map<string, ServiceAdvice>(
    services.map((s) => [s.name, { keyVariable: keyVariable(s), hints: s.hints }]),
  );
  const { info, instructions: serverInstructions } = declaredServer(config, services);
  const buildTenant = (tenantId: string, credentials: Readonly<Record<string, string>> | undefined): Tenant => {
    // With OAuth, tasks belong to the signed-in user whatever keys they act with.
    const owner = credentials?.[ISSUER]
      ? sealer.tenantId({ [ISSUER]: credentials[ISSUER], [SUBJECT]: credentials[SUBJECT] ?? "" })
      : tenantId;
    const tenantEgress = caller ? egress.derive(Object.values(upstreamKeys(credentials))) : egress;
    const tenantLogger = caller ? createLogger(config.logLevel, tenantEgress) : logger;
    const instances: Array<[ServiceModule<any>, ServiceInstance]> = enabled.map((module) => [
      module,
      makeInstance(module, credentials?.[module.name], tenantId, tenantEgress, tenantLogger),
    ]);
    const changes = new ChangeHub(relayFor?.(tenantId));
    const scope = new Map<string, object>(instances.map(([module, i]) => [module.name, i.deps]));
    // Linked keys can change while the tenant runs: its instances are replaced as they do.
    const live =
      linked &&
      new LiveInstances(
        new Map(instances.map(([m, i]) => [m.name, i])),
        scope,
        upstreamKeys(credentials),
        (service, key) =>
          makeInstance(enabled.find((m) => m.name === service)!, key, tenantId, tenantEgress, tenantLogger),
      );
    const mine = live && linked.forTenant(owner, credentials?.[SUBJECT] ?? "you", live, tenantEgress);
    if (mine) scope.set("account", mine.account);
    if (!perTenant) scopes.onlyTenant(scope);
    return {
      info,
      instructions: serverInstructions,
      tools: definitions,
      resources: live ? live.resources() : instances.flatMap(([, i]) => i.resources ?? []),
      prompts: instances.flatMap(([, i]) => i.prompts ?? []),
      watchers: live ? live.watchers() : instances.flatMap(([, i]) => (i.watch ? [i.watch] : [])),
      egress: tenantEgress,
      logger: tenantLogger,
      logLevel: config.logLevel,
      toolHost: { egress: tenantEgress, advice, ...(perTenant ? { enter: scopes.enter(scope) } : {}) },
      get tasks() {
        return tasks;
      },
      taskPollIntervalMs: Math.max(...instances.map(([, i]) => i.taskPollIntervalMs ?? 0), 0) || DEFAULT_TASK_POLL_MS,
      confirmations,
      changes,
      owner: () => owner,
      // Sealed into a task for takeover: the user, and (linked) the keys in use now.
      get credentials() {
        return mine ? { ...credentials, ...mine.keys() } : credentials;
      },
      linking: mine?.linking,
      pin: () => (perTenant ? tenants.pin(tenantId) : () => undefined),
      listKey,
      watchBudget,
      blockingWaitMs: (config.maxBlockingWaitSeconds ?? 45) * 1000,
      spendOnce,
      close: async () => {
        changes.close();
        await (live ? live.close() : Promise.allSettled(instances.map(([, i]) => i.close())));
      },
    };
  };

  const tenants = new TenantCache<Tenant>({ idleMs: 15 * 60_000, max: config.maxTenants ?? 10_000 });
  const single = perTenant ? undefined : buildTenant("local", undefined);
  const runtimeFor = (credentials: Readonly<Record<string, string>> | undefined): Tenant => {
    if (single) return single;
    const keys = credentials ?? {};
    // Linked: the user is the tenant; their keys come from the vault, not the request.
    const tenantId = sealer.tenantId(linked ? identityOf(keys) : keys);
    return tenants.get(tenantId, () => buildTenant(tenantId, keys));
  };
  const runtime = runtimeFor(undefined);
  tasks = new TaskRunner(store, {
    pollIntervalMs: runtime.taskPollIntervalMs,
    logger,
    sealer,
    leaseMs: leaseMs(),
    requestDeadlineMs: config.upstreamTimeoutMs,
    maxWorkingPerOwner: perTenant ? (config.maxTasksPerTenant ?? DEFAULT_MAX_TASKS_PER_TENANT) : undefined,
    lostTask: (tool) => {
      const toolset = definitions.find((d) => d.name === tool)?.toolset;
      return enabled.find((s) => s.toolsets.some((t) => t.id === toolset))?.lostTask;
    },
    adopt: (owner, credentials, tool) => {
      const rt = runtimeFor(credentials);
      const def = rt.tools.find((t) => t.name === tool);
      return rt.owner(undefined) === owner && def ? taskTool(rt, def) : undefined;
    },
  });

  return {
    runtime,
    runtimeFor,
    credentials: config.credentials,
    perTenant,
    credentialHeaders: headers,
    connect: linked?.connectOptions(logger),
    replicaId,
    toolsets,
    ready: async () => ({ ok: redis ? await redis.ping() : true, state: redis ? "redis" : "memory" }),
    stats: () => ({
      tenants: single ? 1 : tenants.size,
      pollers: watchBudget.pollers,
      ...(redis ? { redisRoundTrips: redis.roundTrips } : {}),
    }),
    close: async () => {
      await tasks.stopAll();
      await store.close();
      await single?.close();
      await tenants.close();
      await pools.close();
      await redis?.close();
    },
  };

  function leaseMs(): number {
    return config.leaseMs ?? DEFAULT_LEASE_MS;
  }
}

/** The entries of a runtime's credentials that name its signed-in user (OAuth), not an upstream key. */
export const ISSUER = "@issuer";
export const SUBJECT = "@subject";

/** A tenant's upstream keys, by service, without the entries that name its user. */
export function identityOf(credentials: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(credentials).filter(([name]) => name.startsWith("@")));
}

export function upstreamKeys(credentials: Readonly<Record<string, string>> | undefined): Record<string, string> {
  return Object.fromEntries(Object.entries(credentials ?? {}).filter(([name]) => !name.startsWith("@")));
}

/** Tenants' resource-list changes, to and from their other replicas. */
function changeRelays(redis: RedisState): (tenantId: string) => ChangeRelay {
  const listeners = new Map<string, Set<() => void>>();
  // One pattern subscription for the replica, made with its first tenant, routed by tenant id.
  let subscribed = false;
  const subscribe = () => {
    if (subscribed) return;
    subscribed = true;
    redis.psubscribe(`${CHANGES}*`, (channel, from) => {
      if (from === redis.replicaId) return;
      for (const onRemote of listeners.get(channel.slice(CHANGES.length)) ?? []) onRemote();
    });
  };
  return (tenantId) => ({
    publish: () => void redis.publish(CHANGES + tenantId, redis.replicaId).catch(() => undefined),
    listen: (onRemote) => {
      subscribe();
      const set = listeners.get(tenantId) ?? new Set();
      listeners.set(tenantId, set.add(onRemote));
      return () => {
        set.delete(onRemote);
        if (set.size === 0 && listeners.get(tenantId) === set) listeners.delete(tenantId);
      };
    },
  });
}
const CHANGES = "changes:";

function stateUrlPassword(url: string | undefined): string | undefined {
  if (!url) return undefined;
  try {
    return decodeURIComponent(new URL(url).password) || undefined;
  } catch {
    return undefined;
  }
}

function missingKeyMessage(module: ServiceModule<any>, config: Config): string {
  if (config.credentials === "linked") {
    const example = module.keyCheck?.tool ?? `a ${module.name} tool`;
    return `No ${module.title} key is linked to your account yet: call ${example} and open the link it gives you (the key is entered on that page, never in the chat).`;
  }
  const prefix = module.bearerKeyPrefix;
  const alt = prefix && !config.httpToken ? ` (or as Authorization: Bearer ${prefix}…)` : "";
  return `No ${module.title} key came with this request: this server acts with each caller's own key. Send yours in the ${credentialHeader(module.name)} header${alt}.`;
}
