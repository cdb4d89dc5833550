import type { IncomingMessage, ServerResponse } from "node:http";
import type { Config } from "../config.js";
import type { Egress } from "../core/base/egress.js";
import type { Logger } from "../core/base/logger.js";
import type { Sealer } from "../core/base/seal.js";
import { telemetry } from "../core/base/telemetry.js";
import {
  HOOK_HEADER,
  hookAddress,
  hookChannel,
  hookPage,
  memoryHookBus,
  memoryReplayGuard,
  type HookBus,
  type ReplayGuard,
} from "../core/http/hooks.js";
import type { HookOutcome, PushEndpoint, ServiceModule } from "../core/service/service.js";
import type { RedisState } from "../core/state/redis.js";
import type { SharedState } from "./state.js";

/** Webhooks (ServiceDeclaration.webhooks): the delivery route, and each tenant's address. */
export interface AppHooks {
  /** POST /hooks/<service>/<id>, when a service takes deliveries. */
  page?: (req: IncomingMessage, res: ServerResponse, url: URL) => Promise<boolean>;
  /** A tenant's address for a service whose webhooks are on; its secret joins the tenant's egress. */
  endpoint(module: ServiceModule<any>, tenantId: string, egress: Egress): PushEndpoint | undefined;
}

export function appHooks(
  config: Config,
  enabled: readonly ServiceModule<any>[],
  sealer: Sealer,
  state: SharedState,
  logger: Logger,
): AppHooks {
  const accepting = new Map<string, (body: unknown, now: number) => HookOutcome>();
  for (const m of enabled) {
    const settings = config.services.get(m.name);
    if (m.webhooks && m.acceptsDelivery && settings && m.webhooks.enabled(settings))
      accepting.set(m.name, m.acceptsDelivery);
  }
  if (accepting.size === 0 || !config.publicUrl) return { endpoint: () => undefined };
  const redis = state.redis?.state;
  const bus = redis ? redisHookBus(redis) : memoryHookBus();
  const replays = redis ? redisReplayGuard(redis) : memoryReplayGuard();
  const publicUrl = config.publicUrl;
  return {
    page: hookPage({ key: sealer.hookKey, services: accepting, bus, replays, logger }),
    endpoint: (module, tenantId, egress) => {
      if (!accepting.has(module.name)) return undefined;
      const { id, secret } = hookAddress(sealer.hookKey, module.name, tenantId);
      egress.addConfigured(secret);
      return {
        url: new URL(`hooks/${module.name}/${id}`, publicUrl).href,
        headers: { [HOOK_HEADER]: secret },
        listen: (handler) =>
          bus.listen(hookChannel(module.name, id), (body) => {
            try {
              handler(JSON.parse(body));
            } catch (err) {
              logger.warn("webhook handler failed", { error: err instanceof Error ? err.message : String(err) });
            }
          }),
        count: (outcome) => telemetry.add("webhooks", 1, { service: module.name, outcome }),
        tell: (note) =>
          void bus.publish(noteChannel(module.name, id), note).catch((err: unknown) => {
            logger.warn("webhook note not relayed to the replicas", {
              error: err instanceof Error ? err.message : String(err),
            });
          }),
        hear: (handler) => bus.listen(noteChannel(module.name, id), handler),
      };
    },
  };
}

/** Notes between a tenant's instances (PushEndpoint.tell): beside its deliveries' channel, never on it. */
function noteChannel(service: string, id: string): string {
  return `${hookChannel(service, id)}:note`;
}

/** Deliveries to every replica: one pattern subscription per replica, routed by channel. */
function redisHookBus(redis: RedisState): HookBus {
  const local = memoryHookBus();
  let subscribed = false;
  return {
    publish: (channel, body) => redis.publish(channel, body),
    listen: (channel, handler) => {
      if (!subscribed) {
        subscribed = true;
        redis.psubscribe("hook:*", (ch, body) => void local.publish(ch, body));
      }
      return local.listen(channel, handler);
    },
  };
}

/** A delivery's digest is kept (SET NX with its window) so a replay is caught on any replica. */
function redisReplayGuard(redis: RedisState): ReplayGuard {
  return {
    first: async (digest, ttlMs) => {
      redis.roundTrips++;
      return (await redis.cmd.set(`sb:hook:seen:${digest}`, "1", "PX", ttlMs, "NX")) === "OK";
    },
  };
}
