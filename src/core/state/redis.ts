import { Redis } from "ioredis";
import type { NonceStore, NonceUse } from "../tools/confirm.js";
import type { LedgerStore, Stored } from "../tools/ledger-store.js";
import type { Logger } from "../base/logger.js";
import { telemetry } from "../base/telemetry.js";
import type { AcceptedStore } from "../tenancy/accepted.js";
import type { AttemptCounter } from "../vault/tickets.js";
import type { VaultStore } from "../vault/vault.js";
import {
  afterCursor,
  decodeCursor,
  encodeCursor,
  quotaOf,
  TERMINAL,
  type TaskChange,
  type TaskPage,
  type TaskRecord,
  type TaskStore,
} from "../tasks/store.js";

/** Every key and channel of ours starts with this, so one Redis can be shared with other software. */
const P = "sb:";

/** Acquire the lease, or extend it when it is already ours; 1 when we hold it afterwards. */
const LEASE = `local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) return 1 end
if not v then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1 end
return 0`;

/**
 * Extend each lease that is still ours (the tasks this replica follows; KEYS: their leases, then
 * their records). Answers the tasks another replica holds now (i) and those whose record is gone
 * (-i: Redis restarted without it).
 */
const RENEW = `local out = {}
local n = #KEYS / 2
for i = 1, n do
  local k = KEYS[i]
  local holder = redis.call('GET', k)
  if holder == ARGV[1] then redis.call('PEXPIRE', k, ARGV[2])
  elseif not holder then redis.call('SET', k, ARGV[1], 'PX', ARGV[2])
  else out[#out + 1] = i end
  if redis.call('EXISTS', KEYS[n + i]) == 0 then out[#out + 1] = -i end
end
return out`;

/**
 * A task record written back by the replica following it (Redis lost it): only while it is still
 * missing, so it never overwrites what a client did since (a cancel). A working task goes back into
 * the working set and its owner's (the per-tenant cap counts it again), leased to that replica.
 * KEYS: record, owner set, working set, lease, owner's working set. ARGV: record, its remaining ms,
 * expiry, id, working (1/0), replica, lease ms, now.
 */
const RESTORE = `local function add(key)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', ARGV[8])
  redis.call('ZADD', key, ARGV[3], ARGV[4])
  if redis.call('PTTL', key) < tonumber(ARGV[2]) then redis.call('PEXPIRE', key, ARGV[2]) end
end
if not redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2], 'NX') then return 0 end
add(KEYS[2])
if ARGV[5] == '1' then
  redis.call('ZADD', KEYS[3], ARGV[3], ARGV[4])
  redis.call('SET', KEYS[4], ARGV[6], 'PX', ARGV[7])
  add(KEYS[5])
end
return 1`;

/**
 * A new task. The owner's sets only ever get a later expiry (a short-TTL task must not take a longer
 * one's entry with them), and lose their expired members, so a busy owner's sets stay bounded.
 * KEYS: record, owner set, working set, lease, owner's working set. ARGV: record, TTL ms, expiry,
 * id, working (1/0), replica, lease ms, now, the owner's cap of working tasks (0: none), the task
 * key prefix. The cap is checked and the slot taken in this one step (a check before, then a
 * create, let 8 of 12 concurrent calls through a cap of 5 on 3 replicas): {0, working} when full.
 */
const CREATE = `local cap = tonumber(ARGV[9])
if ARGV[5] == '1' and cap > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', ARGV[8])
  local ids = redis.call('ZRANGE', KEYS[5], 0, -1)
  if #ids >= cap then
    local working = 0
    for _, id in ipairs(ids) do
      local raw = redis.call('GET', ARGV[10] .. id)
      local status = raw and cjson.decode(raw).status
      if status and status ~= 'completed' and status ~= 'failed' and status ~= 'cancelled' then
        working = working + 1
      else
        redis.call('ZREM', KEYS[5], id)
      end
    end
    if working >= cap then return {0, working} end
  end
end
local function add(key)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', ARGV[8])
  redis.call('ZADD', key, ARGV[3], ARGV[4])
  if redis.call('PTTL', key) < tonumber(ARGV[2]) then redis.call('PEXPIRE', key, ARGV[2]) end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
add(KEYS[2])
if ARGV[5] == '1' then
  redis.call('ZADD', KEYS[3], ARGV[3], ARGV[4])
  redis.call('SET', KEYS[4], ARGV[6], 'PX', ARGV[7])
  add(KEYS[5])
end
return {1}`;

const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

/**
 * Compare-and-set of one task: written only if nobody changed it since it was read, keeping its
 * TTL. A task that ends leaves the working set and its lease; every change is published.
 */
const TASK_CAS = `if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL')
if ARGV[3] == '1' then redis.call('ZREM', KEYS[2], ARGV[5]) redis.call('DEL', KEYS[3]) end
redis.call('PUBLISH', KEYS[4], ARGV[4])
return 1`;

/** This Redis server's run id: a new one on every start, whatever its persistence restored. */
const RUN_ID = `string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')`;
const GENERATION = `return ${RUN_ID}`;

/**
 * One spend-ledger command with the generation: ARGV op (get, claim, set), value, TTL ms. Answers
 * {run id, the record there before (false when none)}, and for a get the restart marker KEYS[2]
 * (false when none); a value is stored as "<run id>|<value>".
 */
const LEDGER = `local g = ${RUN_ID}
local cur = redis.call('GET', KEYS[1])
if ARGV[1] == 'get' then return {g, cur, redis.call('GET', KEYS[2])} end
if ARGV[1] == 'claim' and cur then return {g, cur} end
redis.call('SET', KEYS[1], g .. '|' .. ARGV[2], 'PX', ARGV[3])
return {g, cur}`;

/**
 * Notes that this Redis server restarted (a replica saw its run id change): KEYS[1] holds when it
 * started (ms, from its own clock and uptime, a second early) until that start is ARGV[1] ms old.
 * Answers the start, or false when it is older than that.
 */
const RESTARTED = `local up = tonumber(string.match(redis.call('INFO', 'server'), 'uptime_in_seconds:(%d+)'))
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local started = (tonumber(t[1]) - up - 1) * 1000
local ttl = tonumber(ARGV[1]) - (now - started)
if ttl <= 0 then return false end
local value = string.format('%.0f', started)
redis.call('SET', KEYS[1], value, 'PX', string.format('%.0f', ttl))
return value`;

/**
 * Consumes a confirmation nonce of the given generation: 1 the first time, 0 after, -1 when Redis
 * restarted since it was issued (the marker of a use may be lost: no persistence, or an RDB
 * snapshot or an AOF fsync older than the use).
 */
const CONSUME = `if ${RUN_ID} ~= ARGV[1] then return -1 end
if redis.call('SET', KEYS[1], '1', 'PX', ARGV[2], 'NX') then return 1 end
return 0`;

/** The Lua scripts above, as commands on the command connection (sent by their SHA after the first call). */
interface Scripts {
  sbLease(key: string, me: string, ms: number): Promise<number>;
  sbRelease(key: string, me: string): Promise<number>;
  sbRenew(numKeys: number, ...keysThenArgs: string[]): Promise<number[]>;
  sbTaskCas(...keysThenArgs: string[]): Promise<number>;
  sbRestore(...keysThenArgs: string[]): Promise<number>;
  sbCreate(...keysThenArgs: string[]): Promise<number[]>;
  sbGeneration(): Promise<string>;
  sbConsume(key: string, generation: string, ttlMs: number): Promise<number>;
  sbLedger(
    key: string,
    marker: string,
    op: string,
    value: string,
    ttlMs: number,
  ): Promise<[string, string | null, (string | null)?]>;
  sbRestarted(marker: string, windowMs: number): Promise<string | null>;
}

interface RedisStateOptions {
  url: string;
  replicaId: string;
  logger: Logger;
  /** How long a replica's claim on a task or a poll lasts without renewal. */
  leaseMs: number;
}

/**
 * Shared state on Redis for replicas: one command connection, one subscriber connection. Commands
 * fail at once while Redis is away (no offline queue), so nothing waits forever on it; both
 * connections reconnect on their own, and the subscriber subscribes again.
 */
export class RedisState {
  readonly cmd: Redis;
  private readonly sub: Redis;
  private readonly handlers = new Map<string, Set<(message: string) => void>>();
  readonly replicaId: string;
  readonly leaseMs: number;
  /** Commands sent, for the benchmark's "Redis round trips per call". */
  roundTrips = 0;
  /** Called when the command connection is back after an outage (Redis may have restarted empty). */
  readonly reconnected = new Set<() => void>();

  constructor(private readonly options: RedisStateOptions) {
    this.replicaId = options.replicaId;
    this.leaseMs = options.leaseMs;
    const common = {
      lazyConnect: false,
      connectTimeout: 2000,
      maxRetriesPerRequest: 1,
      retryStrategy: (times: number) => Math.min(200 * times, 2000),
    };
    this.cmd = new Redis(options.url, {
      ...common,
      enableOfflineQueue: false,
      connectionName: `switchboard-${options.replicaId}`,
    });
    this.sub = new Redis(options.url, {
      ...common,
      enableOfflineQueue: true,
      connectionName: `switchboard-${options.replicaId}-sub`,
    });
    let down = false;
    for (const [name, conn] of [
      ["commands", this.cmd],
      ["subscriber", this.sub],
    ] as const) {
      conn.on("error", (err: Error) => {
        if (!down) options.logger.warn("redis connection error", { connection: name, error: err.message });
        down = true;
      });
      conn.on("ready", () => {
        if (down) options.logger.info("redis connection restored", { connection: name });
        if (down && conn === this.cmd) for (const listener of this.reconnected) listener();
        down = false;
      });
    }
    timeCommands(this.cmd);
    this.cmd.defineCommand("sbLease", { numberOfKeys: 1, lua: LEASE });
    this.cmd.defineCommand("sbRelease", { numberOfKeys: 1, lua: RELEASE });
    this.cmd.defineCommand("sbRenew", { lua: RENEW });
    this.cmd.defineCommand("sbTaskCas", { numberOfKeys: 4, lua: TASK_CAS });
    this.cmd.defineCommand("sbRestore", { numberOfKeys: 5, lua: RESTORE });
    this.cmd.defineCommand("sbCreate", { numberOfKeys: 5, lua: CREATE });
    this.cmd.defineCommand("sbGeneration", { numberOfKeys: 0, lua: GENERATION });
    this.cmd.defineCommand("sbConsume", { numberOfKeys: 1, lua: CONSUME });
    this.cmd.defineCommand("sbLedger", { numberOfKeys: 2, lua: LEDGER });
    this.cmd.defineCommand("sbRestarted", { numberOfKeys: 1, lua: RESTARTED });
    this.sub.on("message", (channel: string, message: string) => {
      for (const handler of this.handlers.get(channel) ?? []) {
        try {
          handler(message);
        } catch (err) {
          options.logger.error("redis message handler failed", { channel, error: String(err) });
        }
      }
    });
  }

  get scripts(): Scripts {
    return this.cmd as unknown as Scripts;
  }

  get ready(): boolean {
    return this.cmd.status === "ready";
  }

  async ping(): Promise<boolean> {
    try {
      this.roundTrips++;
      return (await this.cmd.ping()) === "PONG";
    } catch {
      return false;
    }
  }

  subscribe(channel: string, handler: (message: string) => void): () => void {
    const key = P + channel;
    let set = this.handlers.get(key);
    if (!set) {
      set = new Set();
      this.handlers.set(key, set);
      this.sub
        .subscribe(key)
        .catch((err: Error) => this.options.logger.warn("redis subscribe failed", { channel, error: err.message }));
    }
    set.add(handler);
    return () => {
      const current = this.handlers.get(key);
      if (!current?.delete(handler) || current.size > 0) return;
      this.handlers.delete(key);
      this.sub.unsubscribe(key).catch(() => undefined);
    };
  }

  /**
   * One pattern subscription (`changes:*`) for what would be a channel per tenant: a replica with
   * 10,000 tenants held 10,000 subscriptions. `handler` gets the channel without our prefix.
   */
  psubscribe(pattern: string, handler: (channel: string, message: string) => void): () => void {
    const key = P + pattern;
    const listener = (matched: string, channel: string, message: string) => {
      if (matched !== key) return;
      try {
        handler(channel.slice(P.length), message);
      } catch (err) {
        this.options.logger.error("redis message handler failed", { channel, error: String(err) });
      }
    };
    this.sub.on("pmessage", listener);
    this.sub
      .psubscribe(key)
      .catch((err: Error) => this.options.logger.warn("redis subscribe failed", { pattern, error: err.message }));
    return () => {
      this.sub.off("pmessage", listener);
      this.sub.punsubscribe(key).catch(() => undefined);
    };
  }

  async publish(channel: string, message: string): Promise<void> {
    this.roundTrips++;
    await this.cmd.publish(P + channel, message);
  }

  /** Takes or extends a lease for this replica; false when another replica holds it. */
  async lease(name: string, ms = this.leaseMs): Promise<boolean> {
    this.roundTrips++;
    return (await this.scripts.sbLease(P + name, this.replicaId, ms)) === 1;
  }

  async release(name: string): Promise<void> {
    this.roundTrips++;
    await this.scripts.sbRelease(P + name, this.replicaId);
  }

  async close(): Promise<void> {
    this.sub.disconnect();
    await this.cmd.quit().catch(() => this.cmd.disconnect());
  }
}

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

const taskKey = (id: string) => `${P}task:${id}`;
const leaseName = (id: string) => `tlease:${id}`;
const ownerKey = (owner: string) => `${P}owner:${owner}`;
/** A share's tasks (`quotaOf`) that were working when last looked at (pruned when counted): the per-tenant cap. */
const ownerWorkingKey = (quota: string) => `${P}owner-working:${quota}`;
const WORKING = `${P}working`;
const CHANGED = "task-changed";

/** What goes on the wire when a task changes: everything but the sealed work. */
function publicPart(record: TaskRecord): TaskRecord {
  const { sealed: _sealed, ...rest } = record;
  return rest;
}

/**
 * Tasks on Redis: any replica reads, updates, cancels and completes any task. A task's record
 * expires with its TTL; the replica following it holds a lease that it renews, and a task whose
 * lease lapsed (its replica died) is an orphan another replica adopts.
 */
export class RedisTaskStore implements TaskStore {
  readonly shared = true;
  private readonly listeners = new Set<(record: TaskRecord) => void>();
  private readonly unsubscribe: () => void;

  constructor(private readonly state: RedisState) {
    this.unsubscribe = state.subscribe(CHANGED, (message) => {
      const record = JSON.parse(message) as TaskRecord;
      for (const listener of this.listeners) listener(record);
    });
  }

  async create(record: TaskRecord, cap?: number): Promise<{ working: number } | undefined> {
    const expiresAt = Date.parse(record.createdAt) + record.ttlMs;
    const { taskId, owner } = record;
    const keys = [taskKey(taskId), ownerKey(owner), WORKING, P + leaseName(taskId), ownerWorkingKey(quotaOf(record))];
    const working = TERMINAL.has(record.status) ? "0" : "1";
    const { replicaId, leaseMs } = this.state;
    const args = [JSON.stringify(record), String(record.ttlMs), String(expiresAt), taskId, working, replicaId];
    args.push(String(leaseMs), String(Date.now()), String(cap ?? 0), taskKey(""));
    this.state.roundTrips++;
    const [created, count] = await this.state.scripts.sbCreate(...keys, ...args);
    return created === 1 ? undefined : { working: count };
  }

  async get(taskId: string): Promise<TaskRecord | undefined> {
    this.state.roundTrips++;
    const raw = await this.state.cmd.get(taskKey(taskId));
    return raw ? (JSON.parse(raw) as TaskRecord) : undefined;
  }

  async update(taskId: string, change: TaskChange): Promise<TaskRecord | undefined> {
    for (let attempt = 0; attempt < 8; attempt++) {
      this.state.roundTrips++;
      const raw = await this.state.cmd.get(taskKey(taskId));
      if (!raw) return undefined;
      const current = JSON.parse(raw) as TaskRecord;
      if (TERMINAL.has(current.status)) return current;
      const next: TaskRecord = { ...current, ...change, lastUpdatedAt: new Date().toISOString() };
      const ended = TERMINAL.has(next.status);
      // What a task keeps at rest (its sealed work, its caller's keys) goes when the task ends.
      if (ended) delete next.sealed;
      const text = JSON.stringify(next);
      this.state.roundTrips++;
      const written = await this.state.scripts.sbTaskCas(
        taskKey(taskId),
        WORKING,
        P + leaseName(taskId),
        P + CHANGED,
        raw,
        text,
        ended ? "1" : "0",
        JSON.stringify(publicPart(next)),
        taskId,
      );
      if (written === 1) return next;
    }
    throw new Error(`task ${taskId} is being changed by several replicas at once; try again`);
  }

  async list(owner: string, page: { cursor?: string; limit: number }): Promise<TaskPage> {
    const after = page.cursor === undefined ? undefined : decodeCursor(page.cursor);
    this.state.roundTrips++;
    // Tasks sharing the cursor's expiry come first in the range and are skipped by id; a few extra cover them.
    const flat = await this.state.cmd.zrangebyscore(
      ownerKey(owner),
      after ? after.expiresAt : Date.now(),
      "+inf",
      "WITHSCORES",
      "LIMIT",
      "0",
      String(page.limit + 1 + 16),
    );
    const entries: Array<[string, number]> = [];
    for (let i = 0; i < flat.length; i += 2)
      if (afterCursor(Number(flat[i + 1]), flat[i], after)) entries.push([flat[i], Number(flat[i + 1])]);
    const chosen = entries.slice(0, page.limit);
    if (chosen.length === 0) return { tasks: [] };
    this.state.roundTrips++;
    const raws = await this.state.cmd.mget(chosen.map(([id]) => taskKey(id)));
    const tasks = raws.flatMap((raw) => (raw ? [JSON.parse(raw) as TaskRecord] : [])).filter((r) => r.owner === owner);
    const [lastId, lastScore] = chosen.at(-1)!;
    return { tasks, ...(entries.length > page.limit ? { nextCursor: encodeCursor(lastScore, lastId) } : {}) };
  }

  async working(quota: string, cap: number): Promise<number> {
    const key = ownerWorkingKey(quota);
    this.state.roundTrips++;
    const [, ids] = (await this.state.cmd
      .multi()
      .zremrangebyscore(key, "-inf", String(Date.now()))
      .zrange(key, "0", "-1")
      .exec()) as [unknown, [unknown, string[]]];
    const candidates = ids?.[1] ?? [];
    // Below the cap the set (working tasks and some that ended since) is answer enough.
    if (candidates.length < cap) return candidates.length;
    this.state.roundTrips++;
    const raws = await this.state.cmd.mget(candidates.map(taskKey));
    const ended = candidates.filter((_, i) => {
      const raw = raws[i];
      return !raw || TERMINAL.has((JSON.parse(raw) as TaskRecord).status);
    });
    if (ended.length > 0) {
      this.state.roundTrips++;
      await this.state.cmd.zrem(key, ...ended);
    }
    return candidates.length - ended.length;
  }

  onChange(listener: (record: TaskRecord) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async claim(taskId: string): Promise<boolean> {
    return this.state.lease(leaseName(taskId));
  }

  async renew(taskIds: string[]): Promise<{ lost: string[]; missing: string[] }> {
    if (taskIds.length === 0) return { lost: [], missing: [] };
    this.state.roundTrips++;
    const keys = [...taskIds.map((id) => P + leaseName(id)), ...taskIds.map(taskKey)];
    const found = await this.state.scripts.sbRenew(
      keys.length,
      ...keys,
      this.state.replicaId,
      String(this.state.leaseMs),
    );
    return {
      lost: found.filter((i) => i > 0).map((i) => taskIds[i - 1]),
      missing: found.filter((i) => i < 0).map((i) => taskIds[-i - 1]),
    };
  }

  async restore(record: TaskRecord): Promise<boolean> {
    const expiresAt = Date.parse(record.createdAt) + record.ttlMs;
    const left = expiresAt - Date.now();
    if (left <= 0) return false;
    const working = TERMINAL.has(record.status) ? "0" : "1";
    const { taskId, owner } = record;
    const keys = [taskKey(taskId), ownerKey(owner), WORKING, P + leaseName(taskId), ownerWorkingKey(quotaOf(record))];
    const { replicaId, leaseMs } = this.state;
    const args = [JSON.stringify(record), String(left), String(expiresAt), taskId, working, replicaId];
    args.push(String(leaseMs), String(Date.now()));
    this.state.roundTrips++;
    return (await this.state.scripts.sbRestore(...keys, ...args)) === 1;
  }

  onReconnect(listener: () => void): () => void {
    this.state.reconnected.add(listener);
    return () => this.state.reconnected.delete(listener);
  }

  async release(taskId: string): Promise<void> {
    await this.state.release(leaseName(taskId));
  }

  /** Tasks still working whose follower's lease lapsed. */
  async orphans(): Promise<string[]> {
    const now = Date.now();
    this.state.roundTrips++;
    const [, ids] = (await this.state.cmd
      .multi()
      .zremrangebyscore(WORKING, "-inf", String(now))
      .zrange(WORKING, "0", "-1")
      .exec()) as [unknown, [unknown, string[]]];
    const working = ids?.[1] ?? [];
    if (working.length === 0) return [];
    const check = this.state.cmd.pipeline();
    for (const id of working) check.exists(P + leaseName(id));
    this.state.roundTrips++;
    const held = (await check.exec()) ?? [];
    return working.filter((_, i) => held[i]?.[1] === 0);
  }

  async close(): Promise<void> {
    this.unsubscribe();
    this.listeners.clear();
  }
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

/**
 * Each command's round trip (switchboard.redis.duration) and failure (switchboard.redis.errors), by
 * command name, when telemetry is on: the client's one sending method is wrapped.
 */
function timeCommands(client: Redis): void {
  const send = client.sendCommand.bind(client);
  client.sendCommand = ((command: { name: string; promise: Promise<unknown> }, ...rest: unknown[]) => {
    if (!telemetry.on) return (send as (...a: unknown[]) => unknown)(command, ...rest);
    const started = performance.now();
    const sent = (send as (...a: unknown[]) => unknown)(command, ...rest);
    const operation = command.name.toLowerCase();
    command.promise.then(
      () => telemetry.add("redis.duration", (performance.now() - started) / 1000, { operation }),
      () => telemetry.add("redis.errors", 1, { operation }),
    );
    return sent;
  }) as typeof client.sendCommand;
}
