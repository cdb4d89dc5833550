import type { CallToolResult } from "@modelcontextprotocol/server";
import type { Logger } from "../base/logger.js";
import type { Sealer } from "../base/seal.js";
import { telemetry } from "../base/telemetry.js";
import { UpstreamError } from "../upstream/upstream.js";
import type { LedgerStore, Stored } from "./ledger-store.js";
import { NeedsInput, runBefore, runTool, verifyOf, type CallContext, type ToolDef, type ToolHost } from "./tool.js";

/**
 * The spend ledger: one record per spending call (caller, tool, arguments), written before the
 * upstream request and kept until its outcome is known. One rule: when the server cannot prove
 * what happened to a paid request, it never sends it again on its own; it checks, then asks.
 *
 * States: `pending` (written before the request; its caller renews it while it runs), `started`
 * (the upstream accepted the work and this is how to follow it), `settled` (its outcome, kept for
 * the window whether or not its caller got it), `unknown` (its caller died or gave up before the
 * outcome, or the store may have lost a write since: another generation). A repeat within the
 * window gets the first call's outcome, follows its work, or (unknown) runs the tool's read-only
 * `find` and says what it found; `repeat: true` spends again on purpose. Records with no known
 * outcome never expire into a fresh spend within UNSETTLED_TTL_MS.
 */

type LedgerState = "pending" | "started" | "settled" | "unknown";

interface LedgerRecord {
  state: LedgerState;
  /** When the first call began (ISO). */
  at: string;
  /** pending: its caller renews the record until then (ms since the epoch); past it, the caller is gone. */
  alive?: number;
  /** Work the call started upstream and how to follow it (the tool's `resume` reads it). */
  checkpoint?: Record<string, unknown>;
  /** settled: its outcome, as its caller got it (or would have). */
  result?: CallToolResult;
  /** A task-augmented call: the task that carries it (the task store keeps its outcome). */
  task?: string;
}

/** A record as read back: its state as of now (a dead caller's or another generation's pending is unknown). */
interface Prior extends LedgerRecord {
  why?: string;
}

/** How long a record without a known outcome is kept: a day, or the window if longer. */
const UNSETTLED_TTL_MS = 24 * 3600_000;
/** How often a running call renews its record, and how long a renewal holds. */
const HEARTBEAT_MS = 5_000;
const ALIVE_MS = 3 * HEARTBEAT_MS;
/** How often a repeated call looks whether the first one has moved on. */
const LOOK_MS = 250;
/** Records this process wrote, kept to write back into a store that lost them (a Redis restart). */
const MAX_SHADOW = 10_000;

/** One spending call on its way through the ledger. */
interface LedgerCall {
  def: ToolDef<any, any>;
  /** Validated input without `repeat`. */
  input: Record<string, unknown>;
  repeat: boolean;
  owner: string;
  key: string;
  /** The record of this caller's latest spend with this tool, which a confirmation mentions. */
  recentKey: string;
  ctx: CallContext;
  host: ToolHost;
}

interface LedgerOptions {
  store: LedgerStore;
  windowMs: number;
  logger: Logger;
  /** Seals records at rest (results can hold a caller's data) and keys them by an HMAC of the call. */
  sealer?: Sealer;
  /**
   * One caller (stdio, one account per service): records are keyed by the account the tool's
   * service talks to (a digest of its address and key) instead of the process's random tenant id,
   * so the next process finds them and another account never does.
   */
  accountOf?: (def: ToolDef<any, any>) => string;
  /** Why the store cannot be trusted (an unwritable state file): every spend asks first. */
  degraded?: string;
}

export class SpendLedger {
  private readonly shadow = new Map<string, { value: string; ttlMs: number; until: number }>();
  private readonly live = new Set<string>();
  /** The store generation this process last saw: a change is a Redis restart. */
  private generation?: string;
  private restoring?: Promise<number>;
  /** A restart this process saw but could not note in the store: a missing record proves nothing until then. */
  private restartSeen?: { at: number; until: number };

  constructor(private readonly options: LedgerOptions) {}

  get store(): LedgerStore {
    return this.options.store;
  }

  call(
    def: ToolDef<any, any>,
    input: Record<string, unknown>,
    repeat: boolean,
    owner: string,
    ctx: CallContext,
    host: ToolHost,
  ): LedgerCall {
    const who = this.options.accountOf?.(def) ?? owner;
    const key = this.keyOf(JSON.stringify([who, def.name, canonical(input)]));
    const recentKey = this.keyOf(JSON.stringify([who, def.name, "recent"]));
    return { def, input, repeat, owner: who, key, recentKey, ctx: this.withRecent(ctx, recentKey), host };
  }

  /** A blocking spending call, from the repeat check to its settled record. The one step of tools/call. */
  async run(call: LedgerCall): Promise<CallToolResult> {
    const opened = await this.open(call);
    if (opened.answer) return opened.answer;
    return this.first(call);
  }

  /**
   * Everything before the upstream request: a repeat is answered, `before` runs (confirmations,
   * guards), and the record is written. `answer` set: the call ends with it, nothing was sent.
   */
  async open(call: LedgerCall): Promise<{ answer?: CallToolResult; prior?: Prior }> {
    const { def, input, ctx, host } = call;
    if (this.options.degraded && !call.repeat) return { answer: this.cannotRemember(call) };
    try {
      if (!call.repeat) {
        const { prior, restarted } = await this.look(call.key);
        if (prior) return { answer: await this.repeated(call, prior), prior };
        const unproven = restarted === undefined ? undefined : await this.afterRestart(call, restarted);
        if (unproven) return { answer: unproven };
      }
      const refused = await runBefore(def, input, ctx, host);
      if (refused) return { answer: refused };
      const record: LedgerRecord = { state: "pending", at: new Date().toISOString(), alive: Date.now() + ALIVE_MS };
      if (call.repeat) {
        await this.save(call.key, record);
        return {};
      }
      const raw = this.write(call.key, record);
      const claimed = await this.store.claim(call.key, raw, UNSETTLED_TTL_MS);
      this.observe(claimed.generation);
      if (!claimed.prior) {
        this.remember(call.key, raw, UNSETTLED_TTL_MS);
        return {};
      }
      // Another replica claimed it between our look and our claim: it is the first call.
      const prior = this.interpret(call.key, claimed.prior, claimed.generation);
      return { answer: await this.repeated(call, prior), prior };
    } catch (err) {
      if (err instanceof NeedsInput) throw err;
      const error = err instanceof Error ? err.message : String(err);
      this.options.logger.warn("spend ledger unavailable", { tool: def.name, error });
      return { answer: unavailable() };
    }
  }

  /** A task-augmented call: its record names the task that carries the work. */
  async started(call: LedgerCall, taskId: string): Promise<void> {
    const record: LedgerRecord = { state: "started", at: new Date().toISOString(), task: taskId };
    await this.save(call.key, record).catch((err) => this.warn(call, "spend record not saved", err));
  }

  /** The record of a call whose task could not be started: nothing was sent. */
  async abandon(call: LedgerCall): Promise<void> {
    await this.drop(call.key).catch((err) => this.warn(call, "spend record not removed", err));
  }

  /** The first call: runs, renews its record, leaves the checkpoint when its work starts and the outcome at the end. */
  async first(call: LedgerCall): Promise<CallToolResult> {
    const { def, input, key, ctx, host } = call;
    const record: LedgerRecord = { state: "pending", at: new Date().toISOString(), alive: Date.now() + ALIVE_MS };
    const save = () => this.save(key, record).catch((err) => this.warn(call, "spend record not saved", err));
    const renew = setInterval(() => {
      record.alive = Date.now() + ALIVE_MS;
      void save();
    }, HEARTBEAT_MS);
    renew.unref();
    this.live.add(key);
    let error: unknown;
    let done = false;
    const watched: ToolDef<any, any> = {
      ...def,
      run: async (i, c) => {
        try {
          const out = await def.run(i, c);
          done = true;
          return out;
        } catch (err) {
          error = err;
          throw err;
        }
      },
    };
    const checkpoint = async (state: Record<string, unknown>) => {
      await ctx.checkpoint?.(state);
      record.state = "started";
      record.checkpoint = state;
      await save();
    };
    try {
      const result = await runTool(watched, input, { ...ctx, checkpoint }, host, { beforeDone: true });
      clearInterval(renew);
      if (!done && !record.checkpoint && nothingSpent(error)) {
        // Refused upstream or never sent: nothing was spent, so the same call may go again.
        await this.drop(key).catch((err) => this.warn(call, "spend record not removed", err));
        return result;
      }
      if (done || (record.checkpoint && !ctx.signal.aborted)) {
        // Its outcome is known, delivered or not (a lost answer proves nothing): kept for the window.
        record.state = "settled";
        record.result = result;
        delete record.alive;
        await this.save(key, record, this.options.windowMs).catch((err) =>
          this.warn(call, "spend record not saved", err),
        );
        if (!result.isError) await this.saveRecent(call, record.at, result);
        return result;
      }
      // Cancelled or failed before its outcome was known: it may or may not have spent.
      if (!record.checkpoint) record.state = "unknown";
      delete record.alive;
      await save();
      return result;
    } finally {
      clearInterval(renew);
      this.live.delete(key);
    }
  }

  /**
   * A repeat of a call the ledger knows: answered without spending. The one place a repeat is
   * answered (counters of "spend-once repeats answered" belong here).
   */
  private async repeated(call: LedgerCall, prior: Prior): Promise<CallToolResult> {
    const answer = await this.answerRepeat(call, prior);
    const fields = { tool: call.def.name, first: prior.at, state: prior.state };
    this.options.logger.info("repeated spending call answered without spending", fields);
    telemetry.add("repeats", 1, { tool: call.def.name });
    return answer;
  }

  private async answerRepeat(call: LedgerCall, first: Prior): Promise<CallToolResult> {
    const { def, input, key, ctx, host } = call;
    let prior: Prior | undefined = first;
    // The first call has not started its work or ended yet: wait for it, as long as our caller can.
    const deadline = ctx.blockingUntil ?? Date.now() + 30_000;
    while (prior?.state === "pending" && !ctx.signal.aborted && Date.now() + LOOK_MS < deadline) {
      await sleep(LOOK_MS, ctx.signal);
      prior = await this.read(key);
    }
    // Gone while we waited: it spent nothing (refused), so this call is not a repeat of a spend.
    if (!prior) return this.run({ ...call, repeat: false });
    const again = `To spend again on purpose, call ${def.name} again with repeat: true.`;
    const when = clock(prior.at);
    if (prior.task)
      return text(
        `Same call as the one at ${when}, which runs as task ${prior.task}: nothing was sent again. ` +
          `Follow it with tasks/get (its result with tasks/result). ${again}`,
        true,
      );
    if (prior.state === "started" && prior.checkpoint && def.longRunning?.resume) {
      const followed = await runTool(def, input, ctx, host, { beforeDone: true, resumeFrom: prior.checkpoint });
      return note(followed, `Same call as the one at ${when}: nothing was sent again. Following the work it started:`);
    }
    if (prior.state === "settled" && prior.result)
      return note(
        prior.result,
        `Same call as the one at ${when}: nothing was sent again. ${again} That call's outcome:`,
      );
    if (prior.state === "pending")
      return text(
        `Same call as the one at ${when}, which is still running: nothing was sent again. ` +
          "Its outcome is not known yet: call again in a minute to get it.",
        true,
      );
    return this.verifyFirst(call, prior);
  }

  /** Unknown: the tool's read-only `find` looks for the work; found or not, nothing is sent. */
  private async verifyFirst(call: LedgerCall, prior: Prior): Promise<CallToolResult> {
    const { def, input, ctx, host } = call;
    const why = prior.why ?? "its outcome was never known (its caller gave up or its answer was lost)";
    const head = `Same call as the one at ${clock(prior.at)}: ${why}. Nothing was sent again.`;
    const again = `If it did not take effect, call ${def.name} again with repeat: true to spend on purpose.`;
    if (def.find) {
      try {
        const found = await def.find(input, { ...ctx, deps: host.deps(def) }, prior.at);
        // isError: not this call's output (a tool with an output schema answers structured content or an error).
        if (found) return text(`${head} Checked: ${found} ${again}`, true);
        return text(`${head} Checked: the work it would have done was not found. ${again}`, true);
      } catch (err) {
        const error = err instanceof Error ? err.message : String(err);
        this.options.logger.warn("spend check failed", { tool: def.name, error });
      }
    }
    const check = verifyOf(def, input, host) ?? "read the resource again";
    return text(`${head} Check first: ${check}. ${again}`, true);
  }

  /**
   * No record, but the store restarted within the window: a record of this same call written
   * before the restart may be lost (its replica died before it could write it back). The tool's
   * read-only `find` looks for the work since the window began: nothing found, the call goes on;
   * found, or no way to look, nothing is sent and the answer says how to spend on purpose.
   */
  private async afterRestart(call: LedgerCall, restarted: number): Promise<CallToolResult | undefined> {
    const { def, input, ctx, host } = call;
    const since = new Date(Date.now() - this.options.windowMs).toISOString();
    const head =
      `The state store restarted at ${clock(new Date(restarted).toISOString())} and may have lost the record ` +
      `of this same call made before it, so it cannot be proven that this call did not already run. ` +
      "Nothing was sent.";
    const again = `If it did not take effect, call ${def.name} again with repeat: true to spend on purpose.`;
    const fields = { tool: def.name, restarted: new Date(restarted).toISOString() };
    if (def.find) {
      try {
        const found = await def.find(input, { ...ctx, deps: host.deps(def) }, since);
        this.options.logger.info("spending call checked after a store restart", { ...fields, found: !!found });
        if (!found) return undefined;
        return text(`${head} Checked: ${found} ${again}`, true);
      } catch (err) {
        const error = err instanceof Error ? err.message : String(err);
        this.options.logger.warn("spend check failed", { tool: def.name, error });
      }
    }
    this.options.logger.info("spending call not sent after a store restart: no check", fields);
    const check = verifyOf(def, input, host) ?? "read the resource again";
    return text(`${head} Check first: ${check}. ${again}`, true);
  }

  /** The same tool spent by this caller within the window: a confirmation asked now says so. */
  private withRecent(ctx: CallContext, recentKey: string): CallContext {
    const confirm: CallContext["confirm"] = async (request) => {
      const recent = await this.read(recentKey, true).catch(() => undefined);
      const did = recent?.result && firstLine(recent.result);
      const note = did ? `Note: at ${clock(recent.at)} you already did this: ${did}\n` : "";
      return ctx.confirm(note ? { ...request, message: note + request.message } : request);
    };
    return { ...ctx, confirm };
  }

  private async saveRecent(call: LedgerCall, at: string, result: CallToolResult): Promise<void> {
    const did = firstLine(result);
    if (!did) return;
    const record: LedgerRecord = { state: "settled", at, result: { content: [{ type: "text", text: did }] } };
    const raw = this.write(call.recentKey, record);
    await this.store
      .set(call.recentKey, raw, this.options.windowMs)
      .catch((err) => this.warn(call, "note not saved", err));
  }

  /**
   * Asks the store for its generation (on a timer and when Redis is back): a change is seen even
   * when no call comes, and this process's records are written back at once.
   */
  async check(): Promise<void> {
    const generation = await this.store.currentGeneration?.().catch(() => undefined);
    if (generation) this.observe(generation);
    await this.restoring;
  }

  /**
   * Every generation the store answers goes through here. A change means the store may have lost
   * records (a Redis restart): this process writes back its own at once.
   */
  private observe(generation: string): boolean {
    const before = this.generation;
    this.generation = generation;
    if (before === undefined || before === generation) return false;
    this.options.logger.warn("state store generation changed; writing back this replica's spend records");
    const previous = this.restoring ?? Promise.resolve(0);
    this.restoring = previous.then(() => this.noteRestart()).then(() => this.restore());
    return true;
  }

  /** Tells every replica the store restarted (so a record missing now proves nothing), first. */
  private async noteRestart(): Promise<void> {
    try {
      await this.store.restarted?.(this.options.windowMs);
    } catch (err) {
      // Not noted in the store: this replica still knows, for the window from now.
      this.restartSeen = { at: Date.now(), until: Date.now() + this.options.windowMs };
      this.options.logger.warn("store restart not noted", { error: String(err) });
    }
  }

  /** Writes back what this process wrote and a restarted store lost: without a known outcome, as unknown. */
  async restore(): Promise<number> {
    let restored = 0;
    const now = Date.now();
    for (const [key, entry] of this.shadow) {
      if (entry.until < now) {
        this.shadow.delete(key);
        continue;
      }
      try {
        const record = this.decode(key, entry.value);
        if (record.state === "pending" && !this.live.has(key)) record.state = "unknown";
        const claimed = await this.store.claim(key, this.write(key, record), entry.until - now);
        if (!claimed.prior) restored++;
      } catch (err) {
        this.options.logger.warn("spend record not written back", { error: String(err) });
        return restored;
      }
    }
    if (restored) this.options.logger.info("spend records written back", { records: restored });
    return restored;
  }

  private cannotRemember(call: LedgerCall): CallToolResult {
    const check = verifyOf(call.def, call.input, call.host);
    return text(
      `This server cannot remember its paid calls (${this.options.degraded}), so it cannot tell whether this ` +
        `same call already ran. Nothing was sent. ${check ? `Check first: ${check}. ` : ""}To spend, ` +
        `call ${call.def.name} again with repeat: true.`,
      true,
    );
  }

  private async save(key: string, record: LedgerRecord, ttlMs = UNSETTLED_TTL_MS): Promise<void> {
    const raw = this.write(key, record);
    this.remember(key, raw, ttlMs);
    await this.store.set(key, raw, ttlMs);
  }

  private async drop(key: string): Promise<void> {
    this.shadow.delete(key);
    await this.store.delete(key);
  }

  private remember(key: string, value: string, ttlMs: number): void {
    this.shadow.delete(key);
    this.shadow.set(key, { value, ttlMs, until: Date.now() + ttlMs });
    while (this.shadow.size > MAX_SHADOW) this.shadow.delete(this.shadow.keys().next().value!);
  }

  private async read(key: string, quiet = false): Promise<Prior | undefined> {
    return (await this.look(key, quiet)).prior;
  }

  /** A record as of now, and when the store restarted if a record written before that may be lost. */
  private async look(key: string, quiet = false): Promise<{ prior?: Prior; restarted?: number }> {
    let got = await this.store.get(key);
    if (this.observe(got.generation)) {
      // A change seen just now: the restart is noted and this process's records go back before this one is judged.
      await this.restoring;
      got = await this.store.get(key);
    }
    const seen = this.restartSeen && this.restartSeen.until > Date.now() ? this.restartSeen.at : undefined;
    const restarted = got.restarted ?? seen;
    if (!got.found) return { restarted };
    try {
      return { prior: this.interpret(key, got.found, got.generation) };
    } catch (err) {
      if (quiet) return {};
      // A record that does not open (corrupt, another key): proves nothing, so it counts as unknown.
      this.options.logger.warn("spend record unreadable", { error: String(err) });
      return { prior: { state: "unknown", at: new Date(0).toISOString(), why: "its record could not be read" } };
    }
  }

  private interpret(key: string, stored: Stored, generation: string): Prior {
    const record: Prior = this.decode(key, stored.value);
    if (record.state === "settled" || record.task) return record;
    if (stored.generation !== generation && !this.live.has(key))
      return { ...record, state: "unknown", why: "the state store restarted since, so what it did is not known" };
    if (record.state === "pending" && (record.alive ?? 0) < Date.now())
      return { ...record, state: "unknown", why: "its caller stopped before its outcome was known" };
    return record;
  }

  private decode(key: string, raw: string): LedgerRecord {
    return this.options.sealer ? this.options.sealer.open<LedgerRecord>(raw, key) : (JSON.parse(raw) as LedgerRecord);
  }

  private keyOf(text: string): string {
    return this.options.sealer ? this.options.sealer.fingerprint(text) : text;
  }

  private write(key: string, record: LedgerRecord): string {
    return this.options.sealer ? this.options.sealer.seal(record, key) : JSON.stringify(record);
  }

  private warn(call: LedgerCall, what: string, err: unknown): void {
    this.options.logger.warn(what, { tool: call.def.name, error: String(err) });
  }
}

/** Splits the `repeat` flag from a spending tool's validated input. */
export function takeRepeat(
  def: Pick<ToolDef<any, any>, "kind">,
  input: Record<string, unknown>,
): { input: Record<string, unknown>; repeat: boolean } {
  // Only a spending tool's schema has the flag (inputSchemaOf): any other input is already the tool's own.
  if (def.kind !== "spend") return { input, repeat: false };
  const { repeat, ...rest } = input;
  return { input: rest, repeat: repeat === true };
}

/** A failure that certainly spent nothing: the upstream refused it (4xx), or it never left. */
function nothingSpent(err: unknown): boolean {
  if (!(err instanceof UpstreamError) || err.outcomeUnknown) return false;
  return err.code === "MISSING_CREDENTIALS" || (err.status !== undefined && err.status < 500);
}

function unavailable(): CallToolResult {
  return text(
    "The state store is unavailable, so this call could not be checked against the same call made just before: " +
      "nothing was sent or spent. This is transient and retrying is safe: call the tool again in a few seconds",
    true,
  );
}

function text(message: string, isError = false): CallToolResult {
  return { content: [{ type: "text", text: message }], ...(isError ? { isError: true } : {}) };
}

/** The first line of a result's text: what a call did ("Launched project booking-app; …"). */
function firstLine(result: CallToolResult): string | undefined {
  const first = result.content.find((c) => c.type === "text");
  return first?.type === "text" ? first.text.split("\n")[0]?.slice(0, 300) : undefined;
}

/** "14:02:07 UTC (2026-11-28T14:02:07.123Z)": a time a person reads, with the exact one. */
function clock(iso: string): string {
  return `${iso.slice(11, 19)} UTC (${iso})`;
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
