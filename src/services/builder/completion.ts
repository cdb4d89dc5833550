/**
 * When build work has ended, per kind of work: the reference's completion signals (§19) and its
 * traps: T1 a stale `done` left by the previous run, T2 a `null` read from a cached snapshot before
 * the recovery or import lock appears, T3 an import that went null on failure, T4 the previous
 * deployment's `success`, T5 a restarted server that still reads Active, T6 a multi-prompt batch
 * whose status flips to `done` between prompts.
 *
 * The one definition read by build_wait (trackers.ts, waits.ts) and by the build console view
 * (views/build-console/phase.ts, bundled for the browser): it imports nothing and reads every
 * reading as untrusted JSON, so the view can bundle it without server code and neither side can
 * disagree with the other.
 *
 * `since` is when the work was started (ms; the call that started it, or build_wait's `since`).
 * With it, a state older than the call is the previous work's, and an absent state may still
 * appear: it gets APPEARANCE_MS. Without it, the first state read is taken as it is. `seen` is
 * what one follower (a wait, a console) has seen so far: each judgement returns the new one.
 */

export type Kind = "agent" | "deployment" | "versionRecovery" | "import" | "server" | "rebuild" | "githubPull";
export type Phase = "running" | "done" | "failed" | "idle";

export interface Verdict {
  phase: Phase;
  /** Why the work failed or why there is nothing to wait for. */
  message?: string;
  /** A progress line. */
  line: string;
}

export interface Seen {
  /** The work (or its lock) was seen in progress. */
  running?: boolean;
  /** A multi-prompt batch was seen in progress. */
  batch?: boolean;
  /** When the follower first read the server's state (ms). */
  opened?: number;
}

interface Judgement {
  verdict: Verdict;
  seen: Seen;
}

/** Which read each kind of work is judged from. */
export const READING: Record<Kind, "agentStatus" | "project" | "rebuildStatus" | "pullStatus"> = {
  agent: "agentStatus",
  deployment: "project",
  versionRecovery: "project",
  import: "project",
  server: "project",
  rebuild: "rebuildStatus",
  githubPull: "pullStatus",
};

export const KINDS = Object.keys(READING) as Kind[];

/**
 * The line of work seen in progress, per kind: from a reading (the judges below) or from the
 * answer of the call that started it (waits.ts). The recovery's adds its version, the server's its status.
 */
export const RUNNING_LINE: Record<Kind, string> = {
  agent: "Agent running",
  deployment: "Deploying",
  versionRecovery: "Recovering version",
  import: "Importing and rebuilding",
  server: "Server",
  rebuild: "Rebuilding",
  githubPull: "Pulling from GitHub and rebuilding",
};

/** How long started work may take to show through the details snapshot (cached "a few seconds"). */
export const APPEARANCE_MS = 20_000;
/** Server and local clocks may disagree a little; a previous operation is minutes older. */
const SKEW_MS = 5_000;

const FAILED_MESSAGE_TYPES = new Set(["error", "limit-reached"]);
const BATCH_RUNNING = new Set(["planning", "executing", "paused"]);

type Json = Record<string, unknown>;
const obj = (v: unknown): Json => (typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Json) : {});
const objOrNull = (v: unknown): Json | null =>
  typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Json) : null;
const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

function isNewer(timestamp: unknown, since: number | undefined): boolean {
  if (since === undefined || typeof timestamp !== "string") return false;
  const t = Date.parse(timestamp);
  return Number.isFinite(t) && t >= since - SKEW_MS;
}

/** An ended state is this work's: seen running, started after `since`, or there is no `since`. */
function isOurs(sawRunning: boolean | undefined, startedAt: unknown, since: number | undefined): boolean {
  return sawRunning === true || since === undefined || isNewer(startedAt, since);
}

/** Waiting for started work to show: running until the window passes, then nothing to wait for. */
function notYet(since: number | undefined, now: number, waiting: string, nothing: string): Verdict {
  if (since !== undefined && now - since < APPEARANCE_MS) return { phase: "running", line: waiting };
  return { phase: "idle", line: nothing, message: nothing };
}

/** The last message not written by the user, or undefined. */
export function lastAgentMessage(conversation: unknown): { message?: string; messageType?: string } | undefined {
  if (!Array.isArray(conversation)) return undefined;
  for (let i = conversation.length - 1; i >= 0; i--) {
    const m = objOrNull(conversation[i]);
    if (m && m.author !== "user") return m as { message?: string; messageType?: string };
  }
  return undefined;
}

/**
 * The batch agent/status reports, when it is the project's current work: one in flight, or an
 * ended one no single run has started after (both times are the service's clock).
 */
export function currentBatch(status: unknown): Json | undefined {
  const s = obj(status);
  const batch = objOrNull(s.multiPrompt);
  if (!batch || BATCH_RUNNING.has(String(batch.status))) return batch ?? undefined;
  const runStarted = Date.parse(str(s.startedAt) ?? "");
  return runStarted > Date.parse(str(batch.updatedAt) ?? "") ? undefined : batch;
}

function batchPrompts(batch: Json): Json[] {
  return Array.isArray(batch.prompts) ? batch.prompts.map(obj) : [];
}

function batchLine(batch: Json, status: Json): string {
  if (batch.status === "planning") return "Batch: planning its prompts";
  const total = typeof batch.totalPrompts === "number" ? batch.totalPrompts : batchPrompts(batch).length;
  const index = typeof batch.currentPromptIndex === "number" ? batch.currentPromptIndex : -1;
  const name = `Batch ${String(batch.status)}`;
  if (index < 0) return `${name}: ${total} prompts, none started yet`;
  return `${name}: prompt ${index + 1} of ${total} ${status.status === "init" ? "running" : "done"}`;
}

/** T6: only `multiPrompt.status` done or cancelled ends a batch. */
function batchEnd(batch: Json): Verdict {
  const prompts = batchPrompts(batch);
  const total = typeof batch.totalPrompts === "number" ? batch.totalPrompts : prompts.length;
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

type Judge = (reading: Json, seen: Seen, since: number | undefined, now: number) => Judgement;

const agent: Judge = (status, seen, since, now) => {
  const batch = currentBatch(status);
  if (batch && BATCH_RUNNING.has(String(batch.status)))
    return { verdict: { phase: "running", line: batchLine(batch, status) }, seen: { ...seen, batch: true } };
  if (batch && isOurs(seen.batch, batch.startedAt, since)) return { verdict: batchEnd(batch), seen };
  if (status.status === "init")
    return { verdict: { phase: "running", line: RUNNING_LINE.agent }, seen: { ...seen, running: true } };
  if (status.status === "done" && isOurs(seen.running, status.startedAt, since)) {
    const last = lastAgentMessage(status.realtimeConversation);
    if (last && FAILED_MESSAGE_TYPES.has(last.messageType ?? ""))
      return {
        verdict: { phase: "failed", message: str(last.message) ?? "The agent run failed.", line: "Agent failed" },
        seen,
      };
    return { verdict: { phase: "done", line: "Agent done" }, seen };
  }
  const verdict =
    status.status === "done"
      ? notYet(
          since,
          now,
          "Waiting for the new run to show (the status still shows the previous one)",
          "The agent status still shows the previous run: the new run never showed.",
        )
      : notYet(
          since,
          now,
          "Waiting for the run to show",
          "No agent run has ever happened on this project (idle): nothing to wait for.",
        );
  return { verdict, seen };
};

const deployment: Judge = (p, seen, since, now) => {
  const d = objOrNull(p.deployment);
  const status = d?.status ?? null;
  if (status === "deploying")
    return { verdict: { phase: "running", line: RUNNING_LINE.deployment }, seen: { ...seen, running: true } };
  const ours = isOurs(seen.running, d?.createdAt, since);
  if (status === "error" && ours)
    return { verdict: { phase: "failed", message: "The deployment ended in error.", line: "Deployment failed" }, seen };
  if (status === "success" && ours) {
    const when = since === undefined && str(d?.createdAt) ? ` (the latest deployment, started ${d?.createdAt})` : "";
    const where = str(p.productionProjectUrl) ? ` to ${p.productionProjectUrl}` : "";
    return { verdict: { phase: "done", line: `Deployed${where}${when}` }, seen };
  }
  if (status === null)
    return {
      verdict: notYet(
        since,
        now,
        "Waiting for the deployment to show",
        "This project has never been deployed: nothing to wait for.",
      ),
      seen,
    };
  return {
    verdict: notYet(
      since,
      now,
      `Waiting for the new deployment to show (the latest is the previous one: ${String(status)})`,
      `The latest deployment is still the previous one (${String(status)}): the new one never showed.`,
    ),
    seen,
  };
};

const versionRecovery: Judge = (p, seen, since, now) => {
  const r = objOrNull(p.versionRecovery);
  if (r && r.status !== "error")
    return {
      verdict: { phase: "running", line: `${RUNNING_LINE.versionRecovery} ${str(r.versionId) ?? ""}`.trim() },
      seen: { ...seen, running: true },
    };
  if (r && isOurs(seen.running, r.startedAt, since)) {
    const message = str(r.errorMessage) ?? "The version recovery failed.";
    return { verdict: { phase: "failed", message, line: "Recovery failed" }, seen };
  }
  // T2: null only ends a recovery whose lock was seen.
  if (seen.running) return { verdict: { phase: "done", line: "Recovery finished" }, seen };
  return {
    verdict: notYet(
      since,
      now,
      "Waiting for the recovery to show",
      "No version recovery is running: nothing to wait for.",
    ),
    seen,
  };
};

/** An imported project is live: its server is Active and it has a preview (§19 Import, T3). */
function isLive(project: unknown): boolean {
  const p = obj(project);
  return (
    p.agentServerStatus === "Active" &&
    Boolean(str(p.temporalDevelopmentProjectUrl) || str(p.cachedDevelopmentUrl) || str(p.previewImageUrl))
  );
}

const importWork: Judge = (p, seen, since, now) => {
  const lock = objOrNull(p.importInProgress);
  const error = str(lock?.errorMessage);
  if (error) return { verdict: { phase: "failed", message: error, line: "Import failed" }, seen };
  if (lock) return { verdict: { phase: "running", line: RUNNING_LINE.import }, seen: { ...seen, running: true } };
  // T3: the lock goes null on failure too; success also shows a live server and a preview.
  if (seen.running) {
    const verdict: Verdict = isLive(p)
      ? { phase: "done", line: "Import finished" }
      : {
          phase: "failed",
          message:
            "The import lock was released without a running server or a preview: " +
            "the import most likely failed (read build_get_conversation for the reason).",
          line: "Import ended without a result",
        };
    return { verdict, seen };
  }
  return {
    verdict: notYet(since, now, "Waiting for the import to show", "No import is running: nothing to wait for."),
    seen,
  };
};

/**
 * Start or restart of the dev server (T5): Active ends the wait once a reading was not Active; a
 * restarted server may still read Active for a while, so with `since` only Active readings for
 * APPEARANCE_MS also end it (no other signal is documented). An asleep server nobody is starting
 * (Archived, Archiving) is `idle`.
 */
const server: Judge = (p, seenBefore, since, now) => {
  // §1.4: an asleep reading may be a snapshot from before a deploy or recover that is starting the
  // server (SERVER_NOT_READY gives no since): even without one, give the start time to show.
  const seen = { ...seenBefore, opened: seenBefore.opened ?? now };
  const status = str(p.agentServerStatus) ?? "unknown";
  if (status === "Active") {
    if (seen.running || since === undefined) return { verdict: { phase: "done", line: "Server Active" }, seen };
    if (now - since < APPEARANCE_MS)
      return {
        verdict: { phase: "running", line: "Waiting for the restart to show (the server still reads Active)" },
        seen,
      };
    return {
      verdict: {
        phase: "done",
        line: "Server Active (it never read otherwise: the restart was quick or is not shown)",
      },
      seen,
    };
  }
  if (status === "Archived" || status === "Archiving") {
    if (seen.running)
      return {
        verdict: {
          phase: "failed",
          message: `The server went to ${status} instead of starting.`,
          line: `Server ${status}`,
        },
        seen,
      };
    const verdict = notYet(
      since ?? seen.opened,
      now,
      `Waiting for the start to show (the server still reads ${status})`,
      `The server still reads ${status} after ${APPEARANCE_MS / 1000} s of waiting: nothing shows it starting. ` +
        "If a deploy or recovery answered SERVER_NOT_READY, its start (3 credits) is already paid: " +
        "wait again before anything else; otherwise start it with build_restart_server (3 credits).",
    );
    return { verdict, seen };
  }
  return { verdict: { phase: "running", line: `${RUNNING_LINE.server} ${status}` }, seen: { ...seen, running: true } };
};

/** GET rebuild/status: `rebuilding` → `success` (livePreviewUrl) or `error` in a 200; `idle` = never rebuilt. */
const rebuild: Judge = (r, seen, since, now) => {
  if (r.status === "rebuilding")
    return { verdict: { phase: "running", line: RUNNING_LINE.rebuild }, seen: { ...seen, running: true } };
  const ours = isOurs(seen.running, r.startedAt, since);
  if (r.status === "error" && ours) {
    const reason = [str(r.errorCode), str(r.errorMessage)].filter(Boolean).join(": ");
    return {
      verdict: { phase: "failed", message: reason || "The rebuild ended in error.", line: "Rebuild failed" },
      seen,
    };
  }
  if (r.status === "success" && ours) {
    const live = str(r.livePreviewUrl) ? `, live at ${r.livePreviewUrl}` : "";
    return { verdict: { phase: "done", line: `Rebuilt${live}` }, seen };
  }
  if (r.status === "idle" || !r.status)
    return {
      verdict: notYet(
        since,
        now,
        "Waiting for the rebuild to show",
        "No rebuild has run on this project (idle): nothing to wait for.",
      ),
      seen,
    };
  return {
    verdict: notYet(
      since,
      now,
      `Waiting for the new rebuild to show (the status still shows the previous one: ${String(r.status)})`,
      `The rebuild status still shows the previous one (${String(r.status)}): the new one never showed.`,
    ),
    seen,
  };
};

/** GET github/pull-status: `pulling` → `success` or `error`; null = no pull. It stops saying pulling after 5 min. */
const githubPull: Judge = (s, seen, since, now) => {
  if (s.status === "pulling")
    return {
      verdict: { phase: "running", line: RUNNING_LINE.githubPull },
      seen: { ...seen, running: true },
    };
  if (s.status === null || s.status === undefined)
    return {
      verdict: notYet(
        since,
        now,
        "Waiting for the pull to show",
        "No GitHub pull has run on this project: nothing to wait for.",
      ),
      seen,
    };
  if (isOurs(seen.running, s.createdAt, since)) {
    if (s.status === "error")
      return { verdict: { phase: "failed", message: "The GitHub pull ended in error.", line: "Pull failed" }, seen };
    // The value a pull shows once it auto-completes after 5 minutes is not documented: any other
    // status ends the wait.
    return {
      verdict: {
        phase: "done",
        line: s.status === "success" ? "Pulled and rebuilt" : `Pull ended (${String(s.status)})`,
      },
      seen,
    };
  }
  return {
    verdict: notYet(
      since,
      now,
      `Waiting for the new pull to show (the status still shows the previous one: ${String(s.status)})`,
      `The pull status still shows the previous one (${String(s.status)}): the new one never showed.`,
    ),
    seen,
  };
};

const JUDGES: Record<Kind, Judge> = {
  agent,
  deployment,
  versionRecovery,
  import: importWork,
  server,
  rebuild,
  githubPull,
};

/** Where the `kind` of work stands after one more `reading` (its READING), given what was seen before. */
export function judge(kind: Kind, reading: unknown, seen: Seen, since: number | undefined, now: number): Judgement {
  return JUDGES[kind](obj(reading), seen, since, now);
}

/**
 * T2's second signal, for a recovery or import whose lock never showed (it ended inside the read
 * lag): a recovery made a version with `recoveredVersionId` since the call; an import made a
 * version and left an Active server with a preview. `versions` is GET …/versions' list.
 */
export function endedUnseen(
  kind: "versionRecovery" | "import",
  versions: unknown,
  project: unknown,
  since: number,
): boolean {
  const made = (Array.isArray(versions) ? versions : []).map(obj).filter((v) => isNewer(v.createdAt, since));
  if (kind === "versionRecovery") return made.some((v) => typeof v.recoveredVersionId === "string");
  return made.length > 0 && isLive(project);
}

/** The kinds whose `idle` verdict (with a `since`) is worth checking with endedUnseen. */
export function hasSecondSignal(kind: Kind): kind is "versionRecovery" | "import" {
  return kind === "versionRecovery" || kind === "import";
}
