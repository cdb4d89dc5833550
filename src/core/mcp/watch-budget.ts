import { ENV, settingDefault } from "../base/settings.js";
import { telemetry } from "../base/telemetry.js";
/**
 * What resource subscriptions may cost a replica. Each followed resource is an upstream poll per
 * interval (and, with Redis, a lease and a publish): one caller naming 10,000 URIs in one
 * `subscriptions/listen` kept a replica's core busy. Three caps, each a setting:
 * URIs per listen request, subscriptions per tenant (listen streams and 2025 sessions together),
 * and resources followed per replica (one poller each, whoever subscribes).
 */
interface WatchLimits {
  /** ENV.maxListenUris */
  perRequest: number;
  /** ENV.maxSubscriptionsPerTenant */
  perTenant: number;
  /** ENV.maxPollers */
  perReplica: number;
}

const DEFAULT_WATCH_LIMITS: WatchLimits = {
  perRequest: settingDefault("maxListenUris"),
  perTenant: settingDefault("maxSubscriptionsPerTenant"),
  perReplica: settingDefault("maxPollers"),
};

/** A subscription past a cap: the message names the cap's setting and what to do. */
export class WatchLimitError extends Error {
  constructor(message: string, setting: string) {
    super(message);
    this.name = "WatchLimitError";
    telemetry.add("caps", 1, { setting });
  }
}

export class WatchBudget {
  private readonly subscriptions = new Map<string, number>();
  /** Followed resources: `tenant uri` -> subscribers, one poller each. */
  private readonly followed = new Map<string, number>();

  constructor(readonly limits: WatchLimits = DEFAULT_WATCH_LIMITS) {}

  /** Resources followed on this replica right now. */
  get pollers(): number {
    return this.followed.size;
  }

  /** Resource subscriptions held on this replica right now, every tenant's. */
  get subscribers(): number {
    let total = 0;
    for (const n of this.subscriptions.values()) total += n;
    return total;
  }

  /** Refuses a listen request naming more URIs than one request may. */
  checkRequest(count: number): void {
    if (count > this.limits.perRequest) {
      throw new WatchLimitError(
        `subscriptions/listen names ${count} resources; one request may name at most ${this.limits.perRequest} ` +
          `(${ENV.maxListenUris}). Listen to fewer, or split them over several streams.`,
        ENV.maxListenUris,
      );
    }
  }

  /**
   * Takes `uris` for one subscriber of `tenant`, all or none; returns the release. `polls`: the
   * tenant would poll these (it has a key for a service that follows them), so they count against
   * the replica's pollers too.
   */
  acquire(tenant: string, uris: readonly string[], polls: boolean): () => void {
    const held = this.subscriptions.get(tenant) ?? 0;
    if (held + uris.length > this.limits.perTenant) {
      throw new WatchLimitError(
        `These keys hold ${held} resource subscriptions on this server; at most ${this.limits.perTenant} are ` +
          `allowed (${ENV.maxSubscriptionsPerTenant}). Close a listen stream or unsubscribe first.`,
        ENV.maxSubscriptionsPerTenant,
      );
    }
    const keys = polls ? uris.map((uri) => `${tenant} ${uri}`) : [];
    const fresh = new Set(keys.filter((k) => !this.followed.has(k))).size;
    if (fresh > 0 && this.followed.size + fresh > this.limits.perReplica) {
      throw new WatchLimitError(
        `This server already follows ${this.followed.size} resources for its callers, its limit (${ENV.maxPollers}); ` +
          "retry later, or subscribe to fewer.",
        ENV.maxPollers,
      );
    }
    this.subscriptions.set(tenant, held + uris.length);
    for (const k of keys) this.followed.set(k, (this.followed.get(k) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.subscriptions.get(tenant) ?? 0) - uris.length;
      if (left > 0) this.subscriptions.set(tenant, left);
      else this.subscriptions.delete(tenant);
      for (const k of keys) {
        const n = (this.followed.get(k) ?? 0) - 1;
        if (n > 0) this.followed.set(k, n);
        else this.followed.delete(k);
      }
    };
  }
}
