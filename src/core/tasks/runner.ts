import { randomUUID } from "node:crypto";
import type { CallToolResult } from "@modelcontextprotocol/server";
import type { Logger } from "../base/logger.js";
import { type Scope, telemetry, type WorkSpan } from "../base/telemetry.js";
import type { Sealer } from "../base/seal.js";
import { callHost, runTool, verifyOf, type CallContext, type ToolDef, type ToolHost } from "../tools/tool.js";
import type { LostTaskAdvice } from "../service/service.js";
import { quotaOf, TERMINAL, type TaskChange, type TaskRecord, type TaskStore } from "./store.js";
import { ENV, settingDefault } from "../base/settings.js";

const DEFAULT_TASK_TTL_MS = 60 * 60_000;
const MAX_TASK_TTL_MS = 24 * 60 * 60_000;
/** Replicas' clocks differ a little: a deadline read on another replica gets this much more. */
const CLOCK_MARGIN_MS = 2_000;

/** What a task keeps at rest on shared state, sealed, so that another replica can go on with it. */
interface TaskWork {
  tool: string;
  input: Record<string, unknown>;
  /** Per-user mode: the caller's upstream keys, by service. */
  credentials?: Record<string, string>;
  /** Set once the upstream work has started: where a takeover resumes. */
  checkpoint?: Record<string, unknown>;
}

/** A task this replica follows: how to stop it, and everything needed to write it back whole. */
interface Followed {
  controller: AbortController;
  record: TaskRecord;
  work: TaskWork;
}

/** A new task past the owner's cap of working tasks. */
export class TaskLimitError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TaskLimitError";
  }
}

function taskLimit(working: number, cap: number, shared: boolean): TaskLimitError {
  telemetry.add("caps", 1, { setting: ENV.maxTasksPerTenant });
  const whose = shared ? "Keys no service has accepted yet (together)" : "These keys";
  return new TaskLimitError(
    `${whose} have ${working} tasks working, the limit (${ENV.maxTasksPerTenant} is ${cap}); ` +
      "wait for one to end or cancel one (tasks/cancel), then call again. Nothing was started or sent upstream.",
  );
}

/** A tool ready to run for a task's tenant. */
export interface TaskTool {
  def: ToolDef<any, any>;
  toolHost: ToolHost;
  logger: Logger;
  /** Keeps the tenant's runtime alive while the task runs; returns its release. */
  pin(): () => void;
  /** Tells the tenant's clients that the resource list changed. */
  resourcesChanged(): void;
}

interface StartTask {
  owner: string;
  /** Whose share of the cap it takes when not its owner's (TaskRecord.quota). */
  quota?: string;
  tool: TaskTool;
  input: Record<string, unknown>;
  ttlMs?: number;
  credentials?: Record<string, string>;
  /** The request that starts it: the task's span hangs under that request's. */
  scope?: Scope;
}

interface TaskRunnerOptions {
  pollIntervalMs: number;
  logger: Logger;
  /** Shared stores: encrypts each task's work at rest. */
  sealer?: Sealer;
  /** Shared stores: how long a claim on a task lasts without renewal. */
  leaseMs?: number;
  /** How long one upstream request may take (ENV.upstreamTimeoutMs): a request in flight lands by then or never. */
  requestDeadlineMs?: number;
  /** Working tasks one owner (tenant) may have at once (ENV.maxTasksPerTenant). */
  maxWorkingPerOwner?: number;
  /** Shared stores: finds the tool of an orphaned task, for its tenant (keys from the sealed work). */
  adopt?(owner: string, credentials: Record<string, string> | undefined, tool: string): TaskTool | undefined;
  /** What a tool's service says to do with upstream work whose task was lost (ServiceModule.lostTask). */
  lostTask?(tool: string): LostTaskAdvice | undefined;
}

const STOPPED = "The server stopped before the work ended; the upstream work goes on";

/**
 * Runs the work behind tasks in the background and keeps their records up to date: every progress
 * line becomes the status message, the tool's result ends the task. The work is the upstream's; a
 * task only follows it, so cancelling one stops the following, not the upstream work.
 *
 * On a shared store each task is claimed by the replica following it. A replica that dies stops
 * renewing its claims; another finds those tasks orphaned and adopts them: from the checkpoint
 * the tool left once the upstream work started, or by running a read-only tool again. A task that
 * spends or writes and had no checkpoint yet is failed with what to check, never started twice.
 */
export class TaskRunner {
  private readonly running = new Map<string, Followed>();

  /** Tasks working on this replica (the telemetry's switchboard.tasks.working). */
  get working(): number {
    return this.running.size;
  }
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly stopListening: () => void;
  private readonly stopReconnect?: () => void;
  private closing = false;

  constructor(
    readonly store: TaskStore,
    private readonly options: TaskRunnerOptions,
  ) {
    // A task cancelled (or ended) through another replica stops being followed here.
    this.stopListening = store.onChange((r) => {
      if (TERMINAL.has(r.status))
        this.running.get(r.taskId)?.controller.abort(new Error("task cancelled by the client"));
    });
    const leaseMs = options.leaseMs ?? settingDefault("leaseMs");
    if (store.renew) {
      const renewing = this.every(leaseMs / 3, () => this.renew());
      // Back from an outage, the store may have restarted empty: put our tasks back at once.
      this.stopReconnect = store.onReconnect?.(renewing);
    }
    if (store.orphans && options.adopt) this.every(leaseMs / 2, () => this.adoptOrphans());
  }

  /** Runs `fn` every `ms`, never twice at once; returns a way to run it now. */
  private every(ms: number, fn: () => Promise<unknown>): () => void {
    let busy = false;
    const run = () => {
      if (busy || this.closing) return;
      busy = true;
      fn()
        .catch((err) =>
          this.options.logger.debug("task upkeep failed", { error: err instanceof Error ? err.message : String(err) }),
        )
        .finally(() => (busy = false));
    };
    const timer = setInterval(run, ms);
    timer.unref();
    this.timers.push(timer);
    return run;
  }

  /**
   * Refuses a new task to an owner that has as many working as allowed: each one is a follower
   * here (~80 KB) and upstream polls until it ends. Throws TaskLimitError.
   */
  async admit(owner: string, quota = owner): Promise<void> {
    const cap = this.options.maxWorkingPerOwner;
    if (cap === undefined) return;
    const working = await this.store.working(quota, cap);
    if (working >= cap) throw taskLimit(working, cap, quota !== owner);
  }

  /**
   * Starts a task; the caller checked `admit` first (a cheap early refusal). The store takes the
   * owner's slot atomically with the write: past the cap, throws TaskLimitError and starts nothing.
   */
  async start(spec: StartTask): Promise<TaskRecord> {
    const now = new Date().toISOString();
    const ttlMs = Math.min(spec.ttlMs ?? DEFAULT_TASK_TTL_MS, MAX_TASK_TTL_MS);
    const def = spec.tool.def;
    const work: TaskWork = {
      tool: def.name,
      input: spec.input,
      ...(spec.credentials ? { credentials: spec.credentials } : {}),
    };
    const taskId = randomUUID();
    // The task's span hangs under the request's; its traceparent goes into the record for a takeover.
    const span = telemetry.begin(`task ${def.name}`, { "switchboard.task.id": taskId }, { within: spec.scope });
    const record: TaskRecord = {
      taskId,
      owner: spec.owner,
      ...(spec.quota && spec.quota !== spec.owner ? { quota: spec.quota } : {}),
      tool: def.name,
      status: "working",
      statusMessage: `${def.title}: started`,
      createdAt: now,
      lastUpdatedAt: now,
      ttlMs,
      pollIntervalMs: this.options.pollIntervalMs,
      ...this.sealed(work, taskId),
      ...(span.traceparent ? { traceparent: span.traceparent } : {}),
    };
    // The task must exist before its handle is returned (a tasks/get right after must find it).
    const cap = this.options.maxWorkingPerOwner;
    const full = await this.store.create(record, cap).catch((err: unknown) => {
      span.end(undefined, err);
      throw err;
    });
    if (full) {
      span.end({ "switchboard.task.status": "refused" });
      throw taskLimit(full.working, cap!, quotaOf(record) !== record.owner);
    }
    this.options.logger.info("task started", { taskId, tool: def.name });
    this.follow(record, work, spec.tool, undefined, span);
    return record;
  }

  private sealed(work: TaskWork, taskId: string): Pick<TaskRecord, "sealed"> {
    return this.store.shared && this.options.sealer ? { sealed: this.options.sealer.seal(work, taskId) } : {};
  }

  /**
   * Runs (or resumes) the tool in the background until it ends, the TTL passes or the task is
   * cancelled. Nobody can be asked anything there; progress becomes the task's status line.
   */
  private follow(
    record: TaskRecord,
    work: TaskWork,
    tool: TaskTool,
    resumeFrom: Record<string, unknown> | undefined,
    span: WorkSpan,
  ): void {
    const { taskId } = record;
    const controller = new AbortController();
    const followed: Followed = { controller, record, work };
    this.running.set(taskId, followed);
    // Every change is applied to the record this replica holds too, so a store that lost it gets it back whole.
    const change = async (update: TaskChange) => {
      followed.record = { ...followed.record, ...update };
      if (!(await this.store.update(taskId, update))) await this.writeBack(followed);
    };
    const unpin = tool.pin();
    const remaining = Date.parse(record.createdAt) + record.ttlMs - Date.now();
    const expiry = setTimeout(() => controller.abort(new Error("task expired")), Math.max(0, remaining));
    expiry.unref();
    const call = callHost(tool.toolHost, tool.def, work.input);
    const ctx: CallContext = {
      signal: controller.signal,
      progress: async ({ message }) => {
        await change({ statusMessage: call.egress.text(message) }).catch(() => undefined);
      },
      logger: tool.logger,
      secret: (value) => call.egress.addSupplied(value),
      confirm: async () => "unsupported",
      resourcesChanged: () => tool.resourcesChanged(),
      checkpoint: async (state) => {
        if (!this.store.shared) return;
        work.checkpoint = state;
        await change(this.sealed(work, taskId)).catch((err) =>
          this.options.logger.warn("task checkpoint not saved", { taskId, error: String(err) }),
        );
      },
    };
    let ended: string = "completed";
    span.adopt(controller.signal);
    void runTool(tool.def, work.input, ctx, call, { beforeDone: true, resumeFrom })
      .then(async (result) => {
        if (controller.signal.aborted) return void (ended = "stopped");
        if (result.isError) ended = "tool_error";
        const line = result.content.find((c) => c.type === "text");
        const summary = line && "text" in line ? line.text.split("\n")[0] : undefined;
        await this.finish(followed.record, { status: "completed", result, statusMessage: summary });
      })
      .catch((err) => {
        ended = "failed";
        this.options.logger.error("task ended without a result", { taskId, error: String(err) });
      })
      .finally(() => {
        span.end({ "switchboard.task.status": ended });
        clearTimeout(expiry);
        unpin();
        if (this.running.get(taskId) === followed) this.running.delete(taskId);
      });
  }

  /**
   * Puts a working task the store lost (Redis restarted without persistence) back whole: its
   * record as this replica knows it and its sealed work, in the working set, leased to this
   * replica, so clients find it and another replica can adopt it if this one dies.
   */
  private async writeBack(followed: Followed): Promise<void> {
    const { record, work } = followed;
    const restored: TaskRecord = {
      ...record,
      ...this.sealed(work, record.taskId),
      lastUpdatedAt: new Date().toISOString(),
    };
    if (await this.store.restore?.(restored))
      this.options.logger.info("task record lost by the store; written back", { taskId: record.taskId });
  }

  /**
   * Writes a task's end. A shared store that lost the record (Redis restarted without persistence)
   * gets it back from what this replica knows, so the client still finds its result.
   */
  private async finish(record: TaskRecord, change: Partial<TaskRecord>): Promise<void> {
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        const updated = await this.store.update(record.taskId, change);
        if (updated) return;
        const { sealed: _sealed, ...rest } = record;
        const ended = { ...rest, ...change, lastUpdatedAt: new Date().toISOString() } as TaskRecord;
        if (this.store.restore) await this.store.restore(ended);
        else await this.store.create(ended);
        return;
      } catch (err) {
        this.options.logger.warn("task result not saved yet; retrying", {
          taskId: record.taskId,
          error: err instanceof Error ? err.message : String(err),
        });
        await new Promise((r) => setTimeout(r, 500 * (attempt + 1)));
      }
    }
  }

  /**
   * Keeps this replica's claims. A task another replica adopted meanwhile (this process was
   * paused past its lease) is no longer followed here: its upstream polls would be duplicates.
   */
  private async renew(): Promise<void> {
    const { lost, missing } = await this.store.renew!([...this.running.keys()]);
    for (const taskId of lost) {
      this.options.logger.info("task followed by another replica now; stopped following it here", { taskId });
      this.running.get(taskId)?.controller.abort(new Error("task taken over by another replica"));
    }
    for (const taskId of missing) {
      const followed = this.running.get(taskId);
      if (followed && !lost.includes(taskId)) await this.writeBack(followed);
    }
  }

  /** Adopts working tasks whose replica stopped following them. */
  private async adoptOrphans(): Promise<void> {
    for (const taskId of await this.store.orphans!()) {
      if (this.closing || this.running.has(taskId)) continue;
      if (!(await this.store.claim!(taskId))) continue;
      await this.adopt(taskId).catch((err) =>
        this.options.logger.error("task takeover failed", { taskId, error: String(err) }),
      );
    }
  }

  private async adopt(taskId: string): Promise<void> {
    const record = await this.store.get(taskId);
    if (!record || TERMINAL.has(record.status)) return;
    const fail = (message: string) =>
      this.store.update(taskId, { status: "failed", error: { code: -32603, message } }).then(() => undefined);
    let work: TaskWork;
    try {
      work = this.options.sealer!.open<TaskWork>(record.sealed ?? "", taskId);
    } catch {
      return fail(
        `This task's replica stopped and its state could not be opened here (is ${ENV.stateKey} the same on every ` +
          `replica?). The upstream work goes on${this.followWith(record.tool)}.`,
      );
    }
    const tool = this.options.adopt!(record.owner, work.credentials, work.tool);
    if (!tool)
      return fail(
        `This task's replica stopped, and no replica here offers ${work.tool} any more. The upstream work goes on.`,
      );
    const { def } = tool;
    const canResume = work.checkpoint !== undefined && def.longRunning?.resume !== undefined;
    if (!canResume && def.kind !== "read") {
      // Its request may be in flight still, and land after a look that finds nothing: wait out its deadline first.
      const deadline =
        Date.parse(record.createdAt) +
        (this.options.requestDeadlineMs ?? settingDefault("upstreamTimeoutMs")) +
        CLOCK_MARGIN_MS;
      if (Date.now() < deadline) {
        const line =
          `${def.title}: its replica stopped while the request may still be reaching the service; ` +
          `nothing is sent again. Known by ${new Date(deadline).toISOString()}.`;
        if (record.statusMessage !== line) await this.store.update(taskId, { statusMessage: line });
        await this.store.release?.(taskId);
        return;
      }
      const check = verifyOf(def, work.input, tool.toolHost) ?? "read the service's state";
      return fail(
        `The replica following this task stopped before the service confirmed that ${def.name} started, ` +
          "and its request may have reached the service: the outcome is unknown. It changes state or spends " +
          `credits, so it was not sent again. Check first: ${check}. Only if that finds nothing did it not happen.`,
      );
    }
    this.options.logger.info("task taken over", { taskId, tool: def.name, from: canResume ? "checkpoint" : "start" });
    // Its span continues the trace of the replica that stopped, linked to that replica's span.
    const span = telemetry.begin(
      `task ${def.name}`,
      { "switchboard.task.id": taskId, "switchboard.task.takeover": true },
      record.traceparent ? { continues: record.traceparent } : "none",
    );
    await this.store.update(taskId, {
      statusMessage: `${def.title}: taken over by another replica, still following`,
      ...(span.traceparent ? { traceparent: span.traceparent } : {}),
    });
    const followed = span.traceparent ? { ...record, traceparent: span.traceparent } : record;
    this.follow(followed, work, tool, canResume ? work.checkpoint : undefined, span);
  }

  /** A task that ended before any work began (a refused spend asked for as a 2025 task). */
  async settled(owner: string, def: ToolDef<any, any>, result: CallToolResult): Promise<TaskRecord> {
    const now = new Date().toISOString();
    const record: TaskRecord = {
      taskId: randomUUID(),
      owner,
      tool: def.name,
      status: "completed",
      result,
      createdAt: now,
      lastUpdatedAt: now,
      ttlMs: DEFAULT_TASK_TTL_MS,
      pollIntervalMs: this.options.pollIntervalMs,
    };
    await this.store.create(record);
    return record;
  }

  /** Cancels a task of this owner; undefined when there is no such task. */
  async cancel(taskId: string, owner: string): Promise<TaskRecord | undefined> {
    const record = await this.store.get(taskId);
    if (!record || record.owner !== owner) return undefined;
    const updated = TERMINAL.has(record.status)
      ? record
      : await this.store.update(taskId, {
          status: "cancelled",
          statusMessage: "Cancelled by the client; the upstream work itself goes on.",
        });
    this.running.get(taskId)?.controller.abort(new Error("task cancelled by the client"));
    return updated;
  }

  /** The task of this owner, or undefined (an unknown id and another owner's id look the same). */
  async get(taskId: string, owner: string): Promise<TaskRecord | undefined> {
    const record = await this.store.get(taskId);
    return record && record.owner === owner ? record : undefined;
  }

  /**
   * Resolves when the task ends (for 2025's blocking tasks/result). Change events can be missed
   * (a Redis restart drops pub/sub), so the store is also read again every few seconds. A record
   * missing before its TTL passed is not an end: Redis lost it, and its follower writes it back.
   */
  async whenTerminal(found: TaskRecord, signal: AbortSignal): Promise<TaskRecord | undefined> {
    const { taskId } = found;
    const expiresAt = Date.parse(found.createdAt) + found.ttlMs;
    return new Promise((resolve, reject) => {
      const check = () =>
        void this.store.get(taskId).then(
          (r) => {
            if (r ? TERMINAL.has(r.status) : Date.now() >= expiresAt) finish(() => resolve(r));
          },
          () => undefined,
        );
      const stop = this.store.onChange((r) => {
        if (r.taskId === taskId && TERMINAL.has(r.status)) finish(() => resolve(r));
      });
      const recheck = setInterval(check, 5000);
      const onAbort = () => finish(() => reject(signal.reason ?? new Error("aborted")));
      const finish = (fn: () => void) => {
        stop();
        clearInterval(recheck);
        signal.removeEventListener("abort", onAbort);
        fn();
      };
      signal.addEventListener("abort", onAbort, { once: true });
      check();
    });
  }

  /**
   * Shutdown. On a shared store the tasks this replica follows are handed over: it lets go of
   * them and another replica adopts them. In process, they end as failed, saying the work goes on.
   */
  private stoppedMessage(tool: string): string {
    return `${STOPPED}${this.followWith(tool, "again ")}.`;
  }

  /** ": follow it with <tool>" when the tool's service names one. */
  private followWith(tool: string, again = ""): string {
    const advice = this.options.lostTask?.(tool);
    return advice ? `: follow it ${again}with ${advice.follow}` : "";
  }

  async stopAll(): Promise<void> {
    this.closing = true;
    for (const timer of this.timers) clearInterval(timer);
    this.stopListening();
    this.stopReconnect?.();
    for (const [taskId, { controller, record }] of this.running) {
      controller.abort(new Error("server shutting down"));
      if (this.store.release) {
        await this.store.release(taskId).catch(() => undefined);
        continue;
      }
      await this.store
        .update(taskId, { status: "failed", error: { code: -32603, message: this.stoppedMessage(record.tool) } })
        .catch(() => undefined);
    }
    this.running.clear();
  }
}
