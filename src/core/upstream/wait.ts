import { z } from "zod";
import type { Logger } from "../base/logger.js";
import { telemetry } from "../base/telemetry.js";
import type { Poller } from "./poller.js";
import { UpstreamError } from "./upstream.js";

/** `idle`: nothing is running to wait for (never started, or the start never showed). */
export type Phase = "running" | "done" | "failed" | "idle";

interface WaitSpec<T> {
  /** The shared poller and the key to follow on it. */
  poller: Poller<T>;
  key: string;
  /** Where the work stands; `message` explains a failure; called once per answer. */
  check(state: T): { phase: Phase; message?: string; line?: string };
  /** One line for a person: what is happening now (given what `check` said of this answer). */
  describe(state: T, elapsedMs: number, verdict: { phase: Phase; line?: string }): string;
  timeoutMs: number;
  signal: AbortSignal;
  onProgress(message: string, poll: number): Promise<void>;
  logger: Logger;
  /** Consecutive transient failures tolerated before giving up. */
  maxFailures?: number;
}

interface PollOutcome<T> {
  outcome: "done" | "failed" | "timed_out" | "idle";
  state: T;
  polls: number;
  elapsedMs: number;
  failureMessage?: string;
}

/** How long past its budget a wait still takes the first answer, when none came within it. */
const FIRST_ANSWER_GRACE_MS = 30_000;

/**
 * Follows a key of a shared poller until the work ends, the time budget runs out or the caller
 * cancels. A transient upstream failure (timeout, 5xx, 429) is reported and polled through;
 * anything else ends the wait with that error.
 */
export function waitUntilDone<T>(spec: WaitSpec<T>): Promise<PollOutcome<T>> {
  const started = Date.now();
  const maxFailures = spec.maxFailures ?? 5;
  // The wait's span: the polls it alone follows hang under it; a poll it shares, it links.
  const span = telemetry.begin("wait", {}, { within: spec.signal });
  return new Promise((resolve, reject) => {
    let polls = 0;
    let failures = 0;
    let last: T | undefined;
    let settled = false;
    let ending = false;
    const finish = (fn: () => void, outcome: string, error?: unknown) => {
      if (settled) return;
      settled = true;
      unfollow();
      clearTimeout(timer);
      spec.signal.removeEventListener("abort", onAbort);
      span.end({ "switchboard.wait.outcome": outcome, "switchboard.wait.polls": polls }, error);
      fn();
    };
    const fail = (err: unknown, outcome = "error") => finish(() => reject(err), outcome, err);
    const onAbort = () => fail(spec.signal.reason ?? new Error("aborted"), "aborted");
    // A budget shorter than the first answer (a loaded host, a slow upstream) is no failure: that
    // answer ends the wait. The upstream's request timeout bounds it; the grace, a poll never reported.
    let overdue = false;
    let timer = setTimeout(() => {
      if (last !== undefined) {
        const state = last;
        finish(() => resolve({ outcome: "timed_out", state, polls, elapsedMs: Date.now() - started }), "timed_out");
        return;
      }
      overdue = true;
      timer = setTimeout(
        () => fail(new Error(`no answer from the upstream within ${Math.round(spec.timeoutMs / 1000)}s`)),
        FIRST_ANSWER_GRACE_MS,
      );
    }, spec.timeoutMs);
    // Progress notifications are sent in order: each waits for the one before.
    let sending = Promise.resolve();
    const progress = (message: string) => {
      const n = ++polls;
      sending = sending.then(() => spec.onProgress(message, n)).catch(() => undefined);
      return sending;
    };
    const unfollow = spec.poller.follow(
      spec.key,
      (result) => {
        if (settled || ending) return;
        if (result.error !== undefined) {
          const err = result.error;
          if (!(err instanceof UpstreamError) || !err.transient || ++failures > maxFailures || overdue)
            return fail(err);
          spec.logger.warn("poll failed, will retry", { code: err.code, status: err.status, failures });
          void progress(`Upstream hiccup (${err.code}); still waiting…`);
          return;
        }
        failures = 0;
        const state = result.value as T;
        last = state;
        const verdict = spec.check(state);
        const { phase, message } = verdict;
        const elapsedMs = Date.now() - started;
        const sent = progress(spec.describe(state, elapsedMs, verdict));
        if (phase !== "running" || overdue) {
          ending = true;
          const count = polls;
          const outcome = phase === "running" ? "timed_out" : phase;
          // Let the final progress line go out before the result does.
          void sent.then(() =>
            finish(() => resolve({ outcome, state, polls: count, elapsedMs, failureMessage: message }), outcome),
          );
        }
      },
      span,
    );
    if (spec.signal.aborted) onAbort();
    else spec.signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** `12m 05s`, `45s`. */
export function formatElapsed(ms: number): string {
  const total = Math.max(0, Math.round(ms / 1000));
  const m = Math.floor(total / 60);
  const s = total % 60;
  return m > 0 ? `${m}m ${String(s).padStart(2, "0")}s` : `${s}s`;
}

/** The shared `wait` arguments of tools that can block until their work ends. */
export const waitInput = {
  wait: z.boolean().optional().describe("Block with progress until it ends or ~45 s pass (a task: until it ends)"),
  timeoutSeconds: z
    .number()
    .int()
    .min(1)
    .max(7200)
    .optional()
    .describe("Block this long instead, only if your client waits that long; the work goes on after"),
};

/** A task (or a caller who asked for it) may wait this long. */
export const DEFAULT_WAIT_SECONDS = 2700;

/**
 * How long a wait may block: what the caller asked for; else, in a request a client is waiting
 * on, what is left before its deadline (most clients give up at 60 s, progress or not); else, in
 * a task, the whole default.
 */
export function waitSeconds(asked: number | undefined, blockingUntil: number | undefined): number {
  if (asked !== undefined) return asked;
  if (blockingUntil === undefined) return DEFAULT_WAIT_SECONDS;
  return Math.max(1, Math.round((blockingUntil - Date.now()) / 1000));
}
