/**
 * Calls `tick` every `intervalMs` while started and not paused, one call at a time. A tick says
 * whether to go on ("continue"), to go on at once ("again": a follow-up read), to retry after a
 * failure (the delay doubles, up to 4×, and `maxFailures` in a row stop it), or to stop.
 * Pure: timers only, injectable for tests.
 */

export type TickOutcome = "continue" | "again" | "retry" | "stop";

export interface PollerOptions {
  intervalMs: number;
  maxFailures?: number;
  onStop?: (reason: "done" | "failures" | "stopped") => void;
  timers?: { setTimeout: typeof setTimeout; clearTimeout: typeof clearTimeout };
}

export class Poller {
  private timer: ReturnType<typeof setTimeout> | undefined;
  private inFlight = false;
  private paused = false;
  private stopped = true;
  private failures = 0;
  private readonly timers: NonNullable<PollerOptions["timers"]>;

  constructor(
    private readonly tick: () => Promise<TickOutcome>,
    private readonly options: PollerOptions,
  ) {
    this.timers = options.timers ?? {
      setTimeout: globalThis.setTimeout.bind(globalThis),
      clearTimeout: globalThis.clearTimeout.bind(globalThis),
    };
  }

  get active(): boolean {
    return !this.stopped;
  }

  get isPaused(): boolean {
    return this.paused;
  }

  /** Starts (or restarts) following; the first tick comes after `firstDelayMs` (default: one interval). */
  start(firstDelayMs = this.options.intervalMs): void {
    this.stopped = false;
    this.failures = 0;
    this.schedule(firstDelayMs);
  }

  /** While paused (view hidden) no tick runs; resume() ticks at once. */
  pause(): void {
    this.paused = true;
    this.clear();
  }

  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    if (!this.stopped && !this.inFlight) this.schedule(0);
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.clear();
    this.options.onStop?.("stopped");
  }

  private clear(): void {
    if (this.timer !== undefined) this.timers.clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(delayMs: number): void {
    this.clear();
    if (this.stopped || this.paused) return;
    this.timer = this.timers.setTimeout(() => void this.run(), delayMs);
  }

  private async run(): Promise<void> {
    this.timer = undefined;
    if (this.stopped || this.paused || this.inFlight) return;
    this.inFlight = true;
    let outcome: TickOutcome;
    try {
      outcome = await this.tick();
    } catch {
      outcome = "retry";
    }
    this.inFlight = false;
    if (this.stopped) return;
    if (outcome === "stop") {
      this.stopped = true;
      this.options.onStop?.("done");
      return;
    }
    if (outcome === "retry") {
      this.failures++;
      if (this.failures >= (this.options.maxFailures ?? 5)) {
        this.stopped = true;
        this.options.onStop?.("failures");
        return;
      }
    } else {
      this.failures = 0;
    }
    if (outcome === "again") return this.schedule(0);
    const backoff = Math.min(4, 2 ** this.failures);
    this.schedule(this.options.intervalMs * (outcome === "retry" ? backoff : 1));
  }
}
