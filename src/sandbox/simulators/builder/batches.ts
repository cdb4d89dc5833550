import {
  AGENT_MIN_CREDITS,
  DEFAULT_RUN_OPTIONS,
  UPFRONT_CREDITS,
  advanceRun,
  overDevelopmentCap,
  startRun,
} from "./agent.js";
import { checkIdle, type BuildContext } from "./context.js";
import { fail, type BuildRoutes } from "./routes.js";
import { API, MINUTE, given, hash, isObject, type Batch, type Json, type SimProject } from "./state.js";
import { bodyOf, validateInputFiles } from "./validation.js";
import { batchActive } from "./views.js";

/**
 * POST agent/start (reference §4): one prompt, or an unsupervised multi-prompt batch
 * (`multiPrompt.prompts`, 1-50, or `letTotalumDecide` with `prompt` as the goal). A batch runs its
 * prompts one after another, each an ordinary run (billed as one, agent.ts), with a pause of
 * BATCH_GAP between them during which agent/status reads `done` (trap T6); only
 * `multiPrompt.status` done or cancelled ends it. Choices where the reference is silent: planning
 * takes BATCH_PLANNING and yields the `[prompts=N]` marker's count or 3-5 prompts ("Step i of n:
 * <goal>"); a failed prompt is marked failed and the batch goes on; the next prompt waits while a
 * deployment, recovery or import runs; inputFiles go with the first prompt; agent/stop cancels
 * the batch (agent.ts); `paused` is never used.
 */

const MAX_PROMPTS = 50;
const BATCH_PLANNING = 2 * MINUTE;
const BATCH_GAP = 1 * MINUTE;

type Mode =
  | { kind: "single"; prompt: string }
  | { kind: "prompts"; prompts: string[] }
  | { kind: "plan"; goal: string };

export function registerBatchRoutes(ctx: BuildContext, routes: BuildRoutes): void {
  routes.onProject("POST", "/agent/start", (p, req) => agentStart(ctx, p, bodyOf(req)));
  ctx.onAdvance((p, now) => advanceBatch(ctx, p, now));
}

function agentStart(ctx: BuildContext, p: SimProject, body: Json) {
  const mode = readMode(body);
  const inputFiles = validateInputFiles(body.inputFiles);
  if (p.batch && batchActive(p.batch)) {
    fail(
      409,
      "AUTO_EXECUTION_ALREADY_ACTIVE",
      "A multi-prompt batch is still executing on this project; cancel it first (agent/stop)",
    );
  }
  checkIdle(p, { deployment: true });
  if (ctx.wallet.credits() < AGENT_MIN_CREDITS) {
    fail(402, "INSUFFICIENT_CREDITS", `Starting the agent needs at least ${AGENT_MIN_CREDITS} credits`);
  }
  if (overDevelopmentCap(p, UPFRONT_CREDITS)) {
    fail(403, "PROJECT_CREDIT_LIMIT_REACHED", "The project's monthly development credit limit is reached");
  }
  const at = ctx.simNow();
  const poll = `Poll GET ${API}/projects/${p.projectId}/agent/status every 10-15 seconds`;
  if (mode.kind === "single") {
    startRun(ctx, p, mode.prompt, at, { ...DEFAULT_RUN_OPTIONS }, inputFiles);
    return { projectId: p.projectId, status: "init", message: `The agent started. ${poll} until status is done.` };
  }
  const batch: Batch = {
    status: mode.kind === "plan" ? "planning" : "executing",
    goal: mode.kind === "plan" ? mode.goal : undefined,
    prompts: mode.kind === "prompts" ? mode.prompts.map((prompt, order) => ({ order, prompt, status: "pending" })) : [],
    currentPromptIndex: -1,
    startedAt: at,
    updatedAt: at,
    plannedAt: mode.kind === "plan" ? at + BATCH_PLANNING : undefined,
    nextAt: at,
    conversationStart: p.conversation.length,
    inputFiles,
  };
  p.batch = batch;
  ctx.log(
    p,
    at,
    `[agent] Multi-prompt batch started${mode.kind === "plan" ? " (planning)" : ` (${batch.prompts.length} prompts)`}`,
  );
  advanceBatch(ctx, p, at);
  const message =
    "Multi-prompt batch started: its prompts run one after another with no approval between them; " +
    `it can take hours and every prompt is billed as a run. ${poll} until multiPrompt.status is done or cancelled.`;
  return {
    projectId: p.projectId,
    status: "init",
    message,
    ...(mode.kind === "prompts" ? { multiPrompt: { totalPrompts: batch.prompts.length } } : {}),
  };
}

/** MISSING_PROMPT, INVALID_MULTI_PROMPT, TOO_MANY_PROMPTS, INVALID_PROMPT_ITEM (the order of §4's list). */
function readMode(body: Json): Mode {
  const hasPrompt = typeof body.prompt === "string" && body.prompt.trim() !== "";
  if (!given(body.multiPrompt)) {
    if (!hasPrompt) fail(400, "MISSING_PROMPT", "prompt is required and must not be empty");
    return { kind: "single", prompt: body.prompt as string };
  }
  const multi = body.multiPrompt;
  const invalid: () => never = () =>
    fail(
      400,
      "INVALID_MULTI_PROMPT",
      "multiPrompt needs exactly one of a non-empty prompts array or letTotalumDecide: true",
    );
  if (!isObject(multi)) invalid();
  const listed = given(multi.prompts) && !(Array.isArray(multi.prompts) && multi.prompts.length === 0);
  const plan = multi.letTotalumDecide === true;
  if (listed === plan) invalid();
  if (plan) {
    if (!hasPrompt)
      fail(400, "MISSING_PROMPT", "prompt (the goal the batch is planned from) is required with letTotalumDecide");
    return { kind: "plan", goal: body.prompt as string };
  }
  const prompts = multi.prompts;
  if (!Array.isArray(prompts)) invalid();
  if (prompts.length > MAX_PROMPTS) fail(400, "TOO_MANY_PROMPTS", `A batch holds at most ${MAX_PROMPTS} prompts`);
  prompts.forEach((item, i) => {
    if (typeof item !== "string" || item.trim() === "")
      fail(400, "INVALID_PROMPT_ITEM", `multiPrompt.prompts[${i}] must be a non-empty string`);
  });
  return { kind: "prompts", prompts: prompts as string[] };
}

function planPrompts(goal: string): string[] {
  const marker = /\[prompts=(\d+)\]/.exec(goal);
  const count = marker ? Math.min(MAX_PROMPTS, Math.max(1, Number(marker[1]))) : 3 + (hash(`plan:${goal}`) % 3);
  return Array.from({ length: count }, (_, i) => `Step ${i + 1} of ${count}: ${goal}`);
}

/** When the deployment, recovery or import that blocks the next prompt ends (undefined when none runs). */
function blockedUntil(p: SimProject): number | undefined {
  const ends: number[] = [];
  if (p.deployment?.status === "deploying") ends.push(p.deployment.doneAt);
  if (p.recovery?.status === "recovering") ends.push(p.recovery.doneAt);
  if (p.importLock) ends.push(p.importLock.endsAt);
  return ends.length ? Math.max(...ends) : undefined;
}

/** Plans, then runs the prompts in order up to simulated time `now`. */
function advanceBatch(ctx: BuildContext, p: SimProject, now: number): void {
  const b = p.batch;
  while (b && batchActive(b)) {
    if (b.status === "planning") {
      if (b.plannedAt! > now) return;
      b.prompts = planPrompts(b.goal ?? "").map((prompt, order) => ({ order, prompt, status: "pending" }));
      b.status = "executing";
      b.updatedAt = b.nextAt = b.plannedAt!;
      ctx.log(p, b.plannedAt!, `[agent] Batch planned: ${b.prompts.length} prompts`);
    }
    const current = b.prompts[b.currentPromptIndex];
    if (current?.status === "executing") {
      const run = p.run;
      if (run?.batchOrder === current.order && run.state === "running") return;
      const endedAt = run?.endedAt ?? now;
      current.status = run?.state === "finished" ? "done" : "failed";
      b.updatedAt = endedAt;
      b.nextAt = endedAt + BATCH_GAP;
    }
    const next = b.currentPromptIndex + 1;
    if (next >= b.prompts.length) {
      b.status = "done";
      ctx.log(p, b.updatedAt, "[agent] Multi-prompt batch done");
      return;
    }
    const blocked = blockedUntil(p);
    if (blocked !== undefined) b.nextAt = Math.max(b.nextAt, blocked);
    if (b.nextAt > now) return;
    b.currentPromptIndex = next;
    b.prompts[next].status = "executing";
    b.updatedAt = b.nextAt;
    startRun(
      ctx,
      p,
      b.prompts[next].prompt,
      b.nextAt,
      { ...DEFAULT_RUN_OPTIONS },
      next === 0 ? b.inputFiles : [],
      b.prompts[next].order,
    );
    advanceRun(ctx, p, now);
  }
}
