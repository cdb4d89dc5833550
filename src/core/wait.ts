import { z } from "zod";
import type { Logger } from "./logger.js";
import { sleep, UpstreamError } from "./upstream.js";

export type Phase = "running" | "done" | "failed";

export interface PollSpec<T> {
  /** Reads the current state once. */
  fetch(signal: AbortSignal): Promise<T>;
  /** Where the work stands; `message` explains a failure. */
  check(state: T): { phase: Phase; message?: string };
  /** One line for a person: what is happening now. */
  describe(state: T, elapsedMs: number): string;
  intervalMs: number;
  timeoutMs: number;
  signal: AbortSignal;
  onProgress(message: string, poll: number): Promise<void>;
  logger: Logger;
  /** Consecutive transient failures tolerated before giving up. */
  maxFailures?: number;
}

export interface PollOutcome<T> {
  outcome: "done" | "failed" | "timed_out";
  state: T;
  polls: number;
  elapsedMs: number;
  failureMessage?: string;
}

/**
 * Polls until the work ends, the time budget runs out or the client cancels. A transient
 * upstream failure (timeout, 5xx, 429) is logged and polled through; anything else ends the wait.
 */
export async function pollUntilDone<T>(spec: PollSpec<T>): Promise<PollOutcome<T>> {
  const started = Date.now();
  const deadline = started + spec.timeoutMs;
  const maxFailures = spec.maxFailures ?? 5;
  let polls = 0;
  let failures = 0;
  let last: T | undefined;
  for (;;) {
    spec.signal.throwIfAborted();
    try {
      last = await spec.fetch(spec.signal);
      failures = 0;
    } catch (err) {
      spec.signal.throwIfAborted();
      if (!(err instanceof UpstreamError) || !err.transient || ++failures > maxFailures) throw err;
      spec.logger.warn("poll failed, will retry", { code: err.code, status: err.status, failures });
      await spec.onProgress(`Upstream hiccup (${err.code}); still waiting…`, ++polls);
    }
    const elapsedMs = Date.now() - started;
    if (last !== undefined) {
      polls++;
      const { phase, message } = spec.check(last);
      await spec.onProgress(spec.describe(last, elapsedMs), polls);
      if (phase !== "running") return { outcome: phase, state: last, polls, elapsedMs, failureMessage: message };
    }
    const remaining = deadline - Date.now();
    if (remaining <= 0) {
      if (last === undefined) throw new Error("timed out before the first successful poll");
      return { outcome: "timed_out", state: last, polls, elapsedMs: Date.now() - started };
    }
    await sleep(Math.min(spec.intervalMs, remaining), spec.signal);
  }
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
  wait: z.boolean().optional().describe("Block until the work ends, sending progress notifications. Default false: return at once."),
  timeoutSeconds: z
    .number()
    .int()
    .min(1)
    .max(7200)
    .optional()
    .describe("With wait: give up waiting after this many seconds (default 2700) and return the state so far; the work itself goes on."),
};

export const DEFAULT_WAIT_SECONDS = 2700;

export const waitSummary = z.object({
  outcome: z.enum(["done", "failed", "timed_out"]),
  elapsedSeconds: z.number().describe("seconds spent waiting"),
  polls: z.number().int(),
});
