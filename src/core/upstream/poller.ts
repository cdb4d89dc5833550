import type { Logger } from "../base/logger.js";
import { telemetry, type WorkSpan } from "../base/telemetry.js";

/** `trace`: the poll's traceparent (telemetry on), which the followers' spans link to. */
export type PollResult<T> = ({ value: T; error?: undefined } | { value?: undefined; error: unknown }) & {
  trace?: string;
};
export type PollListener<T> = (result: PollResult<T>) => void;

interface Follower<T> {
  listener: PollListener<T>;
  span?: WorkSpan;
  /** Sequence number of the first fetch this follower may see (never a fetch begun before it joined). */
  fromFetch: number;
}

interface Entry<T> {
  followers: Set<Follower<T>>;
  controller: AbortController;
  timer?: NodeJS.Timeout;
  inFlight: boolean;
  /** Someone joined while a fetch was in flight and needs a fresh one. */
  freshWanted: boolean;
  fetchSeq: number;
  lastStart: number;
}

/** Follows keys: one upstream poll per key and interval, whoever follows. In process or across replicas. */
export interface Poller<T> {
  /** `span`: the follower's (a wait's) span, which its polls hang under or link to. */
  follow(key: string, listener: PollListener<T>, span?: WorkSpan): () => void;
  /**
   * A hint that the key changed (a webhook delivery): its followers get one fresh answer soon
   * (within the minimum gap), then polling goes on at its pace. Nothing happens for a key nobody follows.
   */
  poke?(key: string): void;
}

/** Makes a poller for one namespace (a tenant's project statuses, say): in process, or leased across replicas. */
export type PollerFactory = <T>(
  namespace: string,
  fetch: (key: string, signal: AbortSignal) => Promise<T>,
  options: PollerOptions,
) => Poller<T>;

/** One fetch as a result: an error is an answer followers handle, never a throw. */
export async function settle<T>(fetch: () => Promise<T>): Promise<PollResult<T>> {
  try {
    return { value: await fetch() };
  } catch (error) {
    return { error };
  }
}

/**
 * One fetch in a span of its own: the child of the oldest follower's span that has one (a wait),
 * else a trace of its own (a resource subscription's poll). Its traceparent goes with the answer.
 */
export async function tracedPoll<T>(
  followers: Iterable<{ span?: WorkSpan }>,
  signal: AbortSignal,
  fetch: (signal: AbortSignal) => Promise<T>,
): Promise<PollResult<T> & { by?: WorkSpan }> {
  if (!telemetry.on) return settle(() => fetch(signal));
  const by = [...followers].find((f) => f.span)?.span;
  const span = telemetry.begin("poll", {}, by ? { of: by } : "none");
  span.adopt(signal);
  const result = await settle(() => fetch(signal));
  span.end(undefined, result.error);
  return { ...result, trace: span.traceparent, by };
}

/**
 * Hands an answer to the followers `wants` accepts; one that throws does not stop the others.
 * A follower's span links the poll unless it is the poll's parent (`by`).
 */
export function handOut<T, F extends { listener: PollListener<T>; span?: WorkSpan }>(
  followers: Iterable<F>,
  wants: (f: F) => boolean,
  { by, ...result }: PollResult<T> & { by?: WorkSpan },
  logger: Logger,
  key: string,
): void {
  for (const follower of [...followers]) {
    if (!wants(follower)) continue;
    if (result.trace && follower.span && follower.span !== by) follower.span.link(result.trace);
    try {
      follower.listener(result);
    } catch (err) {
      logger.error("poll follower failed", { key, error: err instanceof Error ? err.message : String(err) });
    }
  }
}

export const localPollers: PollerFactory = (_namespace, fetch, options) => new SharedPoller(fetch, options);

export interface PollerOptions {
  intervalMs: number;
  logger: Logger;
  /** Lower bound between two fetches of one key, even when a new follower wants a fresh answer. */
  minGapMs?: number;
  /** The interval right now, when it changes while polling (slower while webhooks are healthy). */
  pace?: () => number;
}

/** The interval a poller waits now: its pace, never below the minimum gap. */
export function currentInterval(options: PollerOptions, minGapMs: number): number {
  return Math.max(minGapMs, options.pace?.() ?? options.intervalMs);
}

/**
 * One upstream poll per key and interval, however many followers (waits, tasks, resource
 * subscriptions) watch that key. A follower only receives answers to fetches that began after it
 * joined, so nobody acts on a state read before their own request (say, before the agent start
 * they just sent). Polling stops when the last follower leaves.
 */
export class SharedPoller<T> implements Poller<T> {
  private readonly entries = new Map<string, Entry<T>>();
  private readonly minGapMs: number;

  constructor(
    private readonly fetch: (key: string, signal: AbortSignal) => Promise<T>,
    private readonly options: PollerOptions,
  ) {
    this.minGapMs = options.minGapMs ?? Math.min(options.intervalMs, 250);
  }

  /** Number of keys being polled right now. */
  get activeKeys(): number {
    return this.entries.size;
  }

  follow(key: string, listener: PollListener<T>, span?: WorkSpan): () => void {
    let entry = this.entries.get(key);
    if (!entry) {
      entry = {
        followers: new Set(),
        controller: new AbortController(),
        inFlight: false,
        freshWanted: false,
        fetchSeq: 0,
        lastStart: 0,
      };
      this.entries.set(key, entry);
    }
    const follower: Follower<T> = { listener, span, fromFetch: entry.fetchSeq + 1 };
    entry.followers.add(follower);
    if (entry.inFlight) entry.freshWanted = true;
    else this.schedule(key, entry, Math.max(0, entry.lastStart + this.minGapMs - Date.now()));
    return () => this.unfollow(key, follower);
  }

  poke(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    if (entry.inFlight) entry.freshWanted = true;
    else this.schedule(key, entry, Math.max(0, entry.lastStart + this.minGapMs - Date.now()));
  }

  private unfollow(key: string, follower: Follower<T>): void {
    const entry = this.entries.get(key);
    if (!entry?.followers.delete(follower)) return;
    if (entry.followers.size > 0) return;
    clearTimeout(entry.timer);
    entry.controller.abort();
    this.entries.delete(key);
  }

  private schedule(key: string, entry: Entry<T>, delayMs: number): void {
    clearTimeout(entry.timer);
    entry.timer = setTimeout(() => void this.tick(key, entry), delayMs);
  }

  private async tick(key: string, entry: Entry<T>): Promise<void> {
    if (this.entries.get(key) !== entry) return;
    entry.inFlight = true;
    entry.freshWanted = false;
    entry.lastStart = Date.now();
    const seq = ++entry.fetchSeq;
    const result = await tracedPoll(entry.followers, entry.controller.signal, (signal) => this.fetch(key, signal));
    entry.inFlight = false;
    if (entry.controller.signal.aborted || this.entries.get(key) !== entry) return;
    handOut(entry.followers, (f) => f.fromFetch <= seq, result, this.options.logger, key);
    if (this.entries.get(key) !== entry) return;
    const delay = entry.freshWanted
      ? Math.max(0, entry.lastStart + this.minGapMs - Date.now())
      : currentInterval(this.options, this.minGapMs);
    this.schedule(key, entry, delay);
  }
}
