import type { Sealer } from "../core/base/seal.js";
import { TenantCache } from "../core/tenancy/tenant-cache.js";
import { identityOf } from "./credentials.js";
import { buildTenant, type Tenant, type TenantShared, UNACCEPTED_KEYS } from "./build-tenant.js";

/**
 * The process's tenants. Single-account mode: one, `local`. Per-user modes: one per key set (an
 * HMAC of the keys), per signed-in user in linked mode, built on first use and closed when idle
 * and unpinned; at most `max` kept.
 */
export class Tenants {
  private readonly cache: TenantCache<Tenant>;
  private readonly single?: Tenant;

  constructor(
    private readonly shared: TenantShared,
    private readonly options: { max: number; sealer: Sealer; byUser: boolean },
  ) {
    // Tenants whose keys no upstream accepted yet share one share of the cache (made-up keys).
    const guest = (t: Tenant) => t.quotaKey?.() === UNACCEPTED_KEYS;
    this.cache = new TenantCache<Tenant>({ idleMs: 15 * 60_000, max: options.max, guest });
    this.single = shared.perTenant ? undefined : buildTenant(shared, "local", undefined);
  }

  /** The runtime that acts with these credentials (the one runtime in single-account mode). */
  runtimeFor(credentials: Readonly<Record<string, string>> | undefined): Tenant {
    if (this.single) return this.single;
    const keys = credentials ?? {};
    // Linked: the user is the tenant; their keys come from the vault, not the request.
    const tenantId = this.options.sealer.tenantId(this.options.byUser ? identityOf(keys) : keys);
    return this.cache.get(tenantId, () => buildTenant(this.shared, tenantId, keys));
  }

  pin(tenantId: string): () => void {
    return this.cache.pin(tenantId);
  }

  get size(): number {
    return this.single ? 1 : this.cache.size;
  }

  async close(): Promise<void> {
    await this.single?.close();
    await this.cache.close();
  }
}
