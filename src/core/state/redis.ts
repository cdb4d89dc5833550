// The Redis state module, loaded only when shared state is configured: the connection, and each store on it.
import type { NonceStore, NonceUse } from "../tools/confirm.js";
import type { LedgerStore, Stored } from "../tools/ledger-store.js";
import type { AcceptedStore } from "../tenancy/accepted.js";
import type { AttemptCounter } from "../vault/tickets.js";
import type { VaultStore } from "../vault/vault.js";
import { KEY_PREFIX as P, type RedisState } from "./redis-connection.js";

export { RedisState } from "./redis-connection.js";
export { RedisTaskStore } from "./redis-tasks.js";

/**
 * Single-use nonces across replicas: SET NX with the nonce's lifetime, in the generation of the
 * Redis server's run id. A restart always changes it, so a confirmation issued before one is
 * refused rather than trusted: persistence may restore a snapshot older than its use.
 */
export class RedisNonceStore implements NonceStore {
  constructor(private readonly state: RedisState) {}

  async generation(): Promise<string> {
    this.state.roundTrips++;
    return this.state.scripts.sbGeneration();
  }

  async consume(nonce: string, generation: string, ttlMs: number): Promise<NonceUse> {
    this.state.roundTrips++;
    const answer = await this.state.scripts.sbConsume(`${P}nonce:${nonce}`, generation, ttlMs);
    return answer === 1 ? "first" : answer === 0 ? "used" : "stale";
  }
}

/** Attempts counted across replicas (keys tried with one connect link): one MULTI, the count expires with its name. */
export class RedisAttemptCounter implements AttemptCounter {
  constructor(private readonly state: RedisState) {}

  async add(name: string, ttlMs: number): Promise<number> {
    const key = `${P}attempts:${name}`;
    this.state.roundTrips++;
    const answers = await this.state.cmd.multi().set(key, "0", "PX", ttlMs, "NX").incr(key).exec();
    const [error, count] = answers?.[1] ?? [new Error("no answer from Redis")];
    if (error) throw error;
    return Number(count);
  }
}

/** Per-user keys an upstream accepted, by keyed hash, across replicas (core/tenancy/accepted.ts). */
export class RedisAcceptedStore implements AcceptedStore {
  constructor(private readonly state: RedisState) {}

  async add(id: string, ttlMs: number): Promise<void> {
    this.state.roundTrips++;
    await this.state.cmd.set(`${P}accepted:${id}`, "1", "PX", ttlMs);
  }

  async has(id: string): Promise<boolean> {
    this.state.roundTrips++;
    return (await this.state.cmd.exists(`${P}accepted:${id}`)) === 1;
  }
}

/**
 * The spend ledger across replicas. Each value is stored as `<run id>|<record>`: the generation it
 * was written in, so a record restored by persistence from before a restart is known as such.
 * Every command is one script that also answers the current run id.
 */
export class RedisLedgerStore implements LedgerStore {
  readonly where = "redis" as const;
  constructor(private readonly state: RedisState) {}

  async claim(key: string, value: string, ttlMs: number): Promise<{ generation: string; prior?: Stored }> {
    this.state.roundTrips++;
    const [generation, prior] = await this.state.scripts.sbLedger(spendKey(key), RESTART_KEY, "claim", value, ttlMs);
    return { generation, prior: unpack(prior) };
  }

  async get(key: string): Promise<{ generation: string; found?: Stored; restarted?: number }> {
    this.state.roundTrips++;
    const [generation, found, restarted] = await this.state.scripts.sbLedger(spendKey(key), RESTART_KEY, "get", "", 0);
    return { generation, found: unpack(found), ...(restarted ? { restarted: Number(restarted) } : {}) };
  }

  async set(key: string, value: string, ttlMs: number): Promise<void> {
    this.state.roundTrips++;
    await this.state.scripts.sbLedger(spendKey(key), RESTART_KEY, "set", value, ttlMs);
  }

  async delete(key: string): Promise<void> {
    this.state.roundTrips++;
    await this.state.cmd.del(spendKey(key));
  }

  async currentGeneration(): Promise<string> {
    this.state.roundTrips++;
    return this.state.scripts.sbGeneration();
  }

  async restarted(windowMs: number): Promise<number | undefined> {
    this.state.roundTrips++;
    const started = await this.state.scripts.sbRestarted(RESTART_KEY, windowMs);
    return started ? Number(started) : undefined;
  }
}

const spendKey = (key: string) => `${P}spend:${key}`;
/** When the Redis server last restarted, kept for the spend ledger's window after it. */
const RESTART_KEY = `${P}spend-restarted`;

function unpack(raw: string | null | undefined): Stored | undefined {
  if (!raw) return undefined;
  const bar = raw.indexOf("|");
  return { generation: raw.slice(0, bar), value: raw.slice(bar + 1) };
}

/** Linked upstream keys (core/vault/vault.ts): one hash per tenant, values sealed before they get here. */
export class RedisVaultStore implements VaultStore {
  constructor(private readonly state: RedisState) {}

  async all(tenant: string): Promise<Record<string, string>> {
    this.state.roundTrips++;
    return this.state.cmd.hgetall(vaultKey(tenant));
  }

  async put(tenant: string, service: string, sealed: string): Promise<void> {
    this.state.roundTrips++;
    await this.state.cmd.hset(vaultKey(tenant), service, sealed);
  }

  async remove(tenant: string, service: string): Promise<boolean> {
    this.state.roundTrips++;
    return (await this.state.cmd.hdel(vaultKey(tenant), service)) > 0;
  }
}

const vaultKey = (tenant: string) => `${P}vault:${tenant}`;
