import { checkIdle, type BuildContext } from "./context.js";
import { fail, type BuildRoutes } from "./routes.js";
import {
  API,
  MINUTE,
  SANDBOX_APPS_DOMAIN,
  SECOND,
  SERVER_BOOT,
  hash,
  iso,
  round,
  type AgentRun,
  type Attachment,
  type Json,
  type Message,
  type RunOptions,
  type RunStep,
  type SimProject,
} from "./state.js";
import { bodyOf, validateInputFiles } from "./validation.js";
import { addVersion } from "./versions.js";
import { agentStatusOf, messageView } from "./views.js";

/**
 * The agent: a run is a list of timed steps derived from the prompt, each charging its share of
 * the run's cost when reached; the final step adds a version (or fails and refunds).
 */

export const AGENT_MIN_CREDITS = 5;
export const DEFAULT_RUN_OPTIONS: RunOptions = { model: "opus", effort: "high", fastMode: false };

export function registerAgentRoutes(ctx: BuildContext, routes: BuildRoutes): void {
  routes.onProject("POST", "/agent/start", (p, req) => agentStart(ctx, p, bodyOf(req)));
  routes.onProject("GET", "/agent/status", (p) => agentStatus(p));
  routes.onProject("GET", "/agent/full-conversation", (p) => ({ conversation: p.conversation.map(messageView) }));
  routes.onProject("POST", "/agent/stop", (p) => agentStop(ctx, p));
  ctx.onAdvance((p, now) => advanceRun(ctx, p, now));
}

function agentStart(ctx: BuildContext, p: SimProject, body: Json) {
  if (typeof body.prompt !== "string" || body.prompt.trim() === "") {
    fail(400, "MISSING_PROMPT", "prompt is required and must not be empty");
  }
  const inputFiles = validateInputFiles(body.inputFiles);
  checkIdle(p, { deployment: true });
  if (ctx.wallet.credits() < AGENT_MIN_CREDITS) {
    fail(402, "INSUFFICIENT_CREDITS", `Starting the agent needs at least ${AGENT_MIN_CREDITS} credits`);
  }
  startRun(ctx, p, body.prompt, ctx.simNow(), { ...DEFAULT_RUN_OPTIONS }, inputFiles);
  return {
    projectId: p.projectId,
    status: "init",
    message:
      `The agent started. Poll GET ${API}/projects/${p.projectId}/agent/status ` +
      "every 10-15 seconds until status is done.",
  };
}

function agentStatus(p: SimProject) {
  const run = p.run;
  return {
    projectId: p.projectId,
    status: agentStatusOf(p),
    startedAt: run ? iso(run.startedAt) : null,
    creditsSpent: run?.creditsSpent ?? 0,
    realtimeConversation: run ? p.conversation.slice(run.conversationStart).map(messageView) : [],
  };
}

function agentStop(ctx: BuildContext, p: SimProject) {
  const run = p.run;
  if (!run || run.state !== "running") fail(409, "AGENT_NOT_RUNNING", "The agent is not running on this project");
  const at = ctx.simNow();
  run.state = "stopped";
  p.conversation.push({ author: "agent", message: "Stopped at your request.", messageType: "regular", createdAt: at });
  ctx.log(p, at, "[agent] Run stopped by the user");
  return { projectId: p.projectId, status: "done", message: "The agent was stopped" };
}

/** Starts a run (markers in the prompt: [minutes=N], [fail], [secrets]); nothing is charged until its steps are reached. */
export function startRun(
  ctx: BuildContext,
  p: SimProject,
  prompt: string,
  at: number,
  options: RunOptions,
  inputFiles: Attachment[],
): AgentRun {
  const minutesMarker = /\[minutes=(\d+(?:\.\d+)?)\]/.exec(prompt);
  const minutes = minutesMarker ? Math.max(0.05, Number(minutesMarker[1])) : 5 + (hash(prompt) % 36);
  const run: AgentRun = {
    prompt,
    startedAt: at,
    cost: 10 + (hash(`cost:${prompt}`) % 31),
    creditsSpent: 0,
    charged: { recurrent: 0, oneTime: 0 },
    steps: runSteps(at, minutes * MINUTE, prompt.includes("[secrets]")),
    nextStep: 0,
    state: "running",
    fails: prompt.includes("[fail]"),
    conversationStart: p.conversation.length,
    options,
    inputFiles,
  };
  p.conversation.push({ author: "user", message: prompt, messageType: "regular", createdAt: at });
  p.run = run;
  p.lastModifiedAt = at;
  if (p.server.status === "Archived") p.server = { status: "Unarchiving", readyAt: at + SERVER_BOOT };
  ctx.log(p, at, `[agent] Run started (${options.model}, effort ${options.effort})`);
  advanceRun(ctx, p, at);
  return run;
}

const BUILDING_TEXTS = [
  "Planning the data model and pages",
  "Creating pages and components",
  "Wiring up the backend API and database",
  "Polishing styles and checking the build",
];

/** starting at once, four building messages at 20/40/60/80 %, the final message at the end. */
function runSteps(startedAt: number, duration: number, needsSecrets: boolean): RunStep[] {
  const steps: RunStep[] = [{ at: startedAt, fraction: 0, kind: "starting", text: "Starting to work on your request" }];
  BUILDING_TEXTS.forEach((text, i) => {
    const fraction = (i + 1) / 5;
    const step: RunStep = { at: startedAt + Math.round(duration * fraction), fraction, kind: "building", text };
    if (needsSecrets && i === 2) {
      step.text = "The checkout needs a Stripe key: please add the STRIPE_API_KEY secret";
      step.needsSecrets = true;
    }
    steps.push(step);
  });
  steps.push({ at: startedAt + duration, fraction: 1, kind: "final", text: "" });
  return steps;
}

function advanceRun(ctx: BuildContext, p: SimProject, now: number): void {
  const run = p.run;
  while (run && run.state === "running" && run.nextStep < run.steps.length && run.steps[run.nextStep].at <= now) {
    const step = run.steps[run.nextStep];
    run.nextStep += 1;
    applyStep(ctx, p, run, step);
  }
}

function applyStep(ctx: BuildContext, p: SimProject, run: AgentRun, step: RunStep): void {
  if (!chargeRunStep(ctx, p, run, step)) return;
  if (step.kind === "final") {
    if (run.fails) failRun(ctx, p, run, step.at);
    else finishRun(ctx, p, run, step.at);
    return;
  }
  const message: Message = { author: "agent", message: step.text, messageType: step.kind, createdAt: step.at };
  if (step.needsSecrets) {
    const isProvided = p.secrets.some((s) => s.secretName === "STRIPE_API_KEY");
    message.secretKeysNeeded = {
      STRIPE_API_KEY: { isProvided, description: "Stripe secret key used by the checkout backend" },
    };
  }
  p.conversation.push(message);
  ctx.log(p, step.at, `[agent] ${step.text}`);
  if (step.kind === "building") ctx.log(p, step.at + SECOND, "[vite] hmr update /src/pages/Home.tsx");
}

/** Charges the run up to this step's share of its cost; false (and the run ends) when credits or the project cap run out. */
function chargeRunStep(ctx: BuildContext, p: SimProject, run: AgentRun, step: RunStep): boolean {
  const target = round(run.cost * step.fraction);
  const delta = round(target - run.creditsSpent);
  if (delta <= 0) return true;
  // The cap is compared with everything the project spent; the simulator does not reset it monthly.
  const cap = p.creditLimits.maxDevelopmentCreditsPerMonth;
  const overCap = cap !== null && p.totalCreditsSpent + delta > cap;
  const charge = overCap ? undefined : ctx.wallet.charge(delta);
  if (!charge) {
    const reason = overCap ? "The project's monthly development credit limit was reached" : "The account ran out of credits";
    run.state = "limit-reached";
    const message = `${reason}; the agent stopped.`;
    p.conversation.push({ author: "agent", message, messageType: "limit-reached", createdAt: step.at });
    ctx.log(p, step.at, `[agent] Stopped: ${reason}`);
    return false;
  }
  run.charged = {
    recurrent: round(run.charged.recurrent + charge.recurrent),
    oneTime: round(run.charged.oneTime + charge.oneTime),
  };
  run.creditsSpent = target;
  p.totalCreditsSpent = round(p.totalCreditsSpent + delta);
  return true;
}

function finishRun(ctx: BuildContext, p: SimProject, run: AgentRun, at: number): void {
  const n = p.versions.length + 1;
  const version = addVersion(ctx, p, at, `Version ${n}`, commitMessageFor(run.prompt), run.prompt);
  p.conversation.push({
    author: "agent",
    message: `Done! I implemented your request. The preview is live at https://${p.projectId}.dev.${SANDBOX_APPS_DOMAIN}`,
    messageType: "finished",
    createdAt: at,
    versionId: version._id,
    gitDiffUrl: `https://git.${SANDBOX_APPS_DOMAIN}/${p.projectId}/commit/${version._id}`,
  });
  run.state = "finished";
  p.previewImageUrl = `https://previews.${SANDBOX_APPS_DOMAIN}/${p.projectId}/${version._id}.png`;
  p.lastModifiedAt = at;
  ctx.log(p, at, "[build] Compiled successfully in 1.8s");
}

function failRun(ctx: BuildContext, p: SimProject, run: AgentRun, at: number): void {
  ctx.wallet.refund(run.charged);
  p.totalCreditsSpent = round(p.totalCreditsSpent - run.creditsSpent);
  run.charged = { recurrent: 0, oneTime: 0 };
  run.creditsSpent = 0;
  run.state = "failed";
  p.conversation.push({
    author: "agent",
    message: "The build failed: the dev server did not compile after my changes. The credits of this run were refunded.",
    messageType: "error",
    createdAt: at,
  });
  ctx.log(p, at, "[build] ERROR Build failed: Cannot find module './components/Checkout'");
}

function commitMessageFor(prompt: string): string {
  const clean = prompt.replace(/\[[^\]]*\]/g, "").replace(/\s+/g, " ").trim();
  return clean.length > 72 ? `${clean.slice(0, 69)}...` : clean;
}
