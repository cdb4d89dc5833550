import type { SharedPoller } from "../../core/poller.js";
import { DEFAULT_WAIT_SECONDS, formatElapsed, waitUntilDone, type Phase } from "../../core/wait.js";
import { credits as creditsText, trimLine } from "../../core/text.js";
import { ToolError, type ToolContext } from "../../core/tool.js";
import type { BuildClient } from "./client.js";
import { withScheme } from "./render.js";
import type { AgentStatus, ConversationMessage, ProjectDetails, WaitResult } from "./schemas.js";

export type Until = WaitResult["until"];

export interface WaitDeps {
  client: BuildClient;
  /** Shared per-project pollers: one upstream request per project and interval, whoever waits. */
  agentPoller: SharedPoller<AgentStatus>;
  projectPoller: SharedPoller<ProjectDetails>;
}

const FAILED_MESSAGE_TYPES = new Set(["error", "limit-reached"]);

/** What ends each kind of wait, per the signals the spec defines. */
const projectChecks: Record<Exclude<Until, "agent">, (p: ProjectDetails) => { phase: Phase; message?: string; line: string }> = {
  deployment: (p) => {
    const status = p.deployment?.status ?? null;
    if (status === "deploying") return { phase: "running", line: "Deploying" };
    if (status === "error") return { phase: "failed", message: "The deployment ended in error.", line: "Deployment failed" };
    if (status === "success") return { phase: "done", line: `Deployed${p.productionProjectUrl ? ` to ${p.productionProjectUrl}` : ""}` };
    return { phase: "done", line: "No deployment in progress" };
  },
  versionRecovery: (p) => {
    const r = p.versionRecovery;
    if (!r) return { phase: "done", line: "No recovery in progress" };
    if (r.status === "error") return { phase: "failed", message: r.errorMessage ?? "The version recovery failed.", line: "Recovery failed" };
    return { phase: "running", line: `Recovering version ${r.versionId ?? ""}`.trim() };
  },
  import: (p) => {
    const i = p.importInProgress;
    if (!i) return { phase: "done", line: "No import in progress" };
    if (i.errorMessage) return { phase: "failed", message: i.errorMessage, line: "Import failed" };
    return { phase: "running", line: "Importing and rebuilding" };
  },
};

export function agentPhase(status: AgentStatus): { phase: Phase; message?: string } {
  if (status.status === "init") return { phase: "running" };
  const last = latestAgentMessage(status.realtimeConversation);
  if (last && FAILED_MESSAGE_TYPES.has(last.messageType ?? "")) return { phase: "failed", message: last.message ?? "The agent run failed." };
  return { phase: "done" };
}

export function latestAgentMessage(conversation: ConversationMessage[] | undefined): ConversationMessage | undefined {
  if (!conversation) return undefined;
  for (let i = conversation.length - 1; i >= 0; i--) if (conversation[i].author !== "user") return conversation[i];
  return undefined;
}

/** Secrets the run asked for that are still not provided; a later message may mark one provided. */
export function secretsNeeded(conversation: ConversationMessage[] | undefined): Array<{ name: string; description?: string }> {
  const state = new Map<string, { isProvided?: boolean; description?: string }>();
  for (const m of conversation ?? []) for (const [name, v] of Object.entries(m.secretKeysNeeded ?? {})) state.set(name, v);
  return [...state].filter(([, v]) => !v.isProvided).map(([name, v]) => ({ name, description: v.description }));
}


function agentLine(status: AgentStatus, elapsedMs: number): string {
  const parts = [status.status === "init" ? "Agent running" : `Agent ${status.status}`, formatElapsed(elapsedMs)];
  if (typeof status.creditsSpent === "number") parts.push(creditsText(status.creditsSpent));
  const last = latestAgentMessage(status.realtimeConversation);
  if (last?.message) parts.push(`agent: "${trimLine(last.message)}"`);
  const needed = secretsNeeded(status.realtimeConversation);
  if (needed.length) parts.push(`needs secrets: ${needed.map((n) => n.name).join(", ")}`);
  return parts.join(" · ");
}

/**
 * Blocks until the project's agent run, deployment, recovery or import ends, sending a progress
 * notification on every poll. Timing out is not an error: the result says the work goes on.
 */
export async function waitFor(deps: WaitDeps, projectId: string, until: Until, ctx: ToolContext, timeoutSeconds = DEFAULT_WAIT_SECONDS): Promise<WaitResult> {
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
  if (until === "agent") {
    outcome = await waitUntilDone({ ...common, poller: deps.agentPoller, check: agentPhase, describe: agentLine });
    creditsSpent = outcome.state.creditsSpent;
    project = await deps.client.getProject(projectId, ctx.signal);
    if (outcome.outcome === "done") await ctx.progress({ message: finishedLine(project, outcome.elapsedMs, creditsSpent) });
  } else {
    const check = projectChecks[until];
    outcome = await waitUntilDone<ProjectDetails>({
      ...common,
      poller: deps.projectPoller,
      check,
      describe: (p, elapsed) => `${check(p).line} · ${formatElapsed(elapsed)}`,
    });
    project = outcome.state;
  }
  const result: WaitResult = {
    outcome: outcome.outcome,
    until,
    elapsedSeconds: Math.round(outcome.elapsedMs / 100) / 10,
    polls: outcome.polls,
    message: summarize(until, outcome.outcome, outcome.failureMessage, timeoutSeconds),
    ...(creditsSpent !== undefined ? { creditsSpent } : {}),
    project,
  };
  if (outcome.outcome === "failed") throw new ToolError(`${result.message}\nNext step: read build_get_conversation or build_get_logs for details, then fix and try again.`, result);
  return result;
}

function finishedLine(p: ProjectDetails, elapsedMs: number, credits: number | undefined): string {
  const parts = ["Agent finished", formatElapsed(elapsedMs)];
  if (credits !== undefined) parts.push(creditsText(credits));
  if (p.previewImageUrl) parts.push(`preview: ${p.previewImageUrl}`);
  if (p.productionProjectUrl) parts.push(`production: ${withScheme(p.productionProjectUrl)}`);
  return parts.join(" · ");
}

const NOUN: Record<Until, string> = { agent: "agent run", deployment: "deployment", versionRecovery: "version recovery", import: "import" };

function summarize(until: Until, outcome: WaitResult["outcome"], failure: string | undefined, timeoutSeconds: number): string {
  const noun = NOUN[until];
  if (outcome === "failed") return `The ${noun} failed: ${failure ?? "no reason given"}`;
  if (outcome === "timed_out") return `Still running after ${timeoutSeconds}s of waiting; the ${noun} goes on. Call build_wait again to keep following it.`;
  return `The ${noun} has ended.`;
}
