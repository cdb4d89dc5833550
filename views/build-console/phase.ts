import { httpsUrl, isObject, num, siteUrl, str, truncate, type Json } from "../shared/format.js";

/**
 * The build console's state, derived from the structured content of the build tools (waitResult,
 * launchResult, agentStatus, projectDetails, deployment) and advanced by the view's own polls.
 * Pure: no DOM, no timers.
 */

export type Work = "agent" | "deployment" | "versionRecovery" | "import";
export type Phase = "agent-running" | "deploying" | "recovering" | "importing" | "done" | "failed" | "unknown";

export interface AgentMessage {
  text: string;
  type: string;
  at?: string;
}

export interface BuildState {
  projectId?: string;
  work: Work;
  phase: Phase;
  /** Elapsed seconds the server reported, and the view-clock time (ms) it was true at. */
  elapsed?: { seconds: number; at: number };
  /** Credits the current agent run spent (run) or the project's total (project). */
  credits?: { value: number; scope: "run" | "project" };
  messages: AgentMessage[];
  secrets: Array<{ name: string; description?: string }>;
  previewImageUrl?: string;
  productionUrl?: string;
  failure?: string;
  notes: string[];
  /** One build_get_project is still wanted (preview image and links) before following stops. */
  needsProject: boolean;
  /** One build_get_agent_status is still wanted (a wait result carries no agent messages). */
  needsMessages: boolean;
  /** A finished agent run: the next step is a deployment. */
  canDeploy: boolean;
  /**
   * When the tool started the work (its startedAt, ms) and whether this view saw it running: an
   * ended state older than that is the previous work's (traps T1, T4), as in the server's trackers.
   */
  since?: number;
  sawRunning?: boolean;
  /** Secret names the project's details list (§4: a needed secret's isProvided is not reliable). */
  setSecretNames?: string[];
}

export const PHASE_LABEL: Record<Phase, string> = {
  "agent-running": "Agent running",
  deploying: "Deploying",
  recovering: "Recovering version",
  importing: "Importing",
  done: "Done",
  failed: "Failed",
  unknown: "Waiting for status",
};

const RUNNING: Record<Work, Phase> = {
  agent: "agent-running",
  deployment: "deploying",
  versionRecovery: "recovering",
  import: "importing",
};
const FAILED_MESSAGE_TYPES = new Set(["error", "limit-reached"]);
/** Server and service clocks may disagree a little; the previous work is minutes older. */
const SKEW_MS = 5_000;
/** How long a started run or deployment may take to show before the view stops waiting for it. */
export const APPEARANCE_MS = 60_000;
const MAX_MESSAGES = 4;

export function isRunning(phase: Phase): boolean {
  return phase === "agent-running" || phase === "deploying" || phase === "recovering" || phase === "importing";
}

export function doneLabel(state: BuildState): string {
  if (state.phase !== "done") return PHASE_LABEL[state.phase];
  return {
    agent: "Agent finished",
    deployment: "Deployed",
    versionRecovery: "Version recovered",
    import: "Import finished",
  }[state.work];
}

function empty(projectId?: string): BuildState {
  return {
    projectId,
    work: "agent",
    phase: "unknown",
    messages: [],
    secrets: [],
    notes: [],
    needsProject: false,
    needsMessages: false,
    canDeploy: false,
  };
}

function asWork(value: unknown): Work | undefined {
  return value === "agent" || value === "deployment" || value === "versionRecovery" || value === "import"
    ? value
    : undefined;
}

// ---- conversation ----

export function latestMessages(conversation: unknown, max = MAX_MESSAGES): AgentMessage[] {
  if (!Array.isArray(conversation)) return [];
  return conversation
    .filter(isObject)
    .filter((m) => m.author !== "user" && typeof m.message === "string" && m.message.trim())
    .slice(-max)
    .map((m) => ({
      text: truncate(String(m.message).trim(), 400),
      type: str(m.messageType) ?? "regular",
      at: str(m.createdAt),
    }));
}

/**
 * Secrets the run asked for that are still missing. §4: isProvided is practically always false, so
 * a name also counts as set when the project's details list it (`setNames`).
 */
export function secretsNeeded(
  conversation: unknown,
  setNames: readonly string[] = [],
): Array<{ name: string; description?: string }> {
  const state = new Map<string, { provided: boolean; description?: string }>();
  for (const m of Array.isArray(conversation) ? conversation : []) {
    if (!isObject(m) || !isObject(m.secretKeysNeeded)) continue;
    for (const [name, v] of Object.entries(m.secretKeysNeeded)) {
      state.set(name, {
        provided: isObject(v) && v.isProvided === true,
        description: isObject(v) ? str(v.description) : undefined,
      });
    }
  }
  return [...state]
    .filter(([name, v]) => !v.provided && !setNames.includes(name))
    .map(([name, v]) => ({ name, description: v.description }));
}

/** build_get_agent_status's own secretsMissing (checked against the details), when it sent one. */
function missingFromStatus(st: Json): Array<{ name: string; description?: string }> | undefined {
  if (!Array.isArray(st.secretsMissing)) return undefined;
  return st.secretsMissing
    .filter(isObject)
    .flatMap((m) => (str(m.name) ? [{ name: str(m.name)!, description: str(m.description) }] : []));
}

// ---- whose state it is (T1, T4) ----

function isNewer(timestamp: unknown, since: number): boolean {
  const t = typeof timestamp === "string" ? Date.parse(timestamp) : NaN;
  return Number.isFinite(t) && t >= since - SKEW_MS;
}

/** An ended state is this work's: seen running, started after the call, or there is no call time. */
function isOurs(state: BuildState, startedAt: unknown): boolean {
  return state.sawRunning === true || state.since === undefined || isNewer(startedAt, state.since);
}

/** A state that is still the previous work's: keep waiting for the new one, for a while. */
function notShownYet(state: BuildState, running: Phase, what: string, now: number): BuildState {
  if (state.since === undefined || now - state.since < APPEARANCE_MS)
    return { ...state, phase: running, canDeploy: false };
  return {
    ...state,
    phase: "failed",
    canDeploy: false,
    failure:
      `The ${what} never showed: the status still shows the previous one a minute after the call. ` +
      "Check it with build_get_project.",
  };
}

function deploymentPhase(state: BuildState, d: Json | null, now: number): BuildState {
  const status = d ? str(d.status) : undefined;
  if (status === "deploying") return { ...state, phase: "deploying", sawRunning: true };
  if (d && isOurs(state, d.createdAt)) {
    if (status === "error") return { ...state, phase: "failed", failure: "The deployment ended in error." };
    if (status === "success") return { ...state, phase: "done", needsProject: true };
  }
  return notShownYet(state, "deploying", "new deployment", now);
}

// ---- applying answers ----

function withElapsed(state: BuildState, seconds: number | undefined, now: number): BuildState {
  return seconds === undefined ? state : { ...state, elapsed: { seconds, at: now } };
}

/** Project details: links, preview, and for deployment/recovery/import waits the phase itself. */
export function applyProject(state: BuildState, p: Json, now = Date.now()): BuildState {
  const next: BuildState = { ...state, projectId: str(p.projectId) ?? state.projectId, needsProject: false };
  if (Array.isArray(p.secrets)) {
    next.setSecretNames = p.secrets.filter(isObject).flatMap((x) => (str(x.secretName) ? [str(x.secretName)!] : []));
    next.secrets = state.secrets.filter((x) => !next.setSecretNames!.includes(x.name));
  }
  const preview = httpsUrl(p.previewImageUrl);
  if (preview) next.previewImageUrl = preview;
  const deployment = isObject(p.deployment) ? p.deployment : null;
  const previousDeployment =
    state.work === "deployment" && isRunning(state.phase) && !isOurs(state, deployment?.createdAt);
  if (deployment?.status === "success" && !previousDeployment) {
    const url = siteUrl(p.productionProjectUrl);
    if (url) next.productionUrl = url;
  }
  if (next.credits?.scope !== "run" && num(p.totalCreditsSpent) !== undefined)
    next.credits = { value: num(p.totalCreditsSpent)!, scope: "project" };

  if (state.work === "deployment" && isRunning(state.phase)) {
    return { ...deploymentPhase(next, deployment, now), needsProject: false };
  } else if (state.work === "versionRecovery") {
    const r = isObject(p.versionRecovery) ? p.versionRecovery : null;
    if (!r) next.phase = isRunning(state.phase) ? "done" : state.phase;
    else if (r.status === "error")
      Object.assign(next, { phase: "failed", failure: str(r.errorMessage) ?? "The version recovery failed." });
    else next.phase = "recovering";
  } else if (state.work === "import") {
    const i = isObject(p.importInProgress) ? p.importInProgress : null;
    if (!i) next.phase = isRunning(state.phase) ? "done" : state.phase;
    else if (str(i.errorMessage)) Object.assign(next, { phase: "failed", failure: str(i.errorMessage) });
    else next.phase = "importing";
  }
  return next;
}

/** build_get_agent_status: "init" means running; otherwise the last agent message says how it ended. */
export function applyAgentStatus(state: BuildState, st: Json, now = Date.now()): BuildState {
  const conversation = st.realtimeConversation;
  const next: BuildState = {
    ...state,
    work: "agent",
    projectId: str(st.projectId) ?? state.projectId,
    messages: latestMessages(conversation).length ? latestMessages(conversation) : state.messages,
    secrets: missingFromStatus(st) ?? secretsNeeded(conversation, state.setSecretNames),
    needsMessages: false,
  };
  const credits = num(st.creditsSpent);
  if (credits !== undefined) next.credits = { value: credits, scope: "run" };
  const startedAt = str(st.startedAt) ? Date.parse(str(st.startedAt)!) : NaN;
  // While it runs, the run's own start wins when it is a plausible past time (simulated clocks may run ahead).
  if (st.status === "init" && Number.isFinite(startedAt) && startedAt <= now && now - startedAt < 86_400_000)
    next.elapsed = { seconds: (now - startedAt) / 1000, at: now };

  if (st.status === "init") return { ...next, phase: "agent-running", canDeploy: false, sawRunning: true };
  // T1: `done` is also the previous run's resting state, and `idle` means no run showed yet.
  if (st.status !== "done" && state.since === undefined)
    return { ...next, phase: "failed", canDeploy: false, failure: "No agent run has happened on this project (idle)." };
  if (st.status !== "done" || !isOurs(state, st.startedAt))
    return notShownYet(next, "agent-running", "new agent run", now);
  const last = latestMessages(conversation, 1)[0];
  if (last && FAILED_MESSAGE_TYPES.has(last.type))
    return { ...next, phase: "failed", failure: last.text, canDeploy: false };
  const wasRunning = isRunning(state.phase) || state.phase === "unknown";
  return { ...next, phase: "done", canDeploy: true, needsProject: wasRunning || state.needsProject };
}

/** build_get_deployment_status: deploying, success, error, or null (never deployed; T4: not ours yet). */
export function applyDeployment(state: BuildState, d: Json, now = Date.now()): BuildState {
  return deploymentPhase(
    { ...state, work: "deployment", canDeploy: false },
    d.status === null || d.status === undefined ? null : d,
    now,
  );
}

/** A waitResult (build_wait, or `wait` inside the launch/start/deploy results). */
export function fromWait(w: Json, base: BuildState, now = Date.now()): BuildState {
  const work = asWork(w.until) ?? base.work;
  let state: BuildState = withElapsed({ ...base, work, phase: RUNNING[work] }, num(w.elapsedSeconds), now);
  const credits = num(w.creditsSpent);
  if (credits !== undefined) state.credits = { value: credits, scope: "run" };
  if (isObject(w.project)) state = applyProject(state, w.project);
  if (w.outcome === "done") state = { ...state, phase: "done", canDeploy: work === "agent" };
  else if (w.outcome === "failed")
    state = { ...state, phase: "failed", failure: str(w.message) ?? "The work failed.", canDeploy: false };
  else
    state = {
      ...state,
      phase: RUNNING[work],
      notes: [...state.notes, "The server stopped waiting; this view keeps following the work."],
    };
  return { ...state, needsProject: false, needsMessages: work === "agent" };
}

/**
 * The state a tool result opens the console with. `isError` results may carry a failed
 * waitResult as structured content; otherwise their text is the failure.
 */
export function stateFromResult(
  tool: string,
  sc: Json | undefined,
  isError: boolean,
  errorText: string,
  args: Json = {},
  now = Date.now(),
): BuildState {
  const projectId =
    str(sc?.projectId) ?? (isObject(sc?.project) ? str(sc.project.projectId) : undefined) ?? str(args.projectId);
  const base = empty(projectId);
  if (sc && isObject(sc.wait)) return fromWait(sc.wait, base, now);
  if (sc && typeof sc.outcome === "string" && isObject(sc.project)) {
    const state = fromWait(sc, base, now);
    return isError && errorText ? { ...state, phase: "failed", failure: errorText } : state;
  }
  if (isError) return { ...base, phase: "failed", failure: errorText || "The tool failed." };
  if (!sc) return base;

  const warnings = Array.isArray(sc.warnings)
    ? sc.warnings.filter(isObject).map((w) => {
        const code = w.errorCode ? ` (${String(w.errorCode)})` : "";
        return `Step ${str(w.step) ?? "?"} did not happen${code}: ${str(w.errorMessage) ?? ""}`.trim();
      })
    : [];
  const since =
    typeof sc.startedAt === "string" && Number.isFinite(Date.parse(sc.startedAt))
      ? Date.parse(sc.startedAt)
      : undefined;
  if (tool === "build_deploy")
    return {
      ...base,
      work: "deployment",
      phase: "deploying",
      notes: warnings,
      elapsed: { seconds: 0, at: now },
      since,
      sawRunning: false,
    };
  if (tool === "build_launch_project" && isObject(sc.agent)) {
    const agentWarnings = (Array.isArray(sc.agent.warnings) ? sc.agent.warnings : []).map(
      (w) => `Agent warning: ${String(w)}`,
    );
    if (sc.agent.started !== true) {
      const failure =
        "The project was created and charged, but the agent did not start. " +
        "Once the cause below is fixed, call build_start_agent with the same prompt.";
      const said = warnings.length === 0 && str(sc.agent.message) ? [`The service said: ${str(sc.agent.message)}`] : [];
      return { ...base, phase: "failed", failure, notes: [...warnings, ...said, ...agentWarnings] };
    }
    return {
      ...base,
      phase: "agent-running",
      notes: [...warnings, ...agentWarnings],
      elapsed: { seconds: 0, at: now },
      since,
      sawRunning: false,
    };
  }
  if (tool === "build_start_agent" || tool === "build_launch_project")
    return {
      ...base,
      phase: "agent-running",
      notes: warnings,
      elapsed: { seconds: 0, at: now },
      since,
      sawRunning: false,
    };
  return base;
}

/** Applies the answer of one of the view's polls; the elapsed time freezes when the work ends. */
export function applyPoll(state: BuildState, tool: string, sc: Json, now = Date.now()): BuildState {
  let next = state;
  if (tool === "build_get_agent_status") next = applyAgentStatus(state, sc, now);
  else if (tool === "build_get_deployment_status") next = applyDeployment(state, sc, now);
  else if (tool === "build_get_project") next = applyProject(state, sc, now);
  if (isRunning(state.phase) && !isRunning(next.phase) && next.elapsed && next.elapsed === state.elapsed) {
    next = { ...next, elapsed: { seconds: next.elapsed.seconds + Math.max(0, now - next.elapsed.at) / 1000, at: now } };
  }
  return next;
}

/** After the view itself started the next step (build_deploy), keep what is known of the project. */
export function carryOver(previous: BuildState, next: BuildState): BuildState {
  return {
    ...next,
    projectId: next.projectId ?? previous.projectId,
    previewImageUrl: next.previewImageUrl ?? previous.previewImageUrl,
    messages: next.messages.length ? next.messages : previous.messages,
    secrets: next.secrets.length ? next.secrets : previous.secrets,
    setSecretNames: next.setSecretNames ?? previous.setSecretNames,
    credits: next.credits ?? previous.credits,
  };
}

/** The read tool the view calls next, or null when there is nothing left to follow. */
export function nextPoll(state: BuildState): { name: string; arguments: { projectId: string } } | null {
  if (!state.projectId) return null;
  const args = { projectId: state.projectId };
  if (state.phase === "agent-running" || (state.phase === "unknown" && state.work === "agent"))
    return { name: "build_get_agent_status", arguments: args };
  if (state.phase === "deploying") return { name: "build_get_deployment_status", arguments: args };
  if (state.phase === "recovering" || state.phase === "importing")
    return { name: "build_get_project", arguments: args };
  if (state.needsMessages) return { name: "build_get_agent_status", arguments: args };
  if (state.needsProject) return { name: "build_get_project", arguments: args };
  return null;
}

export function elapsedMs(state: BuildState, now: number): number | undefined {
  if (!state.elapsed) return undefined;
  const running = isRunning(state.phase);
  return state.elapsed.seconds * 1000 + (running ? Math.max(0, now - state.elapsed.at) : 0);
}
