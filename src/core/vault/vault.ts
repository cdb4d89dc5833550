import type { Sealer } from "../base/seal.js";

/** Where sealed keys rest: a hash per tenant (service -> sealed blob), in Redis or in process. */
export interface VaultStore {
  all(tenant: string): Promise<Record<string, string>>;
  put(tenant: string, service: string, sealed: string): Promise<void>;
  remove(tenant: string, service: string): Promise<boolean>;
}

/** In process: lost at restart (the server warns at start). Bounded: past `maxTenants` the oldest tenant's keys go. */
export class MemoryVaultStore implements VaultStore {
  private readonly tenants = new Map<string, Map<string, string>>();

  constructor(private readonly maxTenants = 100_000) {}

  async all(tenant: string): Promise<Record<string, string>> {
    return Object.fromEntries(this.tenants.get(tenant) ?? []);
  }

  async put(tenant: string, service: string, sealed: string): Promise<void> {
    const keys = this.tenants.get(tenant) ?? new Map<string, string>();
    this.tenants.delete(tenant);
    if (this.tenants.size >= this.maxTenants) this.tenants.delete(this.tenants.keys().next().value!);
    this.tenants.set(tenant, keys.set(service, sealed));
  }

  async remove(tenant: string, service: string): Promise<boolean> {
    return this.tenants.get(tenant)?.delete(service) ?? false;
  }
}

export interface LinkedKey {
  service: string;
  /** The key's last four characters: enough to tell two keys apart, never enough to use one. */
  lastFour: string;
  linkedAt: string;
}

interface Sealed {
  key: string;
  linkedAt: string;
}

/**
 * Upstream keys users linked through the connect page. Each is sealed (AES-256-GCM under a key
 * derived from ENV.stateKey) and bound to its tenant and service: a blob copied to another
 * tenant or service does not open. A blob that does not open (the state key changed) counts as
 * not linked: the user is asked to link again.
 */
export class Vault {
  constructor(
    private readonly store: VaultStore,
    private readonly sealer: Sealer,
  ) {}

  async link(tenant: string, service: string, key: string): Promise<void> {
    const sealed = this.sealer.seal(
      { key, linkedAt: new Date().toISOString() } satisfies Sealed,
      bound(tenant, service),
    );
    await this.store.put(tenant, service, sealed);
  }

  async unlink(tenant: string, service: string): Promise<boolean> {
    return this.store.remove(tenant, service);
  }

  /** The tenant's keys by service, in clear: only for building its upstream clients. */
  async keys(tenant: string): Promise<Record<string, string>> {
    return Object.fromEntries(Object.entries(await this.opened(tenant)).map(([service, s]) => [service, s.key]));
  }

  async linked(tenant: string): Promise<LinkedKey[]> {
    return Object.entries(await this.opened(tenant))
      .map(([service, s]) => ({ service, lastFour: s.key.slice(-4), linkedAt: s.linkedAt }))
      .sort((a, b) => a.service.localeCompare(b.service));
  }

  private async opened(tenant: string): Promise<Record<string, Sealed>> {
    const out: Record<string, Sealed> = {};
    for (const [service, blob] of Object.entries(await this.store.all(tenant))) {
      try {
        out[service] = this.sealer.open<Sealed>(blob, bound(tenant, service));
      } catch {
        // sealed under another ENV.stateKey, or moved: as good as not linked
      }
    }
    return out;
  }
}

const bound = (tenant: string, service: string) => `vault:${tenant}:${service}`;
