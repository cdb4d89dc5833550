/**
 * Limits. Not shown in the spec: behaviour when exceeded. We answer 429 RATE_LIMITED (sliding
 * 60-second window over all authenticated requests) or 429 TRY_ON_LIMIT_REACHED (UTC calendar
 * month), both with Retry-After in seconds.
 */

export type Plan = "free" | "professional";

export const PLAN_LIMITS: Record<Plan, { requestsPerMinute: number; tryOnsPerMonth: number }> = {
  free: { requestsPerMinute: 60, tryOnsPerMonth: 100 },
  professional: { requestsPerMinute: 600, tryOnsPerMonth: 10_000 },
};

const MINUTE_MS = 60_000;

export class SlidingWindow {
  private stamps: number[] = [];

  /** Records a request at `now`, or returns the seconds to wait when `limit` is reached. */
  take(now: number, limit: number): number | undefined {
    while (this.stamps.length > 0 && this.stamps[0] <= now - MINUTE_MS) this.stamps.shift();
    if (this.stamps.length >= limit) {
      return Math.max(1, Math.ceil((this.stamps[0] + MINUTE_MS - now) / 1000));
    }
    this.stamps.push(now);
    return undefined;
  }
}

export function monthKey(ms: number): string {
  return new Date(ms).toISOString().slice(0, 7);
}

export function secondsToNextMonth(ms: number): number {
  const d = new Date(ms);
  const next = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  return Math.max(1, Math.ceil((next - ms) / 1000));
}
