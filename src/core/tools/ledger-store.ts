import { randomUUID } from "node:crypto";

/**
 * Where the spend ledger's records live (core/tools/ledger.ts): opaque strings with a lifetime, in
 * the store's generation. A generation names what the store remembers: it changes whenever that
 * memory may have been lost (a Redis restart, a state directory wiped), so a record written in
 * another one cannot prove it is complete.
 */
export interface LedgerStore {
  /** What survives: the process, a state file, or Redis (for messages and the docs). */
  readonly where: "process" | "file" | "redis";
  /** Stores the value only if the key has none: `prior` is what was there (absent: this call claimed it). */
  claim(key: string, value: string, ttlMs: number): Promise<{ generation: string; prior?: Stored }>;
  /**
   * `restarted`: when the store last (re)started (ms since the epoch), while that is within the
   * window a replica gave `restarted()`: a record written before it may be lost.
   */
  get(key: string): Promise<{ generation: string; found?: Stored; restarted?: number }>;
  set(key: string, value: string, ttlMs: number): Promise<void>;
  delete(key: string): Promise<void>;
  /** The store's generation now (a store whose memory can be lost while this process runs: Redis). */
  currentGeneration?(): Promise<string>;
  /**
   * Notes that the store restarted (its generation changed), for every process sharing it, until its
   * start is `windowMs` old: `get` answers it meanwhile. Answers the start, or undefined past that.
   */
  restarted?(windowMs: number): Promise<number | undefined>;
}

/** A record as the store holds it: the generation it was written in, and its value. */
export interface Stored {
  generation: string;
  value: string;
}

/** At most this many records in one process. */
export const MAX_MEMORY_RECORDS = 10_000;

/** In process: a record lives as long as the process (its generation is the process's). */
export class MemoryLedgerStore implements LedgerStore {
  readonly where = "process" as const;
  private readonly records = new Map<string, { value: string; until: number }>();
  private readonly generation = randomUUID();

  // Check and set without an await between them: two calls at once must not both claim.
  async claim(key: string, value: string, ttlMs: number): Promise<{ generation: string; prior?: Stored }> {
    const prior = this.current(key);
    if (prior === undefined) this.put(key, value, ttlMs);
    return { generation: this.generation, prior: prior === undefined ? undefined : this.stored(prior) };
  }

  async get(key: string): Promise<{ generation: string; found?: Stored }> {
    const value = this.current(key);
    return { generation: this.generation, found: value === undefined ? undefined : this.stored(value) };
  }

  async set(key: string, value: string, ttlMs: number): Promise<void> {
    this.put(key, value, ttlMs);
  }

  async delete(key: string): Promise<void> {
    this.records.delete(key);
  }

  private stored(value: string): Stored {
    return { generation: this.generation, value };
  }

  private current(key: string): string | undefined {
    const record = this.records.get(key);
    if (record && record.until < Date.now()) this.records.delete(key);
    return record && record.until >= Date.now() ? record.value : undefined;
  }

  private put(key: string, value: string, ttlMs: number): void {
    this.records.delete(key);
    this.records.set(key, { value, until: Date.now() + ttlMs });
    if (this.records.size <= MAX_MEMORY_RECORDS) return;
    const now = Date.now();
    for (const [k, r] of this.records) if (r.until < now) this.records.delete(k);
    // Still full: the oldest record goes (Map keeps insertion order).
    while (this.records.size > MAX_MEMORY_RECORDS) this.records.delete(this.records.keys().next().value!);
  }
}
