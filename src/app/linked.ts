import type { NonceStore } from "../core/tools/confirm.js";
import type { Egress } from "../core/base/egress.js";
import type { ConnectPageOptions } from "../core/http/connect-page.js";
import type { Logger } from "../core/base/logger.js";
import type { ServiceInstance, ServiceModule } from "../core/service/service.js";
import type { RedisState } from "../core/state/redis.js";
import type { Sealer } from "../core/base/seal.js";
import type { ToolContext, ToolDef } from "../core/tools/tool.js";
import { UpstreamError } from "../core/upstream/upstream.js";
import { accountTools, type AccountDeps } from "../core/vault/account-tools.js";
import type { Linking } from "../core/mcp/link-gate.js";
import type { LiveInstances } from "../core/vault/live-instances.js";
import { type AttemptCounter, MemoryAttemptCounter, TicketSigner } from "../core/vault/tickets.js";
import { MemoryVaultStore, Vault } from "../core/vault/vault.js";
import { ENV } from "../core/base/settings.js";

type RedisModule = typeof import("../core/state/redis.js");

/**
 * ENV.credentials=linked, app side: the vault (Redis when ENV.stateUrl is set), the connect page's
 * tickets and key check, the account tools, and per tenant its live instances and link gate.
 */
export class LinkedKeys {
  readonly vault: Vault;
  readonly tickets: TicketSigner;
  private readonly attempts: AttemptCounter;
  private readonly toolsetService: Map<string, ServiceModule<any>>;

  constructor(
    private readonly options: {
      publicUrl: string;
      enabled: ServiceModule<any>[];
      sealer: Sealer;
      nonces: NonceStore;
      redis?: { state: RedisState; module: RedisModule };
      /** Every tool of the enabled services, before toolset filtering: the key checks run one. */
      allTools: readonly ToolDef<any, any>[];
      /** Builds a service instance for a key (the same way a tenant does). */
      instance(module: ServiceModule<any>, key: string, tenantId: string): ServiceInstance;
      logger: Logger;
    },
  ) {
    const { redis, sealer } = options;
    this.vault = new Vault(redis ? new redis.module.RedisVaultStore(redis.state) : new MemoryVaultStore(), sealer);
    this.tickets = new TicketSigner(sealer.linkKey);
    this.attempts = redis ? new redis.module.RedisAttemptCounter(redis.state) : new MemoryAttemptCounter();
    this.toolsetService = new Map(options.enabled.flatMap((m) => m.toolsets.map((t) => [t.id, m] as const)));
    if (redis) void warnWithoutAof(redis.state, options.logger);
    else
      options.logger.warn(
        `${ENV.credentials}=linked without ${ENV.stateUrl}: linked keys are kept in this process only ` +
          "and are lost at restart (users link again)",
      );
  }

  /** The account toolset's tools, built once (their deps are each tenant's `account`, ctx.deps). */
  accountTools(): ToolDef<any, any, AccountDeps>[] {
    return accountTools(this.options.enabled.map((m) => ({ name: m.name, title: m.title })));
  }

  /** One tenant's view: its linking (the gate's) and its account deps; `live` holds its instances. */
  forTenant(
    owner: string,
    who: string,
    live: LiveInstances,
    egress: Egress,
  ): { linking: Linking; account: AccountDeps; keys(): Record<string, string> } {
    let current: Record<string, string> = {};
    // The store generation this replica first saw a key of this tenant in, and the services whose key
    // vanished since under another generation: Redis restarted and lost them (docs/deployment.md).
    let seenIn: string | undefined;
    const lost = new Set<string>();
    const generation = () => this.options.nonces.generation().catch(() => undefined);
    const refresh = async () => {
      const next = await this.vault.keys(owner);
      const gone = Object.keys(current).filter((service) => !next[service]);
      if (gone.length > 0) {
        const now = await generation();
        if (seenIn && now && now !== seenIn) for (const service of gone) lost.add(service);
        seenIn = undefined;
      }
      if (Object.keys(next).length > 0 && !seenIn) seenIn = await generation();
      for (const service of Object.keys(next)) lost.delete(service);
      current = next;
      for (const key of Object.values(current)) egress.addConfigured(key);
      live.use(current);
      return current;
    };
    live.refresh = refresh;
    return {
      linking: {
        serviceOf: (def) => {
          const module = this.toolsetService.get(def.toolset);
          return module && { name: module.name, title: module.title };
        },
        ensure: async (service) => Boolean((await refresh())[service]),
        lost: (service) => lost.has(service),
        link: async (service, elicitationId) => {
          const generation = await this.options.nonces.generation();
          const ticket = this.tickets.mint({ tenant: owner, service, elicitationId, who, generation });
          const url = new URL(`connect/${service}`, this.options.publicUrl);
          url.searchParams.set("ticket", ticket);
          return url.href;
        },
      },
      account: {
        linked: () => this.vault.linked(owner),
        unlink: async (service) => {
          await live
            .current(service)
            ?.unlinked?.()
            .catch((err: unknown) =>
              this.options.logger.warn("could not undo what the service set up with the key being unlinked", {
                service,
                error: err instanceof Error ? err.message : String(err),
              }),
            );
          const removed = await this.vault.unlink(owner, service);
          await refresh();
          return removed;
        },
      },
      keys: () => current,
    };
  }

  /** What the connect page needs (core/http/connect-page.ts). */
  connectOptions(logger: Logger): ConnectPageOptions {
    return {
      publicUrl: this.options.publicUrl,
      services: this.options.enabled.map((m) => ({ name: m.name, displayName: m.displayName, keyHint: m.keyHint })),
      tickets: this.tickets,
      nonces: this.options.nonces,
      attempts: this.attempts,
      vault: this.vault,
      verifyKey: (service, key, signal) => this.verifyKey(service, key, signal),
      logger,
    };
  }

  /** Runs the service's key check (a cheap read) with the key; undefined when the upstream accepts it. */
  private async verifyKey(service: string, key: string, signal: AbortSignal): Promise<string | undefined> {
    const module = this.options.enabled.find((m) => m.name === service)!;
    const check = module.keyCheck && this.options.allTools.find((t) => t.name === module.keyCheck!.tool);
    if (!check) return undefined;
    const instance = this.options.instance(module, key, `keycheck:${service}`);
    const ctx: ToolContext = {
      deps: instance.deps,
      signal,
      progress: async () => undefined,
      logger: this.options.logger,
      secret: () => undefined,
      confirm: async () => "unsupported",
      resourcesChanged: () => undefined,
    };
    try {
      await check.run(module.keyCheck!.input ?? {}, ctx);
      return undefined;
    } catch (err) {
      if (!(err instanceof UpstreamError) || err.status === undefined) throw err;
      if (err.status === 401 || err.status === 403)
        return (
          `${module.displayName} refused this key (HTTP ${err.status}): ` +
          "check that you copied the whole key and that it is still active."
        );
      return `${module.displayName} answered HTTP ${err.status} when the key was checked; try again in a moment.`;
    } finally {
      await instance.close().catch(() => undefined);
    }
  }
}

/**
 * Linked keys live in Redis only: without AOF a restart loses those linked since the last snapshot
 * (all of them without one). Said at start; users whose key was lost are told on their next call.
 */
async function warnWithoutAof(state: RedisState, logger: Logger): Promise<void> {
  const info = await state.cmd.info("persistence").catch(() => undefined);
  if (info !== undefined && !/^aof_enabled:1/m.test(info))
    logger.warn(
      `${ENV.credentials}=linked with a Redis that has no AOF (appendonly yes): a Redis restart loses the keys ` +
        "linked since its last snapshot, and their users are asked to link again (docs/deployment.md)",
    );
}
