import type { BuildContext } from "./context.js";
import { chargeProject } from "./credits.js";
import { holdPrevious } from "./freshness.js";
import { fail, type BuildRoutes } from "./routes.js";
import { SANDBOX_APPS_DOMAIN, SECOND, SERVER_BOOT, iso, type SimProject } from "./state.js";

/**
 * The project's development server and its logs. After start-or-restart of an Active server, the
 * details still read Active for startLagMs (freshness.ts, trap T5: "not yet transitioned"); then it
 * reads Starting for SERVER_BOOT, then Active.
 */
export function registerServerRoutes(ctx: BuildContext, routes: BuildRoutes): void {
  routes.onProject("POST", "/agent/server/start-or-restart", (p) => restartServer(ctx, p));
  routes.onProject("GET", "/backend/dev/logs", (p) => ({ logs: logsText(ctx, p) }));
  ctx.onAdvance((p, now) => advanceServer(ctx, p, now));
}

function restartServer(ctx: BuildContext, p: SimProject) {
  if (p.run?.state === "running")
    fail(409, "AGENT_RUNNING", "The agent is running on this project; wait until it is done");
  if (p.deployment?.status === "deploying")
    fail(409, "DEPLOYMENT_RUNNING", "A deployment is running on this project; wait until it ends");
  if (p.recovery?.status === "recovering")
    fail(409, "RECOVERY_RUNNING", "A version recovery is running on this project");
  chargeProject(ctx, p, "START_SERVER");
  const wasActive = p.server.status === "Active";
  holdPrevious(ctx, p, "agentServerStatus", p.server.status);
  startServer(ctx, p, ctx.simNow());
  if (wasActive) p.server.readyAt += ctx.simSpan(ctx.startLagMs);
  return { message: "Server start/restart initiated", status: "starting" };
}

function startServer(ctx: BuildContext, p: SimProject, at: number): void {
  p.server = { status: "Starting", readyAt: at + SERVER_BOOT };
  ctx.log(p, at, "[server] Starting development server");
}

/**
 * Deploy or recover on a server that is not Active (§1.6): START_SERVER charged, then 409. A server
 * already on its way up (Creating, Starting, Unarchiving) keeps its boot time (assumed: §1.6 says
 * the service starts it, not whether a start in progress begins again). Import calls it for an
 * asleep target (its charge is assumed, transfer.ts).
 */
export function serverNotReady(ctx: BuildContext, p: SimProject, what = "call"): never {
  chargeProject(ctx, p, "START_SERVER");
  if (!["Creating", "Starting", "Unarchiving"].includes(p.server.status)) startServer(ctx, p, ctx.simNow());
  fail(
    409,
    "SERVER_NOT_READY",
    `The dev server is not running; it is being started. Retry the ${what} once agentServerStatus is Active`,
  );
}

function advanceServer(ctx: BuildContext, p: SimProject, now: number): void {
  const { status, readyAt } = p.server;
  if ((status === "Creating" || status === "Starting" || status === "Unarchiving") && readyAt <= now) {
    p.server = { status: "Active", readyAt };
    p.serverStarted = true;
    ctx.log(p, readyAt, `[server] Dev server listening on https://${p.projectId}.dev.${SANDBOX_APPS_DOMAIN}`);
    ctx.log(p, readyAt + 2 * SECOND, "[api] GET /api/health 200 3ms");
  }
}

/** The last 200 lines up to the current simulated time, oldest first. */
function logsText(ctx: BuildContext, p: SimProject): string {
  const now = ctx.simNow();
  return p.logs
    .filter((l) => l.at <= now)
    .sort((a, b) => a.at - b.at)
    .slice(-200)
    .map((l) => `${iso(l.at)} ${l.line}`)
    .join("\n");
}
