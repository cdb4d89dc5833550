// The Lua scripts of the Redis state, each one atomic step on the server, and the commands they become.
import type { Redis } from "ioredis";

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
export interface Scripts {
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

/** Makes each script a command of `cmd` (ioredis sends it by its SHA after the first call). */
export function defineScripts(cmd: Redis): void {
  cmd.defineCommand("sbLease", { numberOfKeys: 1, lua: LEASE });
  cmd.defineCommand("sbRelease", { numberOfKeys: 1, lua: RELEASE });
  cmd.defineCommand("sbRenew", { lua: RENEW });
  cmd.defineCommand("sbTaskCas", { numberOfKeys: 4, lua: TASK_CAS });
  cmd.defineCommand("sbRestore", { numberOfKeys: 5, lua: RESTORE });
  cmd.defineCommand("sbCreate", { numberOfKeys: 5, lua: CREATE });
  cmd.defineCommand("sbGeneration", { numberOfKeys: 0, lua: GENERATION });
  cmd.defineCommand("sbConsume", { numberOfKeys: 1, lua: CONSUME });
  cmd.defineCommand("sbLedger", { numberOfKeys: 2, lua: LEDGER });
  cmd.defineCommand("sbRestarted", { numberOfKeys: 1, lua: RESTARTED });
}
