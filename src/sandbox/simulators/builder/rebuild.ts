import type { BuildContext } from "./context.js";
import { chargeProject } from "./credits.js";
import { accountPlan, hasSandbox, sourceOf } from "./files.js";
import { fail, type BuildRoutes } from "./routes.js";
import { HOUR, MINUTE, SANDBOX_APPS_DOMAIN, iso, type SimProject } from "./state.js";

/**
 * Rebuilds (reference §11): a cold build in the background that makes written files live. It ends
 * in `success`, or in `error` (in a 200) when a source file holds the marker [rebuild-fail].
 */

const REBUILD_DURATION = 2 * MINUTE;
/** Rebuilds per project per real hour (the plan numbers are not stated). */
const REBUILDS_PER_HOUR = { paid: 30, free: 3 };

export function registerRebuildRoutes(ctx: BuildContext, routes: BuildRoutes): void {
  routes.onProject("POST", "/rebuild", (p) => rebuild(ctx, p));
  routes.onProject("GET", "/rebuild/status", (p) => status(ctx, p));
  ctx.onAdvance((p, now) => advanceRebuild(ctx, p, now));
}

/** The first source file that breaks the build, if any. */
function brokenFile(p: SimProject): string | undefined {
  for (const [path, bytes] of sourceOf(p).files) if (bytes.includes("[rebuild-fail]")) return path;
  return undefined;
}

function rebuild(ctx: BuildContext, p: SimProject) {
  if (!hasSandbox(p)) fail(400, "NO_SANDBOX", "The project has no sandbox yet; run the agent once first");
  if (p.rebuild?.status === "rebuilding") fail(409, "REBUILD_RUNNING", "A rebuild is already running on this project");
  if (p.run?.state === "running")
    fail(409, "AGENT_RUNNING", "The agent is running on this project; wait until it is done");
  if (p.deployment?.status === "deploying")
    fail(409, "DEPLOYMENT_RUNNING", "A deployment is running on this project; wait until it ends");
  if (p.server.status !== "Active")
    fail(400, "SANDBOX_NOT_ACTIVE", `The sandbox is not active (${p.server.status}); wait until it is`);
  const realNow = ctx.now();
  const history = (p.rebuild?.history ?? []).filter((t) => realNow - t < HOUR);
  const allowed = REBUILDS_PER_HOUR[accountPlan(ctx)];
  if (history.length >= allowed)
    fail(400, "REBUILD_LIMIT_REACHED", `The plan allows ${allowed} rebuilds per hour; wait or upgrade`);
  chargeProject(ctx, p, "REBUILD_PROJECT");
  const at = ctx.simNow();
  const broken = brokenFile(p);
  p.rebuild = {
    status: "rebuilding",
    startedAt: at,
    doneAt: at + REBUILD_DURATION,
    failure: broken
      ? { errorCode: "BUILD_FAILED", errorMessage: `npm run build failed: Type error in ${broken}` }
      : undefined,
    history: [...history, realNow],
  };
  ctx.log(p, at, "[rebuild] rm -rf .next && npm run build && npm start");
  return {
    projectId: p.projectId,
    status: "rebuilding",
    startedAt: iso(at),
    message: "Rebuild started; poll rebuild/status until it is success or error",
  };
}

function status(ctx: BuildContext, p: SimProject) {
  const r = p.rebuild;
  if (!r) return { projectId: p.projectId, status: "idle", startedAt: null, finishedAt: null, elapsedSeconds: null };
  const end = r.status === "rebuilding" ? ctx.simNow() : r.doneAt;
  return {
    projectId: p.projectId,
    status: r.status,
    startedAt: iso(r.startedAt),
    finishedAt: r.status === "rebuilding" ? null : iso(r.doneAt),
    elapsedSeconds: Math.round((end - r.startedAt) / 1000),
    ...(r.status === "success" ? { livePreviewUrl: `https://${p.projectId}.dev.${SANDBOX_APPS_DOMAIN}` } : {}),
    ...(r.status === "error" && r.failure ? r.failure : {}),
  };
}

function advanceRebuild(ctx: BuildContext, p: SimProject, now: number): void {
  const r = p.rebuild;
  if (r?.status !== "rebuilding" || r.doneAt > now) return;
  r.status = r.failure ? "error" : "success";
  ctx.log(
    p,
    r.doneAt,
    r.failure ? `[rebuild] ERROR ${r.failure.errorMessage}` : "[rebuild] Compiled successfully; serving the new build",
  );
}
