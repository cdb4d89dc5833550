import type { Phase } from "../../core/upstream/wait.js";
import type { AgentStatus, ConversationMessage, ProjectDetails } from "./schemas.js";
import type { RebuildStatus } from "./api/files.js";
import type { PullStatus } from "./api/github.js";

/**
 * What ends each kind of wait, per the reference's completion signals (§19) and its traps:
 * T1 a stale `done` left by the previous run, T2 a `null` read from a cached snapshot before the
 * recovery or import lock appears, T3 an import that went null on failure, T4 the previous
 * deployment's `success`, T5 a restarted server that still reads Active, T6 a multi-prompt batch
 * whose status flips to `done` between prompts. A tracker remembers what it has seen during one wait.
 *
 * `since` is when the work was started (the call that started it, or build_wait's `since`). With
 * it, a state older than the call is the previous work's, and an absent state may still appear:
 * the wait gives it APPEARANCE_MS. Without it, the first state read is taken as it is.
 */
export interface Verdict {
  phase: Phase;
  message?: string;
  line: string;
}

export type Tracker<T> = (state: T) => Verdict;

/** How long started work may take to show through the details snapshot (cached "a few seconds"). */
export const APPEARANCE_MS = 20_000;
/** Server and local clocks may disagree a little; a previous operation is minutes older. */
const SKEW_MS = 5_000;

const FAILED_MESSAGE_TYPES = new Set(["error", "limit-reached"]);

function isNewer(timestamp: string | null | undefined, since: number | undefined): boolean {
  if (since === undefined || !timestamp) return false;
  const t = Date.parse(timestamp);
  return Number.isFinite(t) && t >= since - SKEW_MS;
}

/**
 * Whether an ended state is this wait's work: it was seen running during the wait, or it started
 * after `since`, or there is no `since` and the state is taken as it is.
 */
function isOurs(sawRunning: boolean, startedAt: string | null | undefined, since: number | undefined): boolean {
  return sawRunning || since === undefined || isNewer(startedAt, since);
}

/** Waiting for started work to show: running until the window passes, then nothing to wait for. */
function notYet(since: number | undefined, waiting: string, nothing: string): Verdict {
  if (since !== undefined && Date.now() - since < APPEARANCE_MS) return { phase: "running", line: waiting };
  return { phase: "idle", line: nothing, message: nothing };
}

export function latestAgentMessage(conversation: ConversationMessage[] | undefined): ConversationMessage | undefined {
  if (!conversation) return undefined;
  for (let i = conversation.length - 1; i >= 0; i--) if (conversation[i].author !== "user") return conversation[i];
  return undefined;
}

type Batch = NonNullable<AgentStatus["multiPrompt"]>;
const BATCH_RUNNING = new Set(["planning", "executing", "paused"]);

/**
 * The batch agent/status reports, when it is the project's current work: one in flight, or an
 * ended one no single run has started after (both times are the service's clock).
 */
export function currentBatch(status: AgentStatus): Batch | undefined {
  const batch = status.multiPrompt ?? undefined;
  if (!batch || BATCH_RUNNING.has(batch.status)) return batch;
  const runStarted = Date.parse(status.startedAt ?? "");
  return runStarted > Date.parse(batch.updatedAt ?? "") ? undefined : batch;
}

function batchLine(batch: Batch, status: AgentStatus): string {
  if (batch.status === "planning") return "Batch: planning its prompts";
  const total = batch.totalPrompts ?? batch.prompts?.length ?? 0;
  const index = batch.currentPromptIndex ?? -1;
  if (index < 0) return `Batch ${batch.status}: ${total} prompts, none started yet`;
  return `Batch ${batch.status}: prompt ${index + 1} of ${total} ${status.status === "init" ? "running" : "done"}`;
}

/** T6: only `multiPrompt.status` done or cancelled ends a batch. */
function batchEnd(batch: Batch): Verdict {
  const prompts = batch.prompts ?? [];
  const total = batch.totalPrompts ?? prompts.length;
  const failed = prompts.filter((p) => p.status === "failed").length;
  if (batch.status === "cancelled") {
    const done = prompts.filter((p) => p.status === "done").length;
    return {
      phase: "failed",
      message: `The multi-prompt batch was cancelled after ${done} of ${total} prompts.`,
      line: "Batch cancelled",
    };
  }
  return { phase: "done", line: `Batch done: ${total} prompts${failed ? `, ${failed} failed` : ""}` };
}

export function agentTracker(since: number | undefined): Tracker<AgentStatus> {
  let sawRunning = false;
  let sawBatch = false;
  return (status) => {
    const batch = currentBatch(status);
    if (batch && BATCH_RUNNING.has(batch.status)) {
      sawBatch = true;
      return { phase: "running", line: batchLine(batch, status) };
    }
    if (batch && isOurs(sawBatch, batch.startedAt, since)) return batchEnd(batch);
    if (status.status === "init") {
      sawRunning = true;
      return { phase: "running", line: "Agent running" };
    }
    if (status.status === "done" && isOurs(sawRunning, status.startedAt, since)) {
      const last = latestAgentMessage(status.realtimeConversation);
      if (last && FAILED_MESSAGE_TYPES.has(last.messageType ?? ""))
        return { phase: "failed", message: last.message ?? "The agent run failed.", line: "Agent failed" };
      return { phase: "done", line: "Agent done" };
    }
    if (status.status === "done")
      return notYet(
        since,
        "Waiting for the new run to show (the status still shows the previous one)",
        "The agent status still shows the previous run: the new run never showed.",
      );
    return notYet(
      since,
      "Waiting for the run to show",
      "No agent run has ever happened on this project (idle): nothing to wait for.",
    );
  };
}

export function deploymentTracker(since: number | undefined): Tracker<ProjectDetails> {
  let sawDeploying = false;
  return (p) => {
    const d = p.deployment;
    const status = d?.status ?? null;
    if (status === "deploying") {
      sawDeploying = true;
      return { phase: "running", line: "Deploying" };
    }
    const ours = isOurs(sawDeploying, d?.createdAt, since);
    if (status === "error" && ours)
      return { phase: "failed", message: "The deployment ended in error.", line: "Deployment failed" };
    if (status === "success" && ours) {
      const when = since === undefined && d?.createdAt ? ` (the latest deployment, started ${d.createdAt})` : "";
      return { phase: "done", line: `Deployed${p.productionProjectUrl ? ` to ${p.productionProjectUrl}` : ""}${when}` };
    }
    if (status === null)
      return notYet(
        since,
        "Waiting for the deployment to show",
        "This project has never been deployed: nothing to wait for.",
      );
    return notYet(
      since,
      `Waiting for the new deployment to show (the latest is the previous one: ${status})`,
      `The latest deployment is still the previous one (${status}): the new one never showed.`,
    );
  };
}

export function recoveryTracker(since: number | undefined): Tracker<ProjectDetails> {
  let sawLock = false;
  return (p) => {
    const r = p.versionRecovery;
    if (r && r.status !== "error") {
      sawLock = true;
      return { phase: "running", line: `Recovering version ${r.versionId ?? ""}`.trim() };
    }
    if (r?.status === "error" && isOurs(sawLock, r.startedAt, since)) {
      return { phase: "failed", message: r.errorMessage ?? "The version recovery failed.", line: "Recovery failed" };
    }
    if (sawLock) return { phase: "done", line: "Recovery finished" };
    return notYet(since, "Waiting for the recovery to show", "No version recovery is running: nothing to wait for.");
  };
}

export function importTracker(since: number | undefined): Tracker<ProjectDetails> {
  let sawLock = false;
  return (p) => {
    const lock = p.importInProgress;
    if (lock?.errorMessage) return { phase: "failed", message: lock.errorMessage, line: "Import failed" };
    if (lock) {
      sawLock = true;
      return { phase: "running", line: "Importing and rebuilding" };
    }
    // T3: the lock goes null on failure too; success also shows a live server and a preview.
    if (sawLock) {
      const live =
        p.agentServerStatus === "Active" &&
        Boolean(p.temporalDevelopmentProjectUrl || p.cachedDevelopmentUrl || p.previewImageUrl);
      return live
        ? { phase: "done", line: "Import finished" }
        : {
            phase: "failed",
            message:
              "The import lock was released without a running server or a preview: " +
              "the import most likely failed (read build_get_conversation for the reason).",
            line: "Import ended without a result",
          };
    }
    return notYet(since, "Waiting for the import to show", "No import is running: nothing to wait for.");
  };
}

/**
 * Start or restart of the dev server (T5): Active ends the wait once a reading was not Active; a
 * restarted server may still read Active for a while, so with `since` only Active readings for
 * APPEARANCE_MS also end it (no other signal is documented). An asleep server nobody is starting
 * (Archived, Archiving) is `idle`.
 */
export function serverTracker(since: number | undefined): Tracker<ProjectDetails> {
  let sawStarting = false;
  // §1.4: an asleep reading may be a snapshot from before a deploy or recover that is starting the
  // server (SERVER_NOT_READY gives no since): even without one, give the start time to show.
  const opened = Date.now();
  return (p) => {
    const status = p.agentServerStatus ?? "unknown";
    if (status === "Active") {
      if (sawStarting || since === undefined) return { phase: "done", line: "Server Active" };
      if (Date.now() - since < APPEARANCE_MS)
        return { phase: "running", line: "Waiting for the restart to show (the server still reads Active)" };
      return { phase: "done", line: "Server Active (it never read otherwise: the restart was quick or is not shown)" };
    }
    if (status === "Archived" || status === "Archiving") {
      if (sawStarting)
        return {
          phase: "failed",
          message: `The server went to ${status} instead of starting.`,
          line: `Server ${status}`,
        };
      return notYet(
        since ?? opened,
        `Waiting for the start to show (the server still reads ${status})`,
        `The server still reads ${status} after ${APPEARANCE_MS / 1000} s of waiting: nothing shows it starting. ` +
          "If a deploy or recovery answered SERVER_NOT_READY, its start (3 credits) is already paid: " +
          "wait again before anything else; otherwise start it with build_restart_server (3 credits).",
      );
    }
    sawStarting = true;
    return { phase: "running", line: `Server ${status}` };
  };
}

/**
 * The next step after a failed wait: a run stopped at its time budget is billed flat, so a blind
 * retry costs as much again.
 */
export function failureNextStep(until: string, state: unknown): string {
  const last =
    until === "agent" ? latestAgentMessage((state as AgentStatus | undefined)?.realtimeConversation) : undefined;
  if (last?.messageType === "limit-reached") {
    return (
      "the run used its whole time budget and was billed a flat 50 or 60 credits; " +
      "a retry is billed the same way if it runs as long: split the work into smaller prompts first " +
      "(build_get_conversation shows what was done)."
    );
  }
  if (until === "agent")
    return "failed runs are refunded; read build_get_conversation for the reason, then fix the prompt and try again.";
  return "read build_get_conversation or build_get_logs for details, then fix and try again.";
}

/** GET rebuild/status: `rebuilding` → `success` (livePreviewUrl) or `error` in a 200; `idle` = never rebuilt. */
export function rebuildTracker(since: number | undefined): Tracker<RebuildStatus> {
  let sawRunning = false;
  return (r) => {
    if (r.status === "rebuilding") {
      sawRunning = true;
      return { phase: "running", line: "Rebuilding" };
    }
    const ours = isOurs(sawRunning, r.startedAt, since);
    if (r.status === "error" && ours) {
      const reason = [r.errorCode, r.errorMessage].filter(Boolean).join(": ");
      return { phase: "failed", message: reason || "The rebuild ended in error.", line: "Rebuild failed" };
    }
    if (r.status === "success" && ours)
      return { phase: "done", line: `Rebuilt${r.livePreviewUrl ? `, live at ${r.livePreviewUrl}` : ""}` };
    if (r.status === "idle" || !r.status)
      return notYet(
        since,
        "Waiting for the rebuild to show",
        "No rebuild has run on this project (idle): nothing to wait for.",
      );
    return notYet(
      since,
      `Waiting for the new rebuild to show (the status still shows the previous one: ${r.status})`,
      `The rebuild status still shows the previous one (${r.status}): the new one never showed.`,
    );
  };
}

/** GET github/pull-status: `pulling` → `success` or `error`; null = no pull. It stops saying pulling after 5 min. */
export function githubPullTracker(since: number | undefined): Tracker<PullStatus> {
  let sawRunning = false;
  return (s) => {
    if (s.status === "pulling") {
      sawRunning = true;
      return { phase: "running", line: "Pulling from GitHub and rebuilding" };
    }
    if (s.status === null || s.status === undefined)
      return notYet(
        since,
        "Waiting for the pull to show",
        "No GitHub pull has run on this project: nothing to wait for.",
      );
    if (isOurs(sawRunning, s.createdAt, since)) {
      if (s.status === "error")
        return { phase: "failed", message: "The GitHub pull ended in error.", line: "Pull failed" };
      // The value a pull shows once it auto-completes after 5 minutes is not documented: any other
      // status ends the wait.
      return { phase: "done", line: s.status === "success" ? "Pulled and rebuilt" : `Pull ended (${s.status})` };
    }
    return notYet(
      since,
      `Waiting for the new pull to show (the status still shows the previous one: ${s.status})`,
      `The pull status still shows the previous one (${s.status}): the new one never showed.`,
    );
  };
}
