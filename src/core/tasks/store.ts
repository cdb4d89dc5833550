import type { CallToolResult } from "@modelcontextprotocol/server";

type TaskStatus = "working" | "input_required" | "completed" | "failed" | "cancelled";

/**
 * One task, as stored. Nothing in it refers to the request or session that created it, so any
 * server instance (a fresh per-request one, another replica) can answer for it.
 */
export interface TaskRecord {
  taskId: string;
  /** Who may see it: the tenant behind the credentials ("local" in single-account mode). */
  owner: string;
  /**
   * Whose share of the cap of working tasks it takes, when not its owner's: the one share of every
   * tenant whose keys no upstream accepted yet.
   */
  quota?: string;
  tool: string;
  status: TaskStatus;
  statusMessage?: string;
  createdAt: string;
  lastUpdatedAt: string;
  ttlMs: number;
  pollIntervalMs: number;
  /** The tool's result once completed (an isError result counts as completed on 2026-07-28). */
  result?: CallToolResult;
  /** A JSON-RPC error, for a task that failed outside the tool (rare: the server stopped, say). */
  error?: { code: number; message: string };
  /**
   * Shared stores only: what another replica needs to take the task over (the tool's input, the
   * caller's keys, how far the work got), encrypted (AES-256-GCM, ENV.stateKey). Erased when the task ends.
   */
  sealed?: string;
  /**
   * Telemetry on: the W3C traceparent of the span of the replica following the task (never sent to
   * clients). A replica that takes the task over hangs its own span under it, linked.
   */
  traceparent?: string;
}

export type TaskChange = Partial<
  Pick<TaskRecord, "status" | "statusMessage" | "result" | "error" | "sealed" | "traceparent">
>;

export const TERMINAL: ReadonlySet<TaskStatus> = new Set(["completed", "failed", "cancelled"]);

/** The share of the cap of working tasks a task takes: its `quota`, else its owner's. */
export const quotaOf = (record: Pick<TaskRecord, "owner" | "quota">): string => record.quota ?? record.owner;

/** One page of an owner's tasks, in the order they expire; `nextCursor` asks for the next. */
export interface TaskPage {
  tasks: TaskRecord[];
  nextCursor?: string;
}

/** A tasks/list cursor this server did not hand out (or from another era of the store). */
export class BadCursorError extends Error {}

/** Where a page ended: the last task's expiry and id (ties on expiry go by id). */
export function encodeCursor(expiresAt: number, taskId: string): string {
  return Buffer.from(JSON.stringify([expiresAt, taskId])).toString("base64url");
}

export function decodeCursor(cursor: string): { expiresAt: number; taskId: string } {
  try {
    const [expiresAt, taskId] = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as [unknown, unknown];
    if (typeof expiresAt === "number" && typeof taskId === "string") return { expiresAt, taskId };
  } catch {
    // fall through
  }
  throw new BadCursorError(
    "Invalid cursor: pass the nextCursor of the previous tasks/list answer, or none for the first page",
  );
}

const expiresAtOf = (r: TaskRecord) => Date.parse(r.createdAt) + r.ttlMs;

/** After the cursor's position in (expiry, id) order. */
export const afterCursor = (
  expiresAt: number,
  taskId: string,
  cursor: { expiresAt: number; taskId: string } | undefined,
) => !cursor || expiresAt > cursor.expiresAt || (expiresAt === cursor.expiresAt && taskId > cursor.taskId);

/** Where tasks live: in process by default, a shared store for replicas (the hosted mode). */
export interface TaskStore {
  /**
   * Writes a new task. With `cap`, a working task is written only while its share (`quotaOf`) has
   * fewer working tasks, in one atomic step across replicas; else that count is answered and nothing written.
   */
  create(record: TaskRecord, cap?: number): Promise<{ working: number } | undefined>;
  get(taskId: string): Promise<TaskRecord | undefined>;
  /** Applies a change unless the task is already terminal; returns the task as it now is. */
  update(taskId: string, change: TaskChange): Promise<TaskRecord | undefined>;
  /** The owner's tasks, a page of at most `limit` at a time (tasks/list). */
  list(owner: string, page: { cursor?: string; limit: number }): Promise<TaskPage>;
  /**
   * How many tasks of this share of the cap (`quotaOf`: the owner's, or the one of unaccepted keys)
   * are still working: exact from `cap` on; below it, a count that may include tasks that ended meanwhile.
   */
  working(quota: string, cap: number): Promise<number>;
  /** Calls `listener` whenever a task changes (its status line, its end), on whichever replica. */
  onChange(listener: (record: TaskRecord) => void): () => void;
  close(): Promise<void>;
  /** Shared across replicas: the leases below exist, and tasks are sealed for takeover. */
  readonly shared?: boolean;
  /** Takes (or keeps) this replica's claim on following a task; false when another replica holds it. */
  claim?(taskId: string): Promise<boolean>;
  /**
   * Extends this replica's claims (takes a lapsed one back if nobody adopted it meanwhile) and
   * answers the tasks another replica follows now (this one paused past its lease, say) and those
   * whose record the store lost.
   */
  renew?(taskIds: string[]): Promise<{ lost: string[]; missing: string[] }>;
  /**
   * Writes back a record the store lost (Redis restarted without persistence), only while it is
   * still missing; true when written. The replica following the task holds the whole record.
   */
  restore?(record: TaskRecord): Promise<boolean>;
  /** Calls `listener` when the store is reachable again after an outage (it may have come back empty). */
  onReconnect?(listener: () => void): () => void;
  /** Lets go of a task (a draining replica): another replica adopts it at its next look. */
  release?(taskId: string): Promise<void>;
  /** Working tasks nobody follows any more (their replica died or let go). */
  orphans?(): Promise<string[]>;
}

/** The embedded store: a map with expiry at each task's TTL. */
export class MemoryTaskStore implements TaskStore {
  private readonly tasks = new Map<string, { record: TaskRecord; expiry: NodeJS.Timeout }>();
  private readonly listeners = new Set<(record: TaskRecord) => void>();

  async create(record: TaskRecord, cap?: number): Promise<{ working: number } | undefined> {
    if (cap !== undefined && !TERMINAL.has(record.status)) {
      const working = await this.working(quotaOf(record), cap);
      if (working >= cap) return { working };
    }
    const expiry = setTimeout(() => this.tasks.delete(record.taskId), record.ttlMs);
    expiry.unref();
    this.tasks.set(record.taskId, { record, expiry });
  }

  async get(taskId: string): Promise<TaskRecord | undefined> {
    return this.tasks.get(taskId)?.record;
  }

  async update(taskId: string, change: TaskChange): Promise<TaskRecord | undefined> {
    const entry = this.tasks.get(taskId);
    if (!entry) return undefined;
    if (TERMINAL.has(entry.record.status)) return entry.record;
    entry.record = { ...entry.record, ...change, lastUpdatedAt: new Date().toISOString() };
    for (const listener of this.listeners) listener(entry.record);
    return entry.record;
  }

  async list(owner: string, page: { cursor?: string; limit: number }): Promise<TaskPage> {
    const after = page.cursor === undefined ? undefined : decodeCursor(page.cursor);
    const mine = [...this.tasks.values()]
      .map((e) => e.record)
      .filter((r) => r.owner === owner && afterCursor(expiresAtOf(r), r.taskId, after))
      .sort((a, b) => expiresAtOf(a) - expiresAtOf(b) || (a.taskId < b.taskId ? -1 : 1));
    const tasks = mine.slice(0, page.limit);
    const last = tasks.at(-1);
    return {
      tasks,
      ...(mine.length > page.limit && last ? { nextCursor: encodeCursor(expiresAtOf(last), last.taskId) } : {}),
    };
  }

  async working(quota: string, _cap: number): Promise<number> {
    let n = 0;
    for (const { record } of this.tasks.values()) if (quotaOf(record) === quota && !TERMINAL.has(record.status)) n++;
    return n;
  }

  onChange(listener: (record: TaskRecord) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async close(): Promise<void> {
    for (const { expiry } of this.tasks.values()) clearTimeout(expiry);
    this.tasks.clear();
  }
}
