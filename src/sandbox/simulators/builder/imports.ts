import type { BuildContext } from "./context.js";
import { holdPrevious } from "./freshness.js";
import type { BuildRoutes } from "./routes.js";
import { MINUTE, SANDBOX_APPS_DOMAIN, type SimProject } from "./state.js";
import { addVersion } from "./versions.js";
import { importView } from "./views.js";

/**
 * The import lock a project shows as `importInProgress` while an import runs. POST import
 * (transfer.ts) takes it; tests may also put one with BuildSimulator.startImport.
 */

const IMPORT_DURATION = 4 * MINUTE;
const IMPORT_LOCK_MAX_AGE = 30 * MINUTE;

export function registerImportRoutes(ctx: BuildContext, _routes: BuildRoutes): void {
  ctx.onAdvance((p, now) => advanceImport(ctx, p, now));
}

/** See BuildSimulator.startImport. */
export function startImport(
  ctx: BuildContext,
  p: SimProject,
  opts: { fail?: boolean; stuck?: boolean; onSuccess?: (at: number) => void },
): void {
  const at = ctx.simNow();
  // T2: for a moment the details still show no lock (freshness.ts).
  holdPrevious(ctx, p, "importInProgress", importView(p, at));
  p.importLock = {
    startedAt: at,
    endsAt: opts.stuck ? Number.POSITIVE_INFINITY : at + IMPORT_DURATION,
    failAt: opts.fail ? at + IMPORT_DURATION / 2 : undefined,
    onSuccess: opts.onSuccess,
  };
  ctx.log(p, at, "[import] Restoring database and source code from export");
}

function advanceImport(ctx: BuildContext, p: SimProject, now: number): void {
  const lock = p.importLock;
  if (!lock) return;
  if (now >= lock.endsAt) {
    p.importLock = null;
    ctx.log(p, lock.endsAt, lock.failAt !== undefined ? "[import] ERROR Import failed" : "[import] Import finished");
    if (lock.failAt === undefined) {
      p.lastModifiedAt = Math.max(p.lastModifiedAt, lock.endsAt);
      // T3: a finished import shows a running server and a preview (a failed one does not).
      p.server = { status: "Active", readyAt: lock.endsAt };
      p.serverStarted = true;
      p.previewImageUrl ??= `https://previews.${SANDBOX_APPS_DOMAIN}/${p.projectId}/import.png`;
      // §7: every import makes a version (POST import's own success step names its source).
      if (lock.onSuccess) lock.onSuccess(lock.endsAt);
      else addVersion(ctx, p, lock.endsAt, `Version ${p.versions.length + 1}`, "Import", "");
    }
  } else if (now - lock.startedAt > IMPORT_LOCK_MAX_AGE) {
    p.importLock = null;
  }
}
