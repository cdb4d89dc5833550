import type { Phase } from "../../core/wait.js";
import type { AgentStatus, ConversationMessage, ProjectDetails } from "./schemas.js";

/**
 * What ends each kind of wait, per the reference's completion signals (§19) and its traps:
 * T1 a stale `done` left by the previous run, T2 a `null` read from a cached snapshot before the
 * recovery or import lock appears, T3 an import that went null on failure, T4 the previous
 * deployment's `success`. A tracker remembers what it has seen during one wait.
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

export function agentTracker(since: number | undefined): Tracker<AgentStatus> {
  let sawRunning = false;
  return (status) => {
    if (status.status === "init") {
      sawRunning = true;
      return { phase: "running", line: "Agent running" };
    }
    if (status.status === "done" && (sawRunning || since === undefined || isNewer(status.startedAt, since))) {
      const last = latestAgentMessage(status.realtimeConversation);
      if (last && FAILED_MESSAGE_TYPES.has(last.messageType ?? "")) return { phase: "failed", message: last.message ?? "The agent run failed.", line: "Agent failed" };
      return { phase: "done", line: "Agent done" };
    }
    if (status.status === "done") return notYet(since, "Waiting for the new run to show (the status still shows the previous one)", "The agent status still shows the previous run: the new run never showed.");
    return notYet(since, "Waiting for the run to show", "No agent run has ever happened on this project (idle): nothing to wait for.");
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
    const ours = sawDeploying || since === undefined || isNewer(d?.createdAt, since);
    if (status === "error" && ours) return { phase: "failed", message: "The deployment ended in error.", line: "Deployment failed" };
    if (status === "success" && ours) {
      const when = since === undefined && d?.createdAt ? ` (the latest deployment, started ${d.createdAt})` : "";
      return { phase: "done", line: `Deployed${p.productionProjectUrl ? ` to ${p.productionProjectUrl}` : ""}${when}` };
    }
    if (status === null) return notYet(since, "Waiting for the deployment to show", "This project has never been deployed: nothing to wait for.");
    return notYet(since, `Waiting for the new deployment to show (the latest is the previous one: ${status})`, `The latest deployment is still the previous one (${status}): the new one never showed.`);
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
    if (r?.status === "error" && (sawLock || since === undefined || isNewer(r.startedAt, since))) {
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
      const live = p.agentServerStatus === "Active" && Boolean(p.temporalDevelopmentProjectUrl || p.cachedDevelopmentUrl || p.previewImageUrl);
      return live ? { phase: "done", line: "Import finished" } : { phase: "failed", message: "The import lock was released without a running server or a preview: the import most likely failed (read build_get_conversation for the reason).", line: "Import ended without a result" };
    }
    return notYet(since, "Waiting for the import to show", "No import is running: nothing to wait for.");
  };
}
