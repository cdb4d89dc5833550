import {
  currentInterval,
  handOut,
  tracedPoll,
  type Poller,
  type PollerFactory,
  type PollerOptions,
  type PollListener,
  type PollResult,
} from "../upstream/poller.js";
import type { WorkSpan } from "../base/telemetry.js";
import { UpstreamError } from "../upstream/upstream.js";
import type { RedisState } from "./redis.js";

interface Follower<T> {
  listener: PollListener<T>;
  span?: WorkSpan;
  /** Only answers to fetches begun after this (ms) reach it: never a state read before its own request. */
  joinedAt: number;
}

interface Entry<T> {
  followers: Set<Follower<T>>;
  controller: AbortController;
  timer?: NodeJS.Timeout;
  holding: boolean;
  inFlight: boolean;
  freshWanted: boolean;
  lastStart: number;
  stop: Array<() => void>;
}

/** What the holder publishes after each fetch. */
interface Published {
  from: string;
  startedAt: number;
  /** The poll's traceparent: followers' spans on every replica link to it. */
  trace?: string;
  value?: unknown;
  error?: { message: string; upstream?: Omit<UpstreamError, "name" | "transient" | "stack"> };
}

/**
 * The shared poller across replicas: for each key, the replica holding its lease polls the
 * upstream once per interval and publishes the answer; every replica with followers of that key
 * hands it to them. So 100 waits on one project spread over three replicas cost one upstream poll
 * per interval in all. The lease lasts three intervals: when its holder dies or its last follower
 * leaves, another replica with followers takes it within one lease period (at once on a release).
 */
export class ClusterPoller<T> implements Poller<T> {
  private readonly entries = new Map<string, Entry<T>>();
  private readonly leaseMs: number;
  private readonly minGapMs: number;

  constructor(
    private readonly state: RedisState,
    private readonly namespace: string,
    private readonly fetch: (key: string, signal: AbortSignal) => Promise<T>,
    private readonly options: PollerOptions,
  ) {
    this.leaseMs = Math.max(3 * options.intervalMs, 3000);
    this.minGapMs = options.minGapMs ?? Math.min(options.intervalMs, 250);
  }

  private name(key: string, kind: "lease" | "result" | "want"): string {
    return `poll:${kind}:${this.namespace}:${this.options.intervalMs}:${key}`;
  }

  follow(key: string, listener: PollListener<T>, span?: WorkSpan): () => void {
    let entry = this.entries.get(key);
    const follower: Follower<T> = { listener, span, joinedAt: Date.now() };
    if (!entry) {
      const created: Entry<T> = {
        followers: new Set(),
        controller: new AbortController(),
        holding: false,
        inFlight: false,
        freshWanted: false,
        lastStart: 0,
        stop: [],
      };
      entry = created;
      this.entries.set(key, created);
      created.stop.push(
        this.state.subscribe(this.name(key, "result"), (message) =>
          this.received(key, created, JSON.parse(message) as Published),
        ),
        this.state.subscribe(this.name(key, "want"), (message) => this.wanted(key, created, message)),
      );
      this.schedule(key, created, 0);
    }
    if (entry.holding) this.wantFresh(key, entry);
    // Ask whichever replica holds the lease for an answer newer than this follower.
    else void this.state.publish(this.name(key, "want"), `fresh ${this.state.replicaId}`).catch(() => undefined);
    entry.followers.add(follower);
    return () => this.unfollow(key, follower);
  }

  /** Every replica hears a hint; the one holding the key's lease fetches it. */
  poke(key: string): void {
    const entry = this.entries.get(key);
    if (entry?.holding) this.wantFresh(key, entry);
  }

  private unfollow(key: string, follower: Follower<T>): void {
    const entry = this.entries.get(key);
    if (!entry?.followers.delete(follower) || entry.followers.size > 0) return;
    clearTimeout(entry.timer);
    entry.controller.abort();
    entry.stop.forEach((stop) => stop());
    this.entries.delete(key);
    if (entry.holding) {
      // Hand the key to another replica's followers now rather than after the lease lapses.
      void this.state
        .release(this.name(key, "lease"))
        .then(() => this.state.publish(this.name(key, "want"), "released"))
        .catch(() => undefined);
    }
  }

  private schedule(key: string, entry: Entry<T>, delayMs: number): void {
    clearTimeout(entry.timer);
    entry.timer = setTimeout(() => void this.tick(key, entry), delayMs);
  }

  private wantFresh(key: string, entry: Entry<T>): void {
    if (entry.inFlight) entry.freshWanted = true;
    else this.schedule(key, entry, Math.max(0, entry.lastStart + this.minGapMs - Date.now()));
  }

  private wanted(key: string, entry: Entry<T>, message: string): void {
    if (this.entries.get(key) !== entry || message === `fresh ${this.state.replicaId}`) return;
    if (entry.holding) this.wantFresh(key, entry);
    else if (message === "released") this.schedule(key, entry, 0);
  }

  private async tick(key: string, entry: Entry<T>): Promise<void> {
    if (this.entries.get(key) !== entry) return;
    try {
      // A slowed pace lengthens the lease with it, so the others do not take the key between polls.
      const leaseMs = Math.max(this.leaseMs, 3 * currentInterval(this.options, this.minGapMs));
      entry.holding = await this.state.lease(this.name(key, "lease"), leaseMs);
    } catch (err) {
      // Redis is away: poll locally meanwhile, so waits on this replica keep going.
      this.options.logger.debug("poll lease unavailable; polling locally", {
        key,
        error: err instanceof Error ? err.message : String(err),
      });
      entry.holding = true;
    }
    if (this.entries.get(key) !== entry) return;
    if (!entry.holding) return this.schedule(key, entry, this.options.intervalMs);
    entry.inFlight = true;
    entry.freshWanted = false;
    const startedAt = (entry.lastStart = Date.now());
    const result = await tracedPoll(entry.followers, entry.controller.signal, (signal) => this.fetch(key, signal));
    entry.inFlight = false;
    if (entry.controller.signal.aborted || this.entries.get(key) !== entry) return;
    this.deliver(key, entry, startedAt, result);
    void this.state
      .publish(this.name(key, "result"), JSON.stringify(toPublished(this.state.replicaId, startedAt, result)))
      .catch(() => undefined);
    const delay = entry.freshWanted
      ? Math.max(0, entry.lastStart + this.minGapMs - Date.now())
      : currentInterval(this.options, this.minGapMs);
    this.schedule(key, entry, delay);
  }

  private received(key: string, entry: Entry<T>, message: Published): void {
    if (message.from === this.state.replicaId) return; // delivered locally already
    this.deliver(key, entry, message.startedAt, fromPublished<T>(message));
  }

  private deliver(key: string, entry: Entry<T>, startedAt: number, result: PollResult<T> & { by?: WorkSpan }): void {
    handOut(entry.followers, (f) => f.joinedAt <= startedAt, result, this.options.logger, key);
  }
}

function toPublished(from: string, startedAt: number, result: PollResult<unknown>): Published {
  const trace = result.trace;
  if (!result.error) return { from, startedAt, trace, value: result.value };
  const err = result.error;
  if (err instanceof UpstreamError) {
    const { service, status, code, message, request, outcomeUnknown, retryAfterMs, details } = err;
    return {
      from,
      startedAt,
      trace,
      error: { message, upstream: { service, status, code, message, request, outcomeUnknown, retryAfterMs, details } },
    };
  }
  return { from, startedAt, trace, error: { message: err instanceof Error ? err.message : String(err) } };
}

function fromPublished<T>(message: Published): PollResult<T> {
  const { trace } = message;
  if (!message.error) return { value: message.value as T, trace };
  const u = message.error.upstream;
  if (!u) return { error: new Error(message.error.message), trace };
  return {
    trace,
    error: new UpstreamError(
      u.service,
      u.status,
      u.code,
      u.message,
      u.request,
      u.outcomeUnknown,
      u.retryAfterMs,
      u.details,
    ),
  };
}

/** Pollers whose keys are leased cluster-wide, one namespace per tenant and status kind. */
export function clusterPollers(state: RedisState): PollerFactory {
  return (namespace, fetch, options) => new ClusterPoller(state, namespace, fetch, options);
}
