import type { CallToolResult } from "@modelcontextprotocol/server";
import type { Logger } from "../base/logger.js";
import type { Sealer } from "../base/seal.js";
import { telemetry } from "../base/telemetry.js";
import { NeedsInput, runBefore, runTool, verifyOf, type CallContext, type ToolDef, type ToolHost } from "./tool.js";
import { UpstreamError } from "../upstream/upstream.js";

/**
 * No retry pays twice. A client that gives up on a long call (its own timeout) and calls again, or
 * a model that repeats itself, must not spend the credits a second time. A spending call is keyed
 * by its caller (tenant), tool and arguments. While the first such call runs, and for a window
 * after it ended without its caller getting the answer (cancelled: the client's timeout, a
 * disconnect), the same call gets the first one's outcome: for work it started and follows (a
 * build with `wait: true`), a fresh follow of that same work. A call whose caller got its answer
 * leaves no record: the same call after it is a deliberate new one. `repeat: true` spends again
 * on purpose. The records live in the process, or on Redis across replicas (ENV.stateUrl).
 */

/** Where the records live: opaque strings with a lifetime. */
export interface RepeatStore {
  /** Stores the value only if the key has none; true when this call stored it. */
  claim(key: string, value: string, ttlMs: number): Promise<boolean>;
  get(key: string): Promise<string | undefined>;
  set(key: string, value: string, ttlMs: number): Promise<void>;
  delete(key: string): Promise<void>;
}

/** At most this many records in one process (a record lives for the window at most). */
const MAX_MEMORY_RECORDS = 10_000;

export class MemoryRepeatStore implements RepeatStore {
  private readonly records = new Map<string, { value: string; until: number }>();

  // Check and set without an await between them: two calls at once must not both claim.
  async claim(key: string, value: string, ttlMs: number): Promise<boolean> {
    if (this.current(key) !== undefined) return false;
    this.put(key, value, ttlMs);
    return true;
  }

  async get(key: string): Promise<string | undefined> {
    return this.current(key);
  }

  async set(key: string, value: string, ttlMs: number): Promise<void> {
    this.put(key, value, ttlMs);
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

  async delete(key: string): Promise<void> {
    this.records.delete(key);
  }
}

interface CallRecord {
  /** When the first call began (ISO). */
  at: string;
  ended: boolean;
  /** Work the first call started upstream and how to follow it (the tool's `resume` reads it). */
  checkpoint?: Record<string, unknown>;
  result?: CallToolResult;
}

/** How long an ended call's outcome stays for the identical calls that came while it ran and still wait. */
const OUTCOME_LINGER_MS = 30_000;
const outcomeKey = (key: string) => `${key}:outcome`;

/** How often a call that is still running renews its record, as a fraction of the window. */
const RENEW_FRACTION = 0.5;
/** How often a repeated call looks whether the first one has moved on. */
const LOOK_MS = 250;

/** One spending call on its way: the tool, its input without `repeat`, its record's key. */
interface Call {
  def: ToolDef<any, any>;
  input: Record<string, unknown>;
  key: string;
  ctx: CallContext;
  host: ToolHost;
}

export class SpendOnce {
  constructor(
    private readonly store: RepeatStore,
    private readonly windowMs: number,
    private readonly logger: Logger,
    /** Shared stores: records are sealed at rest (results can hold a caller's data). */
    private readonly sealer?: Sealer,
    /** Keys records by an HMAC, so a key reveals nothing of the arguments. */
    private readonly fingerprint: (text: string) => string = (t) => t,
  ) {}

  /**
   * Runs a spending tool once per caller, tool and arguments within the window. `input` is the
   * validated input with `repeat` removed; `repeat` asks for a new spend.
   */
  async run(
    def: ToolDef<any, any>,
    input: Record<string, unknown>,
    repeat: boolean,
    owner: string,
    ctx: CallContext,
    host: ToolHost,
  ): Promise<CallToolResult> {
    if (repeat) return runTool(def, input, ctx, host);
    const key = this.fingerprint(JSON.stringify([owner, def.name, canonical(input)]));
    const call: Call = { def, input, key, ctx, host };
    // Twice at most: a first call that ended having spent nothing leaves no record to wait for.
    for (let attempt = 0; attempt < 2; attempt++) {
      let claimed = false;
      try {
        let prior = await this.read(call.key);
        if (!prior) {
          const refused = await runBefore(def, input, ctx, host);
          if (refused) return refused;
          const record = this.write(call.key, { at: new Date().toISOString(), ended: false });
          claimed = await this.store.claim(call.key, record, this.windowMs);
          if (!claimed) prior = await this.read(call.key);
        }
        if (prior) {
          const replayed = await this.replay(call, prior);
          if (replayed) return replayed;
          continue;
        }
      } catch (err) {
        if (claimed || err instanceof NeedsInput) throw err;
        const error = err instanceof Error ? err.message : String(err);
        this.logger.warn("repeat check unavailable", { tool: def.name, error });
        return unavailable();
      }
      if (claimed) return this.first(call);
    }
    return runTool(def, input, ctx, host);
  }

  /** The first call: runs, leaves the checkpoint when its work started, and its outcome at the end. */
  private async first({ def, input, key, ctx, host }: Call): Promise<CallToolResult> {
    const record: CallRecord = { at: new Date().toISOString(), ended: false };
    const warn = (what: string) => (err: unknown) => this.logger.warn(what, { tool: def.name, error: String(err) });
    const save = () =>
      this.store.set(key, this.write(key, record), this.windowMs).catch(warn("repeat record not saved"));
    const renew = setInterval(() => void save(), Math.max(1000, this.windowMs * RENEW_FRACTION));
    renew.unref();
    let error: unknown;
    const watched: ToolDef<any, any> = {
      ...def,
      run: async (i, c) => {
        try {
          return await def.run(i, c);
        } catch (err) {
          error = err;
          throw err;
        }
      },
    };
    const checkpoint = async (state: Record<string, unknown>) => {
      await ctx.checkpoint?.(state);
      record.checkpoint = state;
      await save();
    };
    try {
      const result = await runTool(watched, input, { ...ctx, checkpoint }, host, true);
      clearInterval(renew);
      if (!ctx.signal.aborted || (!record.checkpoint && nothingSpent(error))) {
        // Its caller has the answer (or nothing was spent): the same call from now on is a new one.
        // Calls that came while it ran and still wait get this outcome.
        const outcome = this.write(outcomeKey(key), { ...record, ended: true, result });
        await this.store.set(outcomeKey(key), outcome, OUTCOME_LINGER_MS).catch(() => undefined);
        await this.store.delete(key).catch(warn("repeat record not removed"));
        return result;
      }
      // Its caller gave up (a timeout, a disconnect): a retry within the window gets this outcome.
      record.ended = true;
      if (!record.checkpoint) record.result = cancelledInFlight(def, input, record.at, host);
      await save();
      return result;
    } finally {
      clearInterval(renew);
    }
  }

  /** The same call again: the first one's outcome, once it has one, without spending. */
  private async replay(call: Call, prior: CallRecord): Promise<CallToolResult | undefined> {
    const { def, input, key, ctx, host } = call;
    let record: CallRecord | undefined = prior;
    // The first call has not started its work or ended yet: wait for it, as long as our caller can.
    const deadline = ctx.blockingUntil ?? Number.POSITIVE_INFINITY;
    while (record && !record.ended && !record.checkpoint && !ctx.signal.aborted && Date.now() + LOOK_MS < deadline) {
      await sleep(LOOK_MS, ctx.signal);
      record = await this.read(key);
    }
    // Ended while we waited, its caller answered: the same outcome for us (none: it spent nothing, go on).
    if (!record) record = await this.read(outcomeKey(key), true);
    if (!record) return undefined;
    const state = record.checkpoint ? "following" : record.ended ? "ended" : "running";
    const fields = { tool: def.name, first: record.at, state };
    this.logger.info("repeated spending call answered without spending", fields);
    telemetry.add("repeats", 1, { tool: def.name });
    const head =
      `Same call as one made at ${record.at} that had not reached its caller: nothing was spent again ` +
      "(repeat: true spends again on purpose).";
    if (record.checkpoint && def.longRunning?.resume) {
      const followed = await runTool(def, input, ctx, host, true, record.checkpoint);
      return note(followed, `${head} Following the work it started:`);
    }
    if (record.ended && record.result) return note(record.result, `${head} Its outcome:`);
    const text = `${head} It is still running and its outcome is not known yet: call again in a minute to get it.`;
    return { content: [{ type: "text", text }], isError: true };
  }

  private async read(key: string, quiet = false): Promise<CallRecord | undefined> {
    const raw = quiet ? await this.store.get(key).catch(() => undefined) : await this.store.get(key);
    if (raw === undefined) return undefined;
    return this.sealer ? this.sealer.open<CallRecord>(raw, key) : (JSON.parse(raw) as CallRecord);
  }

  private write(key: string, record: CallRecord): string {
    return this.sealer ? this.sealer.seal(record, key) : JSON.stringify(record);
  }
}

/** Splits the `repeat` flag from a spending tool's validated input. */
export function takeRepeat(input: Record<string, unknown>): { input: Record<string, unknown>; repeat: boolean } {
  const { repeat, ...rest } = input;
  return { input: rest, repeat: repeat === true };
}

/** A failure that certainly spent nothing: the upstream refused it (4xx), or it never left. */
function nothingSpent(err: unknown): boolean {
  if (!(err instanceof UpstreamError) || err.outcomeUnknown) return false;
  return err.code === "MISSING_CREDENTIALS" || (err.status !== undefined && err.status < 500);
}

function unavailable(): CallToolResult {
  const text =
    "The state store is unavailable, so this call could not be checked against the same call made just before: " +
    "nothing was sent or spent. This is transient and retrying is safe: call the tool again in a few seconds";
  return { content: [{ type: "text", text }], isError: true };
}

function cancelledInFlight(
  def: ToolDef<any, any>,
  input: Record<string, unknown>,
  at: string,
  host: ToolHost,
): CallToolResult {
  const check = verifyOf(def, input, host) ?? "read the resource again";
  const text =
    `The same call made at ${at} was cancelled before its outcome was known: it may or may not have spent. ` +
    `Check first (${check}); if it did not take effect, call again with repeat: true.`;
  return { content: [{ type: "text", text }], isError: true };
}

function note(result: CallToolResult, head: string): CallToolResult {
  const [first, ...rest] = result.content;
  const content =
    first?.type === "text"
      ? [{ ...first, text: `${head}\n${first.text}` }, ...rest]
      : [{ type: "text" as const, text: head }, ...result.content];
  return { ...result, content };
}

/** JSON with keys in a fixed order, so the same arguments always give the same key. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (!value || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
      .map((k) => [k, canonical((value as Record<string, unknown>)[k])]),
  );
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}
