/** Something built for one tenant that holds resources (pollers, subscriptions) until closed. */
interface TenantScoped {
  close(): Promise<void>;
}

interface Entry<T> {
  value: T;
  lastUsed: number;
  /** Requests in flight and tasks following work with this tenant's runtime. */
  pins: number;
}

/**
 * Unpinned tenants kept at once whose keys no upstream accepted yet: together they are one
 * tenant's share, as for the other per-tenant caps (core/tenancy/accepted.ts).
 */
const GUEST_SHARE = 1;

/**
 * One value per tenant, built on first use and closed after it has been idle (no request, no
 * task) for a while. Caps the number kept: past it, the longest idle unpinned tenant goes first.
 * With `guest`, tenants whose keys no upstream accepted yet are kept apart, one share for all of
 * them: a new one closes the longest idle of them, never a real tenant, so made-up keys cannot push
 * idle real tenants out. A guest whose keys are accepted since joins the others on its next use.
 */
export class TenantCache<T extends TenantScoped> {
  private readonly entries = new Map<string, Entry<T>>();
  private readonly guests = new Map<string, Entry<T>>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly options: { idleMs: number; max: number; guest?: (value: T) => boolean }) {
    this.sweeper = setInterval(() => this.sweep(Date.now() - options.idleMs), Math.min(options.idleMs, 60_000));
    this.sweeper.unref();
  }

  get size(): number {
    return this.entries.size + this.guests.size;
  }

  /** The tenant's value, built with `build` on first use. */
  get(tenantId: string, build: () => T): T {
    let entry = this.entries.get(tenantId);
    let pool = this.entries;
    if (!entry) {
      entry = this.guests.get(tenantId);
      if (entry && !this.isGuest(entry.value)) {
        // Its keys were accepted since: it is a tenant like the others now.
        this.guests.delete(tenantId);
        this.makeRoom(this.entries, this.options.max);
      } else if (entry) pool = this.guests;
      else {
        const value = build();
        if (this.isGuest(value)) pool = this.guests;
        this.makeRoom(pool, pool === this.guests ? GUEST_SHARE : this.options.max);
        entry = { value, lastUsed: 0, pins: 0 };
      }
    }
    this.touch(pool, tenantId, entry);
    return entry.value;
  }

  /** Keeps the tenant's value while `pins` > 0; the returned function releases (once). */
  pin(tenantId: string): () => void {
    const pool = this.entries.has(tenantId) ? this.entries : this.guests;
    const entry = pool.get(tenantId);
    if (!entry) return () => undefined;
    entry.pins++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      entry.pins--;
      if (pool.get(tenantId) === entry) this.touch(pool, tenantId, entry);
    };
  }

  private isGuest(value: T): boolean {
    return this.options.guest?.(value) ?? false;
  }

  /** Marks a use: the entry moves to the end, so the map stays in order of use. */
  private touch(pool: Map<string, Entry<T>>, tenantId: string, entry: Entry<T>): void {
    pool.delete(tenantId);
    pool.set(tenantId, entry);
    entry.lastUsed = Date.now();
  }

  /** Closes unpinned tenants last used before `cutoff`. */
  private sweep(cutoff: number): void {
    for (const pool of [this.entries, this.guests])
      for (const [id, entry] of pool) if (entry.pins === 0 && entry.lastUsed < cutoff) this.drop(pool, id, entry);
  }

  /**
   * At the cap: closes the least recently requested tenant without a pin (the map's first). New
   * keys arrive at the rate anyone likes, so this must not sort the whole cache each time.
   */
  private makeRoom(pool: Map<string, Entry<T>>, max: number): void {
    if (pool.size < max) return;
    for (const [id, entry] of pool) {
      if (entry.pins === 0) {
        this.drop(pool, id, entry);
        return;
      }
    }
  }

  private drop(pool: Map<string, Entry<T>>, id: string, entry: Entry<T>): void {
    pool.delete(id);
    void entry.value.close().catch(() => undefined);
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    const all = [...this.entries.values(), ...this.guests.values()];
    this.entries.clear();
    this.guests.clear();
    await Promise.allSettled(all.map((e) => e.value.close()));
  }
}
