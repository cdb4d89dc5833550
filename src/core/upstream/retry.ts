/**
 * How long to wait before attempt `attempt + 1` of a read: the upstream's Retry-After when it sent
 * one, else a jittered exponential backoff from 150 ms; never more than `capMs`.
 */
export function retryDelay(attempt: number, retryAfterMs: number | undefined, capMs: number): number {
  if (retryAfterMs !== undefined) return Math.min(retryAfterMs, capMs);
  const base = 150 * 2 ** attempt;
  return Math.min(capMs, base + Math.random() * base);
}

/** A Retry-After header (seconds or an HTTP date) in ms from now; undefined when unreadable. */
export function parseRetryAfter(value: string): number | undefined {
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** Resolves after `ms`, or rejects as soon as the signal aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason ?? new Error("aborted"));
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason ?? new Error("aborted"));
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
