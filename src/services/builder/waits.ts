import type { Poller } from "../../core/upstream/poller.js";
import { DEFAULT_WAIT_SECONDS, formatElapsed, waitSeconds, waitUntilDone } from "../../core/upstream/wait.js";
import { credits as creditsText, trimLine } from "../../core/base/text.js";
import { ToolError, type ToolContext } from "../../core/tools/tool.js";
import type { BuildClient } from "./client.js";
import { livePreviewUrl, withScheme } from "./render.js";
import type { AgentStatus, ConversationMessage, ProjectDetails, WaitResult } from "./schemas.js";
import { endedUnseen, hasSecondSignal, RUNNING_LINE } from "./completion.js";
import { currentBatch, failureNextStep, latestAgentMessage, tracker } from "./trackers.js";
import type { RebuildStatus } from "./api/files.js";
import type { PullStatus } from "./api/github.js";
import type { WrittenSecrets } from "./written-secrets.js";
import type { BuildPush } from "./push.js";

export { latestAgentMessage };

export type Until = WaitResult["until"];

export interface WaitDeps {
  client: BuildClient;
  /** What build_set_secret just wrote, which the cached details may not show yet. */
  writtenSecrets: WrittenSecrets;
  /** Shared per-project pollers: one upstream request per project and interval, whoever waits. */
  agentPoller: Poller<AgentStatus>;
  projectPoller: Poller<ProjectDetails>;
  /** GET rebuild/status and GET github/pull-status, per project. */
  rebuildPoller: Poller<RebuildStatus>;
  pullPoller: Poller<PullStatus>;
  /** BUILD_WEBHOOKS=on: deliveries that end waits early (push.ts). */
  push?: BuildPush;
}

/**
 * Secrets the run asked for that are not set. §4 [RC]: `isProvided` is practically always false,
 * so a name counts as set when the project's details `secrets` hold it (`setNames`); without
 * them, every name asked for and not marked provided is listed.
 */
export function secretsNeeded(
  conversation: ConversationMessage[] | undefined,
  setNames?: ReadonlySet<string>,
): Array<{ name: string; description?: string }> {
  const state = new Map<string, { isProvided?: boolean; description?: string }>();
  for (const m of conversation ?? [])
    for (const [name, v] of Object.entries(m.secretKeysNeeded ?? {})) state.set(name, v);
  return [...state]
    .filter(([name, v]) => !v.isProvided && !setNames?.has(name))
    .map(([name, v]) => ({ name, description: v.description }));
}

/** The project's secret names: those its details list, and those this server just wrote to it. */
export function secretNames(p: Pick<ProjectDetails, "secrets" | "projectId">, written: WrittenSecrets): Set<string> {
  const names = written.of(p.projectId);
  for (const x of p.secrets ?? []) names.add(x.secretName);
  return names;
}

/**
 * What to do about secrets a run asked for that the details do not list. Never a plain "set it":
 * the details can lag behind a write made elsewhere, and a second secret of one name is not stated.
 */
export function missingSecretsAdvice(names: string[]): string {
  return (
    `The agent asked for secrets the project's details do not list: ${names.join(", ")}. If one was set ` +
    "in the last few seconds (the details are cached briefly), do not set it again: a second secret of " +
    "one name is not defined. Otherwise set it with build_set_secret; it reaches the next run (prompt again)."
  );
}

function agentLine(status: AgentStatus, elapsedMs: number, line: string): string {
  const parts = [line, formatElapsed(elapsedMs)];
  if (typeof status.creditsSpent === "number") parts.push(creditsText(status.creditsSpent));
  const last = latestAgentMessage(status.realtimeConversation);
  if (last?.message) parts.push(`agent: "${trimLine(last.message)}"`);
  const needed = secretsNeeded(status.realtimeConversation);
  if (needed.length) parts.push(`asked for secrets: ${needed.map((n) => n.name).join(", ")}`);
  return parts.join(" · ");
}

/** The build_wait call that follows exactly the run started at `startedAt`, not the one before it. */
export function followHint(projectId: string, until: Until, startedAt: string | undefined): string {
  return `build_wait { projectId: "${projectId}", until: "${until}"${startedAt ? `, since: "${startedAt}"` : ""} }`;
}

/**
 * Starts work and, when asked, follows it to the end. The start time is taken before the request,
 * so the wait (or a later build_wait with its `startedAt`) ignores the previous run's state.
 * `worthFollowing` says when a started result has nothing to wait for (a pull with no changes).
 */
export async function startThenWait<T extends object>(
  projectId: string,
  until: Until,
  ctx: ToolContext<WaitDeps>,
  options: { wait?: boolean; timeoutSeconds?: number; worthFollowing?: (started: T) => boolean },
  start: () => Promise<T>,
): Promise<T & { startedAt: string; wait?: WaitResult }> {
  const since = Date.now();
  const result = { ...(await start()), startedAt: new Date(since).toISOString() };
  if (!options.wait || options.worthFollowing?.(result) === false) return result;
  return {
    ...result,
    wait: await followStarted(
      { projectId, until, since, timeoutSeconds: options.timeoutSeconds, started: result },
      ctx,
    ),
  };
}

/** Where a task stands once its work started upstream: enough for another replica to follow it. */
interface FollowCheckpoint {
  projectId: string;
  until: Until;
  since: number;
  timeoutSeconds?: number;
  started: Record<string, unknown>;
}

/** What each start's answer says of its work (reference §4-§15); recover answers only a message. */
const STARTED_STATUS: Record<Until, string | undefined> = {
  agent: "init",
  deployment: "deploying",
  versionRecovery: undefined,
  import: "importing",
  server: "starting",
  rebuild: "rebuilding",
  githubPull: "pulling",
};

/**
 * The wait's first line, from the start's own answer: work that ends before the first poll (or
 * inside the read lag) was still seen running. Undefined when the answer does not say it runs.
 */
export function startedLine(until: Until, started: Record<string, unknown>): string | undefined {
  const expected = STARTED_STATUS[until];
  if (expected !== undefined && started.status !== expected) return undefined;
  const detail = until === "server" ? expected : until === "versionRecovery" ? started.versionId : undefined;
  return [RUNNING_LINE[until], detail, "· started"].filter(Boolean).join(" ");
}

/** Leaves the checkpoint (tasks on shared state), then follows the started work to its end. */
export async function followStarted(cp: FollowCheckpoint, ctx: ToolContext<WaitDeps>): Promise<WaitResult> {
  const line = startedLine(cp.until, cp.started);
  if (line) await ctx.progress({ message: line });
  await ctx.checkpoint?.({ ...cp });
  return waitFor(cp.projectId, cp.until, ctx, { timeoutSeconds: cp.timeoutSeconds, since: cp.since });
}

/**
 * A start-then-wait tool's `resume`: another replica took the task over after the start was
 * confirmed, so it only follows (within what is left of the caller's time budget), never starts.
 */
export async function resumeWait(
  checkpoint: Record<string, unknown>,
  _input: unknown,
  ctx: ToolContext<WaitDeps>,
): Promise<any> {
  const cp = checkpoint as unknown as FollowCheckpoint;
  const budget = cp.timeoutSeconds ?? DEFAULT_WAIT_SECONDS;
  const left = Math.max(1, Math.round(budget - (Date.now() - cp.since) / 1000));
  // A client waiting on this request (a repeated call) gets its answer before it gives up.
  const blocking = ctx.blockingUntil !== undefined && cp.timeoutSeconds === undefined;
  const timeoutSeconds = blocking ? waitSeconds(undefined, ctx.blockingUntil) : left;
  const wait = await waitFor(cp.projectId, cp.until, ctx, { timeoutSeconds, since: cp.since });
  return { ...cp.started, wait };
}

interface WaitOptions {
  timeoutSeconds?: number;
  /** When the work was started (ms): state older than this is the previous work's (traps T1-T4). */
  since?: number;
}

/**
 * Blocks until the project's agent run, deployment, recovery, import, rebuild or GitHub pull ends,
 * sending a progress notification on every poll. Timing out is not an error: the result says the work goes on.
 */
export async function waitFor(
  projectId: string,
  until: Until,
  ctx: ToolContext<WaitDeps>,
  options: WaitOptions = {},
): Promise<WaitResult> {
  const { deps } = ctx;
  const timeoutSeconds = waitSeconds(options.timeoutSeconds, ctx.blockingUntil);
  const common = {
    key: projectId,
    timeoutMs: timeoutSeconds * 1000,
    signal: ctx.signal,
    logger: ctx.logger,
    onProgress: (message: string, poll: number) => ctx.progress({ message, progress: poll }),
  };
  let outcome;
  let creditsSpent: number | undefined;
  let project: ProjectDetails;
  let lastStatus: Record<string, unknown> | undefined;
  if (until === "rebuild" || until === "githubPull") {
    // Their own status endpoints end the wait; the details then give the preview to re-read (T10).
    const describe = (_s: unknown, elapsed: number, v: { line?: string }) => `${v.line} · ${formatElapsed(elapsed)}`;
    outcome =
      until === "rebuild"
        ? await waitUntilDone<RebuildStatus>({
            ...common,
            poller: deps.rebuildPoller,
            check: tracker<RebuildStatus>("rebuild", options.since),
            describe,
          })
        : await waitUntilDone<PullStatus>({
            ...common,
            poller: deps.pullPoller,
            check: tracker<PullStatus>("githubPull", options.since),
            describe,
          });
    lastStatus = outcome.state;
    project = await deps.client.getProject(projectId, ctx.signal);
  } else if (until === "agent") {
    const judged = tracker<AgentStatus>("agent", options.since);
    // When this wait first saw the run going: a delivery since then announced its end (push.ts).
    let sawRunning: number | undefined;
    const check = (st: AgentStatus) => {
      const verdict = judged(st);
      if (verdict.phase === "running") sawRunning ??= Date.now();
      return verdict;
    };
    deps.push?.ensure();
    const unwatch = deps.push?.watch(projectId);
    const unhear = deps.push?.onCreditLimit(projectId, (data) => {
      // Progress reaches a caller who asked for it; the log line, every caller's log stream.
      const line = creditLimitLine(projectId, data);
      ctx.logger.warn(line);
      void ctx.progress({ message: line });
    });
    try {
      outcome = await waitUntilDone<AgentStatus>({
        ...common,
        poller: deps.agentPoller,
        check,
        describe: (st, elapsed, v) => agentLine(st, elapsed, v.line ?? "Agent"),
      });
    } finally {
      unhear?.();
      unwatch?.();
    }
    if (sawRunning !== undefined && outcome.outcome !== "timed_out") deps.push?.ended(projectId, sawRunning);
    // agent/status gives the credits of the current prompt only: a batch's total is in the details.
    creditsSpent = currentBatch(outcome.state) ? undefined : outcome.state.creditsSpent;
    project = await deps.client.getProject(projectId, ctx.signal);
    if (outcome.outcome === "done")
      await ctx.progress({ message: finishedLine(project, outcome.elapsedMs, creditsSpent) });
  } else {
    const check = tracker<ProjectDetails>(until, options.since);
    outcome = await waitUntilDone<ProjectDetails>({
      ...common,
      poller: deps.projectPoller,
      check,
      describe: (_p, elapsed, v) => `${v.line} · ${formatElapsed(elapsed)}`,
    });
    project = outcome.state;
    // T2: work that ended inside the read lag never showed its lock; its second signal says it ended.
    if (outcome.outcome === "idle" && options.since !== undefined && hasSecondSignal(until)) {
      const confirmed = await secondSignal(projectId, until, options.since, ctx);
      if (confirmed) outcome = { ...outcome, outcome: "done" as const, failureMessage: undefined };
      if (confirmed) project = confirmed;
    }
  }
  const follow = followHint(projectId, until, since(options.since));
  const result: WaitResult = {
    outcome: outcome.outcome,
    until,
    elapsedSeconds: Math.round(outcome.elapsedMs / 100) / 10,
    polls: outcome.polls,
    message:
      summarize(until, outcome.outcome, outcome.failureMessage, timeoutSeconds, follow) +
      (until === "agent" ? missingSecretsLine(outcome.state as AgentStatus, project, deps.writtenSecrets) : ""),
    ...(creditsSpent !== undefined ? { creditsSpent } : {}),
    ...(lastStatus ? { lastStatus } : {}),
    // A long build is followed by a call a minute for up to 40 minutes: each answer stays short.
    project: outcome.outcome === "timed_out" ? brief(project) : project,
  };
  if (outcome.outcome === "failed")
    throw new ToolError(`${result.message}\nNext step: ${failureNextStep(until, outcome.state)}`, result);
  return result;
}

/** project.credit_limit.reached while the agent runs: the user hears it before the run ends. */
function creditLimitLine(projectId: string, data: Record<string, unknown>): string {
  const category = typeof data.category === "string" ? ` (${data.category})` : "";
  return (
    `Project ${projectId} reached its monthly credit cap${category}: the run may stop short. ` +
    "Raise or remove the cap with build_set_credit_limits."
  );
}

function finishedLine(p: ProjectDetails, elapsedMs: number, credits: number | undefined): string {
  const parts = ["Agent finished", formatElapsed(elapsedMs)];
  if (credits !== undefined) parts.push(creditsText(credits));
  const preview = livePreviewUrl(p);
  if (preview) parts.push(`preview: ${preview}`);
  if (p.productionProjectUrl && p.deployment?.status === "success")
    parts.push(`production: ${withScheme(p.productionProjectUrl)}`);
  return parts.join(" · ");
}

/** §4: the secrets the run asked for, checked against the details' secrets (isProvided is not reliable). */
function missingSecretsLine(status: AgentStatus | undefined, p: ProjectDetails, written: WrittenSecrets): string {
  const missing = secretsNeeded(status?.realtimeConversation, secretNames(p, written));
  return missing.length ? ` ${missingSecretsAdvice(missing.map((m) => m.name))}` : "";
}

/**
 * T2's second completion signal (completion.ts endedUnseen), for work whose lock never showed.
 * Returns fresh details when the work is confirmed ended, else undefined.
 */
async function secondSignal(
  projectId: string,
  until: "versionRecovery" | "import",
  since: number,
  ctx: ToolContext<WaitDeps>,
): Promise<ProjectDetails | undefined> {
  const { deps } = ctx;
  const { versions } = await deps.client.listVersions(projectId, { limit: 50 }, ctx.signal);
  const p = await deps.client.getProject(projectId, ctx.signal);
  return endedUnseen(until, versions, p, since) ? p : undefined;
}

const NOUN: Record<Until, string> = {
  agent: "agent run",
  deployment: "deployment",
  versionRecovery: "version recovery",
  import: "import",
  server: "server start",
  rebuild: "rebuild",
  githubPull: "GitHub pull",
};

function summarize(
  until: Until,
  outcome: WaitResult["outcome"],
  failure: string | undefined,
  timeoutSeconds: number,
  follow: string,
): string {
  const noun = NOUN[until];
  if (outcome === "idle") return failure ?? `No ${noun} is running: nothing to wait for.`;
  if (outcome === "failed") return `The ${noun} failed: ${failure ?? "no reason given"}`;
  if (outcome === "timed_out") return `The ${noun} goes on (waited ${timeoutSeconds}s). Keep following it: ${follow}.`;
  return `The ${noun} has ended.`;
}

const since = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());

/** What a wait that goes on needs to say about the project: where the work stands, not every detail. */
function brief(p: ProjectDetails): ProjectDetails {
  const keep = [
    "projectId",
    "label",
    "agentProcessStatus",
    "agentServerStatus",
    "deployment",
    "versionRecovery",
    "importInProgress",
    "totalCreditsSpent",
  ] as const;
  const out = Object.fromEntries(keep.filter((k) => p[k] !== undefined).map((k) => [k, p[k]])) as ProjectDetails;
  if (p.multiPrompt) {
    const { prompts: _prompts, ...batch } = p.multiPrompt;
    out.multiPrompt = batch;
  }
  return out;
}
