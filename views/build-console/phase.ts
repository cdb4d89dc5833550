import {
  endedUnseen,
  hasSecondSignal,
  judge,
  KINDS,
  READING,
  type Kind,
  type Seen,
  type Verdict,
} from "../../src/services/builder/completion.js";
import { httpsUrl, isObject, num, siteUrl, str, truncate, type Json } from "../shared/format.js";

/**
 * The build console's state, derived from the structured content of the build tools (waitResult,
 * launchResult, agentStatus, projectDetails, deployment) and advanced by the view's own polls.
 * Pure: no DOM, no timers. When the work has ended is build_wait's own definition
 * (src/services/builder/completion.ts, bundled in), never a rule of this view's.
 */

export type Work = Kind;
export type Phase =
  | "agent-running"
  | "deploying"
  | "recovering"
  | "importing"
  | "starting-server"
  | "rebuilding"
  | "pulling"
  | "done"
  | "failed"
  | "idle"
  | "unknown";

export interface AgentMessage {
  text: string;
  type: string;
  /** The time shown: the upstream's stamp, or when this view first saw the message if that stamp is ahead. */
  at?: string;
  /** The upstream's own stamp (a simulated or skewed clock may put it in the future). */
  sent?: string;
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
   * When the tool started the work (its startedAt, or build_wait's since; ms) and what this view
   * has seen of it: completion.ts's judge reads both, as build_wait does (traps T1-T6).
   */
  since?: number;
  seen: Seen;
  /**
   * T2: the recovery or import never showed its lock; the project read that said so, waiting for
   * the second signal (the versions list) before it counts as ended or as nothing to follow.
   */
  confirming?: { project: Json; message?: string };
  /** Secret names the project's details list (§4: a needed secret's isProvided is not reliable). */
  setSecretNames?: string[];
  /** What the agent was asked to do (the tool's prompt), shown before its first message arrives. */
  request?: string;
}

export const PHASE_LABEL: Record<Phase, string> = {
  "agent-running": "Agent running",
  deploying: "Deploying",
  recovering: "Recovering version",
  importing: "Importing",
  "starting-server": "Starting server",
  rebuilding: "Rebuilding",
  pulling: "Pulling from GitHub",
  done: "Done",
  failed: "Failed",
  idle: "Nothing to follow",
  unknown: "Waiting for status",
};

const RUNNING: Record<Work, Phase> = {
  agent: "agent-running",
  deployment: "deploying",
  versionRecovery: "recovering",
  import: "importing",
  server: "starting-server",
  rebuild: "rebuilding",
  githubPull: "pulling",
};
const MAX_MESSAGES = 4;

export function isRunning(phase: Phase): boolean {
  return (Object.values(RUNNING) as Phase[]).includes(phase);
}

export function doneLabel(state: BuildState): string {
  if (state.phase !== "done") return PHASE_LABEL[state.phase];
  return {
    agent: "Agent finished",
    deployment: "Deployed",
    versionRecovery: "Version recovered",
    import: "Import finished",
    server: "Server running",
    rebuild: "Rebuilt",
    githubPull: "Pulled from GitHub",
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
    seen: {},
  };
}

function asWork(value: unknown): Work | undefined {
  return KINDS.find((k) => k === value);
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
      sent: str(m.createdAt),
    }));
}

/**
 * Times a user can trust: a stamp ahead of this view's clock (a simulated upstream, a skewed one)
 * shows as the moment the view first saw the message instead, and keeps showing that on later reads.
 */
export function trustedTimes(messages: AgentMessage[], previous: AgentMessage[], now: number): AgentMessage[] {
  return messages.map((m) => {
    const before = previous.find((p) => p.sent === m.sent && p.text === m.text && p.type === m.type);
    if (before) return { ...m, at: before.at };
    const sent = m.sent ? Date.parse(m.sent) : NaN;
    return Number.isFinite(sent) && sent > now ? { ...m, at: new Date(now).toISOString() } : m;
  });
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

// ---- whether the work has ended: build_wait's judge (completion.ts) ----

/** The state after one more reading of the work's status, as build_wait would judge it. */
function follow(state: BuildState, reading: unknown, now: number): BuildState {
  const { verdict, seen } = judge(state.work, reading, state.seen, state.since, now);
  return withVerdict({ ...state, seen }, verdict, reading);
}

function withVerdict(state: BuildState, verdict: Verdict, reading: unknown): BuildState {
  const next: BuildState = { ...state, confirming: undefined };
  if (verdict.phase === "running") return { ...next, phase: RUNNING[state.work], canDeploy: false };
  if (verdict.phase === "failed")
    return { ...next, phase: "failed", canDeploy: false, failure: verdict.message ?? "The work failed." };
  if (verdict.phase === "done") {
    const wasRunning = isRunning(state.phase) || state.phase === "unknown";
    // §1.4, T10: re-read the details (preview, links) after the work ends.
    return {
      ...next,
      phase: "done",
      canDeploy: state.work === "agent",
      needsProject: wasRunning || state.needsProject,
    };
  }
  // T2: a lock that never showed may belong to work that ended inside the read lag: the second signal decides.
  if (hasSecondSignal(state.work) && state.since !== undefined && isObject(reading))
    return { ...next, phase: RUNNING[state.work], confirming: { project: reading, message: verdict.message } };
  return { ...next, phase: "idle", canDeploy: false, failure: verdict.message };
}

/** build_list_versions, read for T2's second signal. */
export function applyVersions(state: BuildState, sc: Json): BuildState {
  const c = state.confirming;
  if (!c || !hasSecondSignal(state.work) || state.since === undefined) return state;
  if (endedUnseen(state.work, sc.versions, c.project, state.since))
    return { ...state, confirming: undefined, phase: "done", canDeploy: false, needsProject: true };
  const message = c.message ?? "Nothing to follow.";
  return { ...state, confirming: undefined, phase: "idle", canDeploy: false, failure: message };
}

// ---- applying answers ----

function withElapsed(state: BuildState, seconds: number | undefined, now: number): BuildState {
  return seconds === undefined ? state : { ...state, elapsed: { seconds, at: now } };
}

/** Project details: links, preview, and for work judged from the details the phase itself. */
export function applyProject(state: BuildState, p: Json, now = Date.now()): BuildState {
  let next: BuildState = { ...state, projectId: str(p.projectId) ?? state.projectId, needsProject: false };
  if (Array.isArray(p.secrets)) {
    next.setSecretNames = p.secrets.filter(isObject).flatMap((x) => (str(x.secretName) ? [str(x.secretName)!] : []));
    next.secrets = state.secrets.filter((x) => !next.setSecretNames!.includes(x.name));
  }
  const preview = httpsUrl(p.previewImageUrl);
  if (preview) next.previewImageUrl = preview;
  if (next.credits?.scope !== "run" && num(p.totalCreditsSpent) !== undefined)
    next.credits = { value: num(p.totalCreditsSpent)!, scope: "project" };
  if (READING[state.work] === "project" && isRunning(state.phase))
    next = { ...follow(next, p, now), needsProject: false };
  // T4: while a deployment is followed, production is linked only once this one succeeded.
  const deployment = isObject(p.deployment) ? p.deployment : null;
  if (deployment?.status === "success" && (next.work !== "deployment" || next.phase === "done")) {
    const url = siteUrl(p.productionProjectUrl);
    if (url) next.productionUrl = url;
  }
  return next;
}

/** build_get_agent_status: "init" means running; otherwise the last agent message says how it ended. */
export function applyAgentStatus(state: BuildState, st: Json, now = Date.now()): BuildState {
  const conversation = st.realtimeConversation;
  const latest = trustedTimes(latestMessages(conversation), state.messages, now);
  const next: BuildState = {
    ...state,
    work: "agent",
    projectId: str(st.projectId) ?? state.projectId,
    messages: latest.length ? latest : state.messages,
    secrets: missingFromStatus(st) ?? secretsNeeded(conversation, state.setSecretNames),
    needsMessages: false,
  };
  const credits = num(st.creditsSpent);
  if (credits !== undefined) next.credits = { value: credits, scope: "run" };
  const startedAt = str(st.startedAt) ? Date.parse(str(st.startedAt)!) : NaN;
  // While it runs, the run's own start wins when it is a plausible past time (simulated clocks may run ahead).
  if (st.status === "init" && Number.isFinite(startedAt) && startedAt <= now && now - startedAt < 86_400_000)
    next.elapsed = { seconds: (now - startedAt) / 1000, at: now };
  // A read for the messages of work that already ended changes nothing of its verdict.
  return isRunning(state.phase) || state.phase === "unknown" ? follow(next, st, now) : next;
}

/** build_get_deployment_status: deploying, success, error, or null (never deployed; T4: not ours yet). */
export function applyDeployment(state: BuildState, d: Json, now = Date.now()): BuildState {
  // The same judge as build_wait, which reads the details' `deployment` (the same object).
  const deployment = d.status === null || d.status === undefined ? null : d;
  return follow({ ...state, work: "deployment", canDeploy: false }, { deployment }, now);
}

/** The last reading of the work's own status a waitResult carries (the details, or lastStatus). */
function lastReading(work: Work, w: Json): unknown {
  const p = isObject(w.project) ? w.project : undefined;
  if (READING[work] === "project") return p;
  if (READING[work] === "agentStatus") return p && { status: p.agentProcessStatus, multiPrompt: p.multiPrompt };
  return w.lastStatus;
}

/**
 * A waitResult (build_wait, or `wait` inside a start's result). Its outcome is build_wait's
 * verdict: done, failed and idle stand; a wait that timed out is followed on with the same judge,
 * from what its last reading shows (a lock seen there counts as seen).
 */
export function fromWait(w: Json, base: BuildState, now = Date.now()): BuildState {
  const work = asWork(w.until) ?? base.work;
  let state: BuildState = withElapsed({ ...base, work }, num(w.elapsedSeconds), now);
  const credits = num(w.creditsSpent);
  if (credits !== undefined) state.credits = { value: credits, scope: "run" };
  const message = str(w.message);
  if (w.outcome === "done") state = { ...state, phase: "done", canDeploy: work === "agent" };
  else if (w.outcome === "failed")
    state = { ...state, phase: "failed", failure: message ?? "The work failed.", canDeploy: false };
  else if (w.outcome === "idle")
    state = { ...state, phase: "idle", failure: message ?? "Nothing to follow.", canDeploy: false };
  else {
    state = {
      ...state,
      phase: RUNNING[work],
      seen: judge(work, lastReading(work, w), state.seen, state.since, now).seen,
      notes: [...state.notes, "The server stopped waiting; this view keeps following the work."],
    };
    if (READING[work] !== "project") state = { ...state, needsProject: false };
    return isObject(w.project) ? { ...applyProject(state, w.project, now), needsMessages: work === "agent" } : state;
  }
  if (isObject(w.project)) state = applyProject(state, w.project, now);
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
  // When the work started: the start's startedAt, or the since build_wait was given.
  const since = time(sc?.startedAt) ?? time(args.since);
  const request = str(args.prompt)?.trim() ? truncate(str(args.prompt)!.trim(), 400) : undefined;
  const base = { ...empty(projectId), since, request };
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
  if (tool === "build_deploy")
    return {
      ...base,
      work: "deployment",
      phase: "deploying",
      notes: warnings,
      elapsed: { seconds: 0, at: now },
      since,
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
    };
  }
  if (tool === "build_start_agent" || tool === "build_launch_project")
    return {
      ...base,
      phase: "agent-running",
      notes: warnings,
      elapsed: { seconds: 0, at: now },
      since,
    };
  return base;
}

function time(value: unknown): number | undefined {
  const t = typeof value === "string" ? Date.parse(value) : NaN;
  return Number.isFinite(t) ? t : undefined;
}

/** Applies the answer of one of the view's polls; the elapsed time freezes when the work ends. */
export function applyPoll(state: BuildState, tool: string, sc: Json, now = Date.now()): BuildState {
  let next = state;
  if (tool === "build_get_agent_status") next = applyAgentStatus(state, sc, now);
  else if (tool === "build_get_deployment_status") next = applyDeployment(state, sc, now);
  else if (tool === "build_get_project") next = applyProject(state, sc, now);
  else if (tool === "build_get_rebuild_status" || tool === "build_get_github_pull_status")
    next = isRunning(state.phase) ? follow(state, sc, now) : state;
  else if (tool === "build_list_versions") next = applyVersions(state, sc);
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

/** Where the view reads each kind of work's status (completion.ts READING). */
const POLL: Record<(typeof READING)[Work], string> = {
  agentStatus: "build_get_agent_status",
  project: "build_get_project",
  rebuildStatus: "build_get_rebuild_status",
  pullStatus: "build_get_github_pull_status",
};

/** The read tool the view calls next, or null when there is nothing left to follow. */
export function nextPoll(state: BuildState): { name: string; arguments: Json & { projectId: string } } | null {
  if (!state.projectId) return null;
  const args = { projectId: state.projectId };
  // T2's second signal: build_wait reads the same 50 latest versions.
  if (state.confirming) return { name: "build_list_versions", arguments: { ...args, limit: 50 } };
  if (state.phase === "unknown" && state.work === "agent") return { name: "build_get_agent_status", arguments: args };
  // The deployment's own status endpoint carries the same object as the details' `deployment`.
  if (state.phase === "deploying") return { name: "build_get_deployment_status", arguments: args };
  if (isRunning(state.phase)) return { name: POLL[READING[state.work]], arguments: args };
  if (state.needsMessages) return { name: "build_get_agent_status", arguments: args };
  if (state.needsProject) return { name: "build_get_project", arguments: args };
  return null;
}

export function elapsedMs(state: BuildState, now: number): number | undefined {
  if (!state.elapsed) return undefined;
  const running = isRunning(state.phase);
  return state.elapsed.seconds * 1000 + (running ? Math.max(0, now - state.elapsed.at) : 0);
}
