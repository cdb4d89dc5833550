import { spendLedger } from "./app/ledger.js";
import { randomBytes } from "node:crypto";
import type { GaugeName } from "./core/base/telemetry.js";
import { configuredEgress } from "./app/secrets.js";
import { LinkedKeys } from "./app/linked.js";
import { instanceMaker } from "./app/service-instances.js";
import { appHooks } from "./app/hooks.js";
import { AcceptedKeys } from "./core/tenancy/accepted.js";
import { type RedisModule, sharedState } from "./app/state.js";
import { sharedResources } from "./app/resources.js";
import { taskRunner } from "./app/tasks.js";
import type { Tenant } from "./app/build-tenant.js";
import { Tenants } from "./app/tenants.js";
import { offeredTools, serviceAdvice, serviceOfToolset, serviceTools } from "./app/tools.js";
import { credentialHeader, enabledToolsets, type Config } from "./config.js";
import { createLogger } from "./core/base/logger.js";
import { Sealer } from "./core/base/seal.js";
import type { ConnectPageOptions } from "./core/http/connect-page.js";
import type { AppHooks } from "./app/hooks.js";
import type { ServerDefinition, TenantRuntime } from "./core/mcp/runtime.js";
import { WatchBudget } from "./core/mcp/watch-budget.js";
import type { ServiceModule } from "./core/service/service.js";
import type { TaskRunner } from "./core/tasks/runner.js";
import { Confirmations } from "./core/tools/confirm.js";
import { ByteBudget } from "./core/upstream/budget.js";
import { PoolCache } from "./core/upstream/upstream.js";
import { declaredServer } from "./instructions.js";

export type { RedisModule } from "./app/state.js";

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
  /** ENV.credentials=linked: what the connect page (core/http/connect-page.ts) needs. */
  connect?: ConnectPageOptions;
  /** Webhook deliveries (POST /hooks/…), when a service's webhooks are on (app/hooks.ts). */
  hooks?: AppHooks["page"];
  /** Readiness: shared state reachable (always, in process). */
  ready(): Promise<{ ok: boolean; state: "memory" | "redis" }>;
  stats(): { tenants: number; pollers: number; redisRoundTrips?: number };
  /** What the telemetry's gauges read (core/telemetry/otel.ts). */
  gauges: Record<GaugeName, () => number>;
  close(): Promise<void>;
}

/**
 * Puts the server together from the config (src/app/ holds each piece): secrets and logging, the
 * shared state (memory or Redis), the tools of the enabled toolsets, the tenants and the task runner.
 * `services`: the modules the config was parsed against, loaded (services/registry.ts loadServices; a
 * test may add one).
 */
export function createApp(
  config: Config,
  redisModule: RedisModule | undefined,
  services: readonly ServiceModule<any>[],
): App {
  const egress = configuredEgress(config, services);
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

  const state = sharedState(config, redisModule, replicaId, logger);
  const pools = new PoolCache();
  const bodyBudget = new ByteBudget(config.upstreamBodyBudgetBytes);
  const ledger = spendLedger(config, state, sealer, logger, perTenant, enabled);
  const confirmations = new Confirmations(
    config.requestStateKey ?? (config.stateKey ? sealer.requestStateKey : randomBytes(32)),
    state.nonces,
  );
  const headers = enabled.map((s) => ({
    service: s.name,
    header: credentialHeader(s.name),
    bearerKeyPrefix: s.bearerKeyPrefix,
  }));
  const watchBudget = new WatchBudget({
    perRequest: config.maxListenUris,
    // With one account every caller is the one tenant: only the replica's cap applies.
    perTenant: perTenant ? config.maxSubscriptionsPerTenant : Number.POSITIVE_INFINITY,
    perReplica: config.maxPollers,
  });

  // Built once and shared by every tenant; each runs them with its own services' deps (ctx.deps).
  const allTools = serviceTools(enabled, config, toolsets);
  // Per-user keys no upstream has accepted yet share one bucket of the per-tenant caps (made-up keys).
  const acceptedKeys = caller
    ? new AcceptedKeys(state.redis && new state.redis.module.RedisAcceptedStore(state.redis.state))
    : undefined;
  const keyId = (service: string, key: string) => sealer.tenantId({ [service]: key });
  const hooks = appHooks(config, enabled, sealer, state, logger);
  const instance = instanceMaker(
    config,
    caller,
    { pools, bodyBudget },
    state.pollers,
    config.stateKey ? sealer : undefined,
    acceptedKeys && ((service, key) => acceptedKeys.accept(keyId(service, key))),
    hooks.endpoint,
  );
  // ENV.credentials=linked: keys each signed-in user linked through the connect page (app/linked.ts).
  const linked =
    config.credentials === "linked"
      ? new LinkedKeys({
          publicUrl: config.publicUrl!,
          enabled,
          sealer,
          nonces: state.nonces,
          redis: state.redis,
          allTools,
          instance: (module, key, tenantId) => instance(module, key, tenantId, egress.derive([key]), logger),
          logger,
        })
      : undefined;
  const tools = offeredTools([...allTools, ...(linked?.accountTools() ?? [])], toolsets, config.readOnly);

  const declared = declaredServer(config, services);
  // Made once the first tenant exists: the services say how often their tasks are worth polling.
  let tasks: TaskRunner;
  const { resources, prompts, watchers } = sharedResources(enabled, config);
  const definition: ServerDefinition = {
    info: declared.info,
    instructions: declared.instructions,
    tools,
    resources,
    prompts,
    logLevel: config.logLevel,
    confirmations,
    get tasks() {
      return tasks;
    },
    ledger,
    watchBudget,
    blockingWaitMs: config.maxBlockingWaitSeconds * 1000,
  };
  const tenants: Tenants = new Tenants(
    {
      config,
      definition,
      caller,
      perTenant,
      sealer,
      egress,
      logger,
      enabled,
      instance,
      watchers,
      relayFor: state.relayFor,
      linked,
      serviceOf: serviceOfToolset(enabled),
      advice: serviceAdvice(services, config, caller),
      accepted: acceptedKeys && { keys: acceptedKeys, id: keyId },
      pin: (tenantId) => tenants.pin(tenantId),
    },
    { max: config.maxTenants, sealer, byUser: linked !== undefined },
  );
  const runtimeFor = (credentials: Readonly<Record<string, string>> | undefined): Tenant =>
    tenants.runtimeFor(credentials);
  const runtime = runtimeFor(undefined);
  const runner = taskRunner(state.store, {
    config,
    logger,
    sealer,
    leaseMs: state.leaseMs,
    perTenant,
    pollIntervalMs: runtime.taskPollIntervalMs,
    tools,
    enabled,
    runtimeFor,
  });
  tasks = runner;

  return {
    runtime,
    runtimeFor,
    credentials: config.credentials,
    perTenant,
    credentialHeaders: headers,
    connect: linked?.connectOptions(logger),
    hooks: hooks.page,
    replicaId,
    toolsets,
    ready: state.ready,
    stats: () => {
      const roundTrips = state.roundTrips();
      return {
        tenants: tenants.size,
        pollers: watchBudget.pollers,
        ...(roundTrips !== undefined ? { redisRoundTrips: roundTrips } : {}),
      };
    },
    gauges: {
      tasks: () => runner.working,
      pollers: () => watchBudget.pollers,
      tenants: () => tenants.size,
      subscriptions: () => watchBudget.subscribers,
    },
    close: async () => {
      await runner.stopAll();
      await state.store.close();
      await tenants.close();
      await pools.close();
      await state.close();
    },
  };
}
