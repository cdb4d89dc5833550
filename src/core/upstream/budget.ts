import type { AbortLike } from "./request-abort.js";
/** Why a budget said no: it is full for longer than the caller would wait, or the ask exceeds all of it. */
export class BudgetError extends Error {
  constructor(
    readonly reason: "busy" | "too-large",
    /** What was asked for. */
    readonly bytes: number,
    message: string,
  ) {
    super(message);
    this.name = "BudgetError";
  }
}

interface Waiter {
  bytes: number;
  /** Only wait for room, take nothing. */
  peek: boolean;
  resolve(): void;
  reject(err: unknown): void;
}

/**
 * A count of bytes held at once by everything that draws on it (request bodies being received,
 * upstream answers being read). Holders take before they keep bytes and release when they drop
 * them; a holder that cannot take either gives up at once (`tryTake`) or waits, first come first
 * served, for a bounded time (`take`).
 */
export class ByteBudget {
  private used = 0;
  private readonly waiters: Waiter[] = [];

  constructor(private size: number) {}

  get total(): number {
    return this.size;
  }

  get inUse(): number {
    return this.used;
  }

  get available(): number {
    return Math.max(0, this.size - this.used);
  }

  /** A new size; holders keep what they have, waiters are served if it now fits. */
  resize(total: number): void {
    this.size = total;
    this.drain();
  }

  /** Takes `bytes` if they fit now and nobody waits before us. */
  tryTake(bytes: number): boolean {
    if (this.waiters.length > 0 || this.used + bytes > this.size) return false;
    this.used += bytes;
    return true;
  }

  /** Takes `bytes`, waiting up to `waitMs` for holders to release; rejects with BudgetError or the signal's reason. */
  take(bytes: number, waitMs: number, signal?: AbortLike): Promise<void> {
    if (bytes > this.size)
      return Promise.reject(
        new BudgetError("too-large", bytes, `${bytes} bytes exceed the whole budget of ${this.size}`),
      );
    if (this.tryTake(bytes)) return Promise.resolve();
    return this.enqueue(bytes, false, waitMs, signal);
  }

  /** Waits up to `waitMs` until `bytes` are free, without taking them (a hint before work that will take). */
  room(bytes: number, waitMs: number, signal?: AbortLike): Promise<void> {
    const want = Math.min(bytes, this.size);
    if (this.waiters.length === 0 && this.used + want <= this.size) return Promise.resolve();
    return this.enqueue(want, true, waitMs, signal);
  }

  release(bytes: number): void {
    if (bytes <= 0) return;
    this.used = Math.max(0, this.used - bytes);
    this.drain();
  }

  private enqueue(bytes: number, peek: boolean, waitMs: number, signal?: AbortLike): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<void>((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        const i = this.waiters.indexOf(waiter);
        if (i >= 0) this.waiters.splice(i, 1);
      };
      const waiter: Waiter = {
        bytes,
        peek,
        resolve: () => {
          done();
          resolve();
        },
        reject: (err) => {
          done();
          reject(err);
          this.drain(); // a waiter that gave up may have blocked smaller ones behind it
        },
      };
      const timer = setTimeout(
        () =>
          waiter.reject(
            new BudgetError(
              "busy",
              bytes,
              `no room for ${bytes} bytes within ${waitMs} ms (${this.used} of ${this.size} in use)`,
            ),
          ),
        waitMs,
      );
      const onAbort = () => waiter.reject(signal!.reason);
      signal?.addEventListener("abort", onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }

  private drain(): void {
    while (this.waiters.length > 0) {
      const head = this.waiters[0];
      if (this.used + head.bytes > this.size) return;
      if (!head.peek) this.used += head.bytes;
      head.resolve();
    }
  }
}
