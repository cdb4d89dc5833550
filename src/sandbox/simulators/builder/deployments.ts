import { checkIdle, type BuildContext } from "./context.js";
import { chargeProject } from "./credits.js";
import type { BuildRoutes } from "./routes.js";
import { serverNotReady } from "./server.js";
import { API, MINUTE, iso, latestPrompt, productionHost, type SimProject } from "./state.js";

/** Production deployments; they end in `error` while the latest prompt has [deploy-fail]. */

const DEPLOY_DURATION = 3 * MINUTE;

export function registerDeploymentRoutes(ctx: BuildContext, routes: BuildRoutes): void {
  routes.onProject("POST", "/deployments/deploy", (p) => deploy(ctx, p));
  routes.onProject("GET", "/deployments/status", (p) => deploymentStatus(p));
  ctx.onAdvance((p, now) => advanceDeployment(ctx, p, now));
}

function deploy(ctx: BuildContext, p: SimProject) {
  checkIdle(p, { deployment: true });
  if (p.server.status !== "Active") serverNotReady(ctx, p);
  chargeProject(ctx, p, "CREATE_DEPLOYMENT");
  const at = ctx.simNow();
  startDeployment(ctx, p, at, latestPrompt(p).includes("[deploy-fail]"));
  return {
    projectId: p.projectId,
    status: "deploying",
    message: `Deployment started. Poll GET ${API}/projects/${p.projectId}/deployments/status until it is success or error.`,
  };
}

/** Deploys the latest version; charges nothing. */
export function startDeployment(ctx: BuildContext, p: SimProject, at: number, fails: boolean): void {
  const latest = p.versions[p.versions.length - 1];
  p.deployment = { status: "deploying", createdAt: at, versionId: latest._id, doneAt: at + DEPLOY_DURATION, fails };
  p.lastModifiedAt = at;
  ctx.log(p, at, "[deploy] Building production bundle");
}

function deploymentStatus(p: SimProject) {
  const d = p.deployment;
  return {
    projectId: p.projectId,
    status: d ? d.status : null,
    createdAt: d ? iso(d.createdAt) : null,
    versionId: d ? d.versionId : null,
  };
}

function advanceDeployment(ctx: BuildContext, p: SimProject, now: number): void {
  const d = p.deployment;
  if (!d || d.status !== "deploying" || d.doneAt > now) return;
  d.status = d.fails ? "error" : "success";
  if (d.fails) {
    ctx.log(p, d.doneAt, "[deploy] ERROR Production build failed: type errors in src/pages/Booking.tsx");
    return;
  }
  p.lastSuccessfulDeployAt = d.doneAt;
  p.lastModifiedAt = Math.max(p.lastModifiedAt, d.doneAt);
  ctx.log(p, d.doneAt, `[deploy] Live at https://${productionHost(p.projectId)}`);
}
