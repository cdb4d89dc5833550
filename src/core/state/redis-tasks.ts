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
import { KEY_PREFIX as P, type RedisState } from "./redis-connection.js";

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
