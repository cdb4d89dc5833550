import type { BuildContext } from "./context.js";
import { fail, type BuildRoutes } from "./routes.js";
import {
  MINUTE,
  SANDBOX_APPS_DOMAIN,
  SECOND,
  SERVER_BOOT,
  hash,
  iso,
  round,
  type AgentRun,
  type Attachment,
  type Message,
  type RunOptions,
  type RunStep,
  type SimProject,
} from "./state.js";
import { addVersion } from "./versions.js";
import { agentStatusOf, batchActive, batchView, messageView } from "./views.js";

/**
 * The agent: a run is a list of timed steps derived from the prompt; the final step adds a version
 * (or fails and refunds). Billing per reference §1.7: UPFRONT_CREDITS when a prompt starts, the
 * rest of its price (10-40, from the prompt) when it finishes; a prompt that outlasts the run
 * budget is stopped there and billed flat; a failed prompt is refunded. A short balance never stops
 * a run: the wallet goes to 0 and the shortfall is absorbed. POST agent/start is in batches.ts.
 */

/** Below this balance agent/start answers 402 ("a hard minimum far below a prompt's price"; value assumed). */
export const AGENT_MIN_CREDITS = 5;
export const UPFRONT_CREDITS = 10;
/**
 * A prompt stopped at its budget costs 60 when the balance is healthy, else 50; "healthy" (not
 * stated) is >= 100, the low-credit e-mail line.
 */
const BUDGET_PRICE = { healthy: 60, low: 50 } as const;
const HEALTHY_BALANCE = 100;
export const DEFAULT_RUN_OPTIONS: RunOptions = { model: "opus", effort: "high", fastMode: false };

export function registerAgentRoutes(ctx: BuildContext, routes: BuildRoutes): void {
  const stamp = (m: Message) => messageView(m, (at) => ctx.wallTime(at));
  routes.onProject("GET", "/agent/status", (p) => agentStatus(p, stamp));
  routes.onProject("GET", "/agent/full-conversation", (p) => ({ conversation: p.conversation.map(stamp) }));
  routes.onProject("POST", "/agent/stop", (p) => agentStop(ctx, p));
  ctx.onAdvance((p, now) => advanceRun(ctx, p, now));
}

/** The project's development cap would be passed by spending `amount` more (the simulator never resets it monthly). */
export function overDevelopmentCap(p: SimProject, amount: number): boolean {
  const cap = p.creditLimits.maxDevelopmentCreditsPerMonth;
  return cap !== null && p.totalCreditsSpent + amount > cap;
}

/** Single run: its own messages. Batch: every message since the batch started. */
function agentStatus(p: SimProject, stamp: (m: Message) => unknown) {
  const run = p.run;
  const batch = p.batch;
  const inBatch = batch !== undefined && (batchActive(batch) || run?.batchOrder !== undefined);
  const from = inBatch ? batch.conversationStart : run?.conversationStart;
  return {
    projectId: p.projectId,
    status: agentStatusOf(p),
    startedAt: run ? iso(run.startedAt) : null,
    // §4: present when done; kept while a prompt runs (assumed); absent when the project never ran.
    ...(run ? { creditsSpent: run.creditsSpent } : {}),
    realtimeConversation: from === undefined ? [] : p.conversation.slice(from).map(stamp),
    ...(batch ? { multiPrompt: batchView(batch) } : {}),
  };
}

/**
 * Stopping keeps what the prompt was charged at its start (not stated). A batch in flight is
 * cancelled (not stated).
 */
function agentStop(ctx: BuildContext, p: SimProject) {
  const run = p.run;
  const running = run?.state === "running";
  const batch = p.batch && batchActive(p.batch) ? p.batch : undefined;
  if (!running && !batch) fail(400, "NO_PROCESS_RUNNING", "No agent process is running on this project");
  const at = ctx.simNow();
  if (run && running) {
    run.state = "stopped";
    run.endedAt = at;
    p.conversation.push({
      author: "agent",
      message: "Stopped at your request.",
      messageType: "regular",
      createdAt: at,
    });
    ctx.log(p, at, "[agent] Run stopped by the user");
  }
  if (batch) {
    batch.status = "cancelled";
    batch.updatedAt = at;
    for (const item of batch.prompts) if (item.status === "executing") item.status = "failed";
    ctx.log(p, at, "[agent] Multi-prompt batch cancelled");
  }
  return { message: "Agent stop signal sent" };
}

/**
 * Starts a run (markers in the prompt: [minutes=N], [fail], [secrets]) and takes its upfront
 * credits; a prompt longer than the run budget stops at the budget.
 */
export function startRun(
  ctx: BuildContext,
  p: SimProject,
  prompt: string,
  at: number,
  options: RunOptions,
  inputFiles: Attachment[],
  batchOrder?: number,
): AgentRun {
  const minutesMarker = /\[minutes=(\d+(?:\.\d+)?)\]/.exec(prompt);
  const minutes = minutesMarker ? Math.max(0.05, Number(minutesMarker[1])) : 5 + (hash(prompt) % 36);
  const overBudget = minutes > ctx.runBudgetMinutes;
  const run: AgentRun = {
    prompt,
    startedAt: at,
    cost: 10 + (hash(`cost:${prompt}`) % 31),
    creditsSpent: 0,
    charged: { recurrent: 0, oneTime: 0 },
    steps: runSteps(at, Math.min(minutes, ctx.runBudgetMinutes) * MINUTE, prompt.includes("[secrets]")),
    nextStep: 0,
    state: "running",
    fails: prompt.includes("[fail]"),
    conversationStart: p.conversation.length,
    options,
    inputFiles,
    overBudget,
    ...(batchOrder !== undefined ? { batchOrder } : {}),
  };
  p.conversation.push({ author: "user", message: prompt, messageType: "regular", createdAt: at });
  p.run = run;
  p.lastModifiedAt = at;
  if (p.server.status === "Archived") p.server = { status: "Unarchiving", readyAt: at + SERVER_BOOT };
  ctx.log(p, at, `[agent] Run started (${options.model}, effort ${options.effort})`);
  bill(ctx, p, run, UPFRONT_CREDITS);
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

export function advanceRun(ctx: BuildContext, p: SimProject, now: number): void {
  const run = p.run;
  while (run && run.state === "running" && run.nextStep < run.steps.length && run.steps[run.nextStep].at <= now) {
    const step = run.steps[run.nextStep];
    run.nextStep += 1;
    applyStep(ctx, p, run, step);
  }
}

function applyStep(ctx: BuildContext, p: SimProject, run: AgentRun, step: RunStep): void {
  if (step.kind === "final") {
    run.endedAt = step.at;
    if (run.fails) failRun(ctx, p, run, step.at);
    else if (run.overBudget) stopAtBudget(ctx, p, run, step.at);
    else finishRun(ctx, p, run, step.at);
    return;
  }
  const message: Message = { author: "agent", message: step.text, messageType: step.kind, createdAt: step.at };
  if (step.needsSecrets) {
    // §4 [RC]: isProvided is "practically always false", even once the secret exists; clients
    // compare names with details secrets.
    message.secretKeysNeeded = {
      STRIPE_API_KEY: { isProvided: false, description: "Stripe secret key used by the checkout backend" },
    };
  }
  p.conversation.push(message);
  ctx.log(p, step.at, `[agent] ${step.text}`);
  if (step.kind === "building") ctx.log(p, step.at + SECOND, "[vite] hmr update /src/pages/Home.tsx");
}

/**
 * Bills `amount` to the run: the wallet gives what it has (the shortfall is absorbed, §1.7) and
 * the project's development cap bounds what is billed after the start.
 */
function bill(ctx: BuildContext, p: SimProject, run: AgentRun, amount: number): void {
  const cap = p.creditLimits.maxDevelopmentCreditsPerMonth;
  const billed = round(cap === null ? amount : Math.max(0, Math.min(amount, cap - p.totalCreditsSpent)));
  if (billed <= 0) return;
  const taken = ctx.wallet.chargeUpTo(billed);
  run.charged = {
    recurrent: round(run.charged.recurrent + taken.recurrent),
    oneTime: round(run.charged.oneTime + taken.oneTime),
  };
  run.creditsSpent = round(run.creditsSpent + billed);
  p.totalCreditsSpent = round(p.totalCreditsSpent + billed);
}

/** The prompt used its whole time budget: billed a flat price for the whole prompt, no version. */
function stopAtBudget(ctx: BuildContext, p: SimProject, run: AgentRun, at: number): void {
  const price = ctx.wallet.credits() >= HEALTHY_BALANCE ? BUDGET_PRICE.healthy : BUDGET_PRICE.low;
  bill(ctx, p, run, price - run.creditsSpent);
  run.state = "limit-reached";
  const message =
    `The prompt reached its time limit (${ctx.runBudgetMinutes} minutes) and was stopped; ` +
    `it is billed ${price} credits.`;
  p.conversation.push({ author: "agent", message, messageType: "limit-reached", createdAt: at });
  ctx.log(p, at, `[agent] Stopped at the ${ctx.runBudgetMinutes}-minute limit`);
}

function finishRun(ctx: BuildContext, p: SimProject, run: AgentRun, at: number): void {
  bill(ctx, p, run, run.cost - run.creditsSpent);
  const n = p.versions.length + 1;
  const version = addVersion(ctx, p, at, `Version ${n}`, commitMessageFor(run.prompt), run.prompt);
  const preview = `https://${p.projectId}.dev.${SANDBOX_APPS_DOMAIN}`;
  p.conversation.push({
    author: "agent",
    message: `Done! I implemented your request. The preview is live at ${preview}`,
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
    message:
      "The build failed: the dev server did not compile after my changes. The credits of this run were refunded.",
    messageType: "error",
    createdAt: at,
  });
  ctx.log(p, at, "[build] ERROR Build failed: Cannot find module './components/Checkout'");
}

function commitMessageFor(prompt: string): string {
  const clean = prompt
    .replace(/\[[^\]]*\]/g, "")
    .replace(/\s+/g, " ")
    .trim();
  return clean.length > 72 ? `${clean.slice(0, 69)}...` : clean;
}
