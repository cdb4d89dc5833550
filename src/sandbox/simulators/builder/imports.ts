import type { BuildContext } from "./context.js";
import type { BuildRoutes } from "./routes.js";
import { MINUTE, type SimProject } from "./state.js";

/**
 * Project imports. The spec shows no import operation, only the lock it puts on a project
 * (`importInProgress`), so tests start one with BuildSimulator.startImport; this area has no routes yet.
 */

const IMPORT_DURATION = 4 * MINUTE;
const IMPORT_LOCK_MAX_AGE = 30 * MINUTE;

export function registerImportRoutes(ctx: BuildContext, _routes: BuildRoutes): void {
  ctx.onAdvance((p, now) => advanceImport(ctx, p, now));
}

/** See BuildSimulator.startImport. */
export function startImport(ctx: BuildContext, p: SimProject, opts: { fail?: boolean; stuck?: boolean }): void {
  const at = ctx.simNow();
  p.importLock = {
    startedAt: at,
    endsAt: opts.stuck ? Number.POSITIVE_INFINITY : at + IMPORT_DURATION,
    failAt: opts.fail ? at + IMPORT_DURATION / 2 : undefined,
  };
  ctx.log(p, at, "[import] Restoring database and source code from export");
}

function advanceImport(ctx: BuildContext, p: SimProject, now: number): void {
  const lock = p.importLock;
  if (!lock) return;
  if (now >= lock.endsAt) {
    p.importLock = null;
    ctx.log(p, lock.endsAt, lock.failAt !== undefined ? "[import] ERROR Import failed" : "[import] Import finished");
    if (lock.failAt === undefined) p.lastModifiedAt = Math.max(p.lastModifiedAt, lock.endsAt);
  } else if (now - lock.startedAt > IMPORT_LOCK_MAX_AGE) {
    p.importLock = null;
  }
}
