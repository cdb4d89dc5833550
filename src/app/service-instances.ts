import { credentialHeader, type Config } from "../config.js";
import type { Egress } from "../core/base/egress.js";
import { Sealer } from "../core/base/seal.js";
import type { Logger } from "../core/base/logger.js";
import type { PushEndpoint, ServiceInstance, ServiceModule } from "../core/service/service.js";
import type { Poller, PollerFactory } from "../core/upstream/poller.js";
import { type UpstreamShared, UpstreamClient } from "../core/upstream/upstream.js";

/** Builds a service for one tenant: with its key (per-user modes) or the configured one. */
export type InstanceMaker = (
  module: ServiceModule<any>,
  key: string | undefined,
  tenantId: string,
  tenantEgress: Egress,
  tenantLogger: Logger,
) => ServiceInstance;

/**
 * `caller`: keys come per tenant (ENV.credentials caller or linked); a tenant without one gets the
 * "no key" answer from every call.
 */
export function instanceMaker(
  config: Config,
  caller: boolean,
  upstreams: UpstreamShared,
  pollers: PollerFactory,
  stateSealer?: Sealer,
  /** Per-user keys: told when an upstream accepted one (it gets its own quota from then on). */
  accepted?: (service: string, key: string) => void,
  /** A tenant's webhook address, for a service whose webhooks are on (app/hooks.ts). */
  push?: (module: ServiceModule<any>, tenantId: string, egress: Egress) => PushEndpoint | undefined,
): InstanceMaker {
  return (module, key, tenantId, tenantEgress, tenantLogger) => {
    let settings = config.services.get(module.name)!;
    if (caller && key) settings = { ...settings, [module.apiKeyVar]: key };
    const missingKey = caller && !key ? missingKeyMessage(module, config) : undefined;
    // Made on first use: most tenants never seal anything, and the key derivation is not free.
    let sealer = stateSealer;
    const serviceSealer = () => {
      const serviceKey = settings[module.apiKeyVar];
      sealer ??= new Sealer(typeof serviceKey === "string" ? `${module.name}\n${serviceKey}` : undefined);
      return sealer;
    };
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
          ...upstreams,
          missingKey,
          onAccepted: caller && key && accepted ? () => accepted(module.name, key) : undefined,
        }),
      createPoller: (namespace, fetch, options) =>
        firstFollow(() => pollers(`${tenantId}:${module.name}:${namespace}`, fetch, options)),
      seal: (value, purpose) => serviceSealer().seal(value, `${module.name}:${purpose}`),
      open: (sealed, purpose) => serviceSealer().open(sealed, `${module.name}:${purpose}`),
      // Without a key there is no account to subscribe.
      push: missingKey ? undefined : push?.(module, tenantId, tenantEgress),
    });
    // Without the caller's key nothing can be read: a subscription starts no poller (issue 18 item 6).
    return missingKey ? { ...instance, keyless: true } : instance;
  };
}

/** A poller made when first followed: most tenants never wait on, nor subscribe to, anything. */
function firstFollow<T>(make: () => Poller<T>): Poller<T> {
  let poller: Poller<T> | undefined;
  return {
    follow: (key, listener, span) => (poller ??= make()).follow(key, listener, span),
    poke: (key) => poller?.poke?.(key),
  };
}

function missingKeyMessage(module: ServiceModule<any>, config: Config): string {
  if (config.credentials === "linked") {
    const example = module.keyCheck?.tool ?? `a ${module.name} tool`;
    return (
      `No ${module.title} key is linked to your account yet: call ${example} and open the link it gives you ` +
      "(the key is entered on that page, never in the chat)."
    );
  }
  const prefix = module.bearerKeyPrefix;
  const alt = prefix && !config.httpToken ? ` (or as Authorization: Bearer ${prefix}…)` : "";
  return (
    `No ${module.title} key came with this request: this server acts with each caller's own key. ` +
    `Send yours in the ${credentialHeader(module.name)} header${alt}.`
  );
}
