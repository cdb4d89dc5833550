/** What the upstream path reads of a signal: a real AbortSignal, or a RequestAbort. */
export interface AbortLike {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: "abort", listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: "abort", listener: () => void): void;
}

/**
 * The one abort handle of an upstream request, which its deadline and the caller's cancellation
 * both end, and which undici, ByteBudget and readBudgeted listen to. An AbortController would do;
 * this stands in for it because each request makes one, and node's EventTarget costs several
 * times more to build and to listen to than this list (bench/README.md, row 3).
 */
export class RequestAbort implements AbortLike {
  aborted = false;
  reason: unknown = undefined;
  private listeners: Array<() => void> = [];

  addEventListener(_type: "abort", listener: () => void, _options?: { once?: boolean }): void {
    if (!this.aborted) this.listeners.push(listener);
  }

  removeEventListener(_type: "abort", listener: () => void): void {
    const i = this.listeners.indexOf(listener);
    if (i >= 0) this.listeners.splice(i, 1);
  }

  /** Like AbortController.abort: once, and each listener once (as `{ once: true }`). */
  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const listeners = this.listeners;
    this.listeners = [];
    for (const listener of listeners) {
      try {
        listener();
      } catch (err) {
        // As an EventTarget does: a listener's error is the process's, not the aborter's.
        process.nextTick(() => {
          throw err;
        });
      }
    }
  }
}
