/** Where accepted keys are remembered across replicas (Redis), by their keyed hash only. */
export interface AcceptedStore {
  add(id: string, ttlMs: number): Promise<void>;
  has(id: string): Promise<boolean>;
}

/** How long an accepted key is remembered without being accepted again (each acceptance renews it). */
const REMEMBER_MS = 24 * 60 * 60_000;
/** How long a key not found accepted is not looked up again in the shared store. */
const RECHECK_MS = 5_000;

/**
 * Per-user keys (ENV.credentials=caller) that an upstream has accepted at least once (answered 2xx).
 * Until then a key is anyone's guess: its tenant shares one bucket of the per-tenant caps with every
 * other such key, so made-up keys cannot take the sessions and pollers of real ones. Only keys an
 * upstream accepted are remembered, by keyed hash: the memory is bounded by real keys (`max` here,
 * the oldest forgotten first; on Redis one key each, expiring after a day without use), never by
 * what callers send. Answers are synchronous from this replica's memory; a key it does not know is
 * looked up in the shared store in the background (at most once per RECHECK_MS), so one accepted on
 * another replica gets its own quota here from its next request.
 */
export class AcceptedKeys {
  private readonly known = new Map<string, number>();
  private readonly checked = new Map<string, number>();

  constructor(
    private readonly store?: AcceptedStore,
    private readonly max = 100_000,
  ) {}

  /** An upstream answered this key with a 2xx. */
  accept(id: string): void {
    const now = Date.now();
    const last = this.known.get(id);
    this.remember(id, now);
    // Renewed in the shared store at most once an hour per key.
    if (this.store && (last === undefined || now - last > 60 * 60_000))
      void this.store.add(id, REMEMBER_MS).catch(() => this.known.delete(id));
  }

  /** Whether every one of these keys was accepted (as far as this replica knows now). */
  all(ids: readonly string[]): boolean {
    let all = true;
    for (const id of ids) {
      if (this.known.has(id)) continue;
      all = false;
      this.lookUp(id);
    }
    return all;
  }

  /**
   * Whether every one of these keys was accepted, asking the shared store now for those this
   * replica does not know (a key accepted on another replica): for a cap taken once, as a task's.
   */
  async allNow(ids: readonly string[]): Promise<boolean> {
    if (this.all(ids)) return true;
    if (!this.store) return false;
    for (const id of ids) {
      if (this.known.has(id)) continue;
      if (!(await this.store.has(id).catch(() => false))) return false;
      this.remember(id, Date.now());
    }
    return true;
  }

  private lookUp(id: string): void {
    if (!this.store) return;
    const now = Date.now();
    if ((this.checked.get(id) ?? 0) > now) return;
    this.checked.delete(id);
    if (this.checked.size >= this.max) this.checked.delete(this.checked.keys().next().value!);
    this.checked.set(id, now + RECHECK_MS);
    void this.store.has(id).then(
      (yes) => yes && this.remember(id, Date.now()),
      () => undefined,
    );
  }

  private remember(id: string, at: number): void {
    this.known.delete(id);
    if (this.known.size >= this.max) this.known.delete(this.known.keys().next().value!);
    this.known.set(id, at);
  }
}
