import { checkIdle, type BuildContext } from "./context.js";
import { chargeProject } from "./credits.js";
import { holdPrevious } from "./freshness.js";
import { fail, type BuildRoutes } from "./routes.js";
import { serverNotReady } from "./server.js";
import { MINUTE, iso, sha1, type SimProject, type Version } from "./state.js";
import { intParam } from "./validation.js";
import { recoveryView } from "./views.js";

/**
 * Versions and their recovery. A recovery ends in a new version carrying `recoveredVersionId`, or in
 * `error` for a [recover-fail] prompt. The list is newest first (ordering not stated: assumed). For
 * a moment after the call the details still show no recovery (freshness.ts, trap T2).
 */

const RECOVERY_DURATION = 2 * MINUTE;

export function registerVersionRoutes(ctx: BuildContext, routes: BuildRoutes): void {
  routes.onProject("GET", "/versions", (p, req) => listVersions(p, req.query));
  routes.onProject("POST", "/versions/:versionId/recover", (p, req) => recover(ctx, p, req.params.versionId));
  ctx.onAdvance((p, now) => advanceRecovery(ctx, p, now));
}

export function addVersion(
  ctx: BuildContext,
  p: SimProject,
  at: number,
  name: string,
  commitMessage: string,
  prompt: string,
): Version {
  const _id = ctx.newId();
  const version: Version = {
    _id,
    name,
    commitMessage,
    prompt,
    createdAt: at,
    commitSha: sha1(`commit:${p.projectId}:${_id}`),
  };
  p.versions.push(version);
  return version;
}

function listVersions(p: SimProject, query: URLSearchParams) {
  // §1.2: the maximum is not stated, so none is applied; a limit that is not a whole number of at
  // least 1 answers LIST_VERSIONS_ERROR (assumed: the code of the operation's internal error).
  const limit = intParam(query, "limit", 20, 1, Number.MAX_SAFE_INTEGER, "LIST_VERSIONS_ERROR");
  const skip = intParam(query, "skip", 0, 0, Number.MAX_SAFE_INTEGER, "LIST_VERSIONS_ERROR");
  const newestFirst = [...p.versions].reverse();
  return {
    versions: newestFirst.slice(skip, skip + limit).map((v) => ({ ...v, createdAt: iso(v.createdAt) })),
    totalCount: p.versions.length,
  };
}

function recover(ctx: BuildContext, p: SimProject, versionId: string) {
  const version = p.versions.find((v) => v._id === versionId);
  if (!version) fail(404, "VERSION_NOT_FOUND", `Version ${versionId} does not exist in ${p.projectId}`);
  checkIdle(p, { deployment: true });
  if (p.server.status !== "Active") serverNotReady(ctx, p, "recovery");
  chargeProject(ctx, p, "RECOVER_VERSION");
  const at = ctx.simNow();
  holdPrevious(ctx, p, "versionRecovery", recoveryView(p));
  p.recovery = {
    status: "recovering",
    versionId,
    startedAt: at,
    doneAt: at + RECOVERY_DURATION,
    fails: version.prompt.includes("[recover-fail]"),
  };
  ctx.log(p, at, `[recover] Restoring ${version.name}`);
  const message = "Recovery started; poll the project's versionRecovery until it is null";
  return { projectId: p.projectId, versionId, status: "recovering", message };
}

function advanceRecovery(ctx: BuildContext, p: SimProject, now: number): void {
  const r = p.recovery;
  if (r?.status !== "recovering" || r.doneAt > now) return;
  if (r.fails) {
    r.status = "error";
    r.errorMessage = "The recovered version did not build; the project was left unchanged";
    ctx.log(p, r.doneAt, `[recover] ERROR Recovering ${r.versionId} failed`);
    return;
  }
  const source = p.versions.find((v) => v._id === r.versionId);
  const made = addVersion(
    ctx,
    p,
    r.doneAt,
    `Version ${p.versions.length + 1}`,
    `Recover ${source?.name ?? r.versionId}`,
    "",
  );
  made.recoveredVersionId = r.versionId;
  p.recovery = null;
  p.lastModifiedAt = Math.max(p.lastModifiedAt, r.doneAt);
  ctx.log(p, r.doneAt, `[recover] Recovered ${r.versionId}`);
}
