import type { BuildContext } from "./context.js";
import type { HeldField, SimProject } from "./state.js";

/**
 * How fresh reads are (reference §1.4 and the traps of §19):
 * - GET /projects/:id is a snapshot cached for `detailsCacheMs` real ms (default 2000: "a few
 *   seconds"); the first read after it expires takes a new one. A successful PATCH (and a DELETE)
 *   of the project discards it (routes.ts). No other call does.
 * - For `startLagMs` real ms after a deploy, recover, import or start-or-restart call, reads still
 *   show the state from before the call (T2, T4, T5): deployments/status and details show the
 *   previous deployment, details show no recovery or import lock yet, and a restarted Active
 *   server still reads Active. The work itself runs from the call on.
 */

/** From now until `startLagMs` real ms later, reads of `field` show what they show now. */
export function holdPrevious(ctx: BuildContext, p: SimProject, field: HeldField, current: unknown): void {
  if (ctx.startLagMs <= 0) return;
  const now = ctx.simNow();
  const value = held(p, field, now, current);
  p.holds = { ...p.holds, [field]: { until: now + ctx.simSpan(ctx.startLagMs), value } };
}

/** What a read of `field` shows at simulated time `now`: the held value while its hold lasts. */
export function held<T>(p: SimProject, field: HeldField, now: number, actual: T): T {
  const hold = p.holds?.[field];
  return hold && now < hold.until ? (hold.value as T) : actual;
}

/** The cached details snapshot, or a new one from `view` once the cache has expired. */
export function cachedDetails(ctx: BuildContext, p: SimProject, view: () => unknown): unknown {
  const realNow = ctx.now();
  const cached = ctx.detailsCache.get(p.projectId);
  if (cached && realNow - cached.at < ctx.detailsCacheMs) return structuredClone(cached.view);
  const fresh = view();
  if (ctx.detailsCacheMs > 0) ctx.detailsCache.set(p.projectId, { at: realNow, view: structuredClone(fresh) });
  return fresh;
}
