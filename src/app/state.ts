import type { Config } from "../config.js";
import type { Logger } from "../core/base/logger.js";
import type { ChangeRelay } from "../core/mcp/changes.js";
import { clusterPollers } from "../core/state/cluster-poller.js";
import type { RedisState } from "../core/state/redis.js";
import { MemoryTaskStore, type TaskStore } from "../core/tasks/store.js";
import { MemoryNonceStore, type NonceStore } from "../core/tools/confirm.js";
import { MemoryLedgerStore, type LedgerStore } from "../core/tools/ledger-store.js";
import { localPollers, type PollerFactory } from "../core/upstream/poller.js";
import { ENV } from "../core/base/settings.js";

/** The Redis backend, which the CLI loads only when ENV.stateUrl is set (it stays off the start path otherwise). */
export type RedisModule = typeof import("../core/state/redis.js");

/**
 * What the process keeps beyond one request, in process or (ENV.stateUrl) on Redis behind the
 * same interfaces: tasks, confirmation nonces, spend ledger records, pollers and list-change relays.
 */
export interface SharedState {
  redis?: { state: RedisState; module: RedisModule };
  store: TaskStore;
  nonces: NonceStore;
  /** The spend ledger's records (stdio without Redis: see app/ledger.ts for the state file). */
  ledger: LedgerStore;
  pollers: PollerFactory;
  /** Redis: carries a tenant's list changes to its other replicas. */
  relayFor?: (tenantId: string) => ChangeRelay;
  leaseMs: number;
  ready(): Promise<{ ok: boolean; state: "memory" | "redis" }>;
  roundTrips(): number | undefined;
  /** Closes the Redis connection (the app closes the task store first). */
  close(): Promise<void>;
}

export function sharedState(
  config: Config,
  redisModule: RedisModule | undefined,
  replicaId: string,
  logger: Logger,
): SharedState {
  const leaseMs = config.leaseMs;
  if (config.stateUrl && !redisModule) throw new Error(`${ENV.stateUrl} is set but the Redis backend was not loaded`);
  const redis =
    config.stateUrl && redisModule
      ? new redisModule.RedisState({ url: config.stateUrl, replicaId, logger, leaseMs })
      : undefined;
  const store: TaskStore = redis ? new redisModule!.RedisTaskStore(redis) : new MemoryTaskStore();
  return {
    redis: redis && { state: redis, module: redisModule! },
    store,
    nonces: redis ? new redisModule!.RedisNonceStore(redis) : new MemoryNonceStore(),
    ledger: redis ? new redisModule!.RedisLedgerStore(redis) : new MemoryLedgerStore(),
    pollers: redis ? clusterPollers(redis) : localPollers,
    relayFor: redis ? changeRelays(redis) : undefined,
    leaseMs,
    ready: async () => ({ ok: redis ? await redis.ping() : true, state: redis ? "redis" : "memory" }),
    roundTrips: () => redis?.roundTrips,
    close: async () => {
      await redis?.close();
    },
  };
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
