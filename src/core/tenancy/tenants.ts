/** Something built for one tenant that holds resources (pollers, subscriptions) until closed. */
export interface TenantScoped {
  close(): Promise<void>;
}

interface Entry<T> {
  value: T;
  lastUsed: number;
  /** Requests in flight and tasks following work with this tenant's runtime. */
  pins: number;
}

/**
 * One value per tenant, built on first use and closed after it has been idle (no request, no
 * task) for a while. Caps the number kept: past it, the longest idle unpinned tenant goes first.
 */
export class TenantCache<T extends TenantScoped> {
  private readonly entries = new Map<string, Entry<T>>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly options: { idleMs: number; max: number }) {
    this.sweeper = setInterval(() => this.sweep(Date.now() - options.idleMs), Math.min(options.idleMs, 60_000));
    this.sweeper.unref();
  }

  get size(): number {
    return this.entries.size;
  }

  /** The tenant's value, built with `build` on first use. */
  get(tenantId: string, build: () => T): T {
    let entry = this.entries.get(tenantId);
    if (!entry) {
      if (this.entries.size >= this.options.max) this.evictOne();
      entry = { value: build(), lastUsed: 0, pins: 0 };
    }
    this.touch(tenantId, entry);
    return entry.value;
  }

  /** Keeps the tenant's value while `pins` > 0; the returned function releases (once). */
  pin(tenantId: string): () => void {
    const entry = this.entries.get(tenantId);
    if (!entry) return () => undefined;
    entry.pins++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      entry.pins--;
      if (this.entries.get(tenantId) === entry) this.touch(tenantId, entry);
    };
  }

  /** Marks a use: the entry moves to the end, so the map stays in order of use. */
  private touch(tenantId: string, entry: Entry<T>): void {
    this.entries.delete(tenantId);
    this.entries.set(tenantId, entry);
    entry.lastUsed = Date.now();
  }

  /** Closes unpinned tenants last used before `cutoff`. */
  private sweep(cutoff: number): void {
    for (const [id, entry] of this.entries) if (entry.pins === 0 && entry.lastUsed < cutoff) this.drop(id, entry);
  }

  /**
   * At the cap: closes the least recently requested tenant without a pin (the map's first). New
   * keys arrive at the rate anyone likes, so this must not sort the whole cache each time.
   */
  private evictOne(): void {
    for (const [id, entry] of this.entries) {
      if (entry.pins === 0) {
        this.drop(id, entry);
        return;
      }
    }
  }

  private drop(id: string, entry: Entry<T>): void {
    this.entries.delete(id);
    void entry.value.close().catch(() => undefined);
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    const all = [...this.entries.values()];
    this.entries.clear();
    await Promise.allSettled(all.map((e) => e.value.close()));
  }
}
