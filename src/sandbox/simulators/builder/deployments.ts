import { checkIdle, type BuildContext } from "./context.js";
import { chargeProject } from "./credits.js";
import { held, holdPrevious } from "./freshness.js";
import { fail, type BuildRoutes } from "./routes.js";
import { serverNotReady } from "./server.js";
import { API, MINUTE, latestPrompt, productionHost, type SimProject } from "./state.js";
import { deploymentView } from "./views.js";

/**
 * Production deployments; they end in `error` while the latest prompt has [deploy-fail]. For a
 * moment after the call, reads still show the previous deployment (freshness.ts, trap T4).
 * SANDBOX_NOT_REACHABLE (HTTP not stated: 409 chosen; nothing charged) answers a deploy while the
 * latest prompt has [app-error] (reason app_error), or the first deploy after an [app-starting]
 * prompt (reason starting).
 */

const DEPLOY_DURATION = 3 * MINUTE;

export function registerDeploymentRoutes(ctx: BuildContext, routes: BuildRoutes): void {
  routes.onProject("POST", "/deployments/deploy", (p) => deploy(ctx, p));
  routes.onProject("GET", "/deployments/status", (p) => deploymentStatus(p, ctx.simNow()));
  ctx.onAdvance((p, now) => advanceDeployment(ctx, p, now));
}

function deploy(ctx: BuildContext, p: SimProject) {
  checkIdle(p, { deployment: true });
  if (p.server.status !== "Active") serverNotReady(ctx, p, "deployment");
  checkAppReachable(p);
  chargeProject(ctx, p, "CREATE_DEPLOYMENT");
  const at = ctx.simNow();
  holdPrevious(ctx, p, "deployment", deploymentView(p));
  startDeployment(ctx, p, at, latestPrompt(p).includes("[deploy-fail]"));
  return {
    projectId: p.projectId,
    status: "deploying",
    message:
      `Deployment started. Poll GET ${API}/projects/${p.projectId}/deployments/status ` +
      "until it is success or error.",
  };
}

/** Deploys the latest version; charges nothing. */
export function startDeployment(ctx: BuildContext, p: SimProject, at: number, fails: boolean): void {
  const latest = p.versions[p.versions.length - 1];
  p.deployment = { status: "deploying", createdAt: at, versionId: latest._id, doneAt: at + DEPLOY_DURATION, fails };
  p.lastModifiedAt = at;
  ctx.log(p, at, "[deploy] Building production bundle");
}

/** [RC] observed `{"status":null,"createdAt":null}` on a never-published project. */
function deploymentStatus(p: SimProject, now: number) {
  const d = held(p, "deployment", now, deploymentView(p));
  return {
    projectId: p.projectId,
    status: d?.status ?? null,
    createdAt: d?.createdAt ?? null,
    ...(d ? { versionId: d.versionId } : {}),
  };
}

/** The [app-error] / [app-starting] markers of the latest prompt ([app-starting] answers once per prompt). */
function checkAppReachable(p: SimProject): void {
  const prompt = latestPrompt(p);
  let reason: "app_error" | "starting" | undefined;
  if (prompt.includes("[app-error]")) reason = "app_error";
  else if (prompt.includes("[app-starting]") && p.appStartingPrompt !== p.conversation.length) {
    p.appStartingPrompt = p.conversation.length;
    reason = "starting";
  }
  if (!reason) return;
  const message =
    reason === "app_error"
      ? "The app in the sandbox answers with errors; fix it before deploying"
      : "The app in the sandbox is still starting; retry shortly";
  fail(409, "SANDBOX_NOT_REACHABLE", message, { reason, httpStatus: reason === "app_error" ? 500 : 503 });
}

function advanceDeployment(ctx: BuildContext, p: SimProject, now: number): void {
  const d = p.deployment;
  if (d?.status !== "deploying" || d.doneAt > now) return;
  d.status = d.fails ? "error" : "success";
  if (d.fails) {
    ctx.log(p, d.doneAt, "[deploy] ERROR Production build failed: type errors in src/pages/Booking.tsx");
    return;
  }
  p.lastSuccessfulDeployAt = d.doneAt;
  p.lastModifiedAt = Math.max(p.lastModifiedAt, d.doneAt);
  ctx.log(p, d.doneAt, `[deploy] Live at https://${productionHost(p.projectId)}`);
}
