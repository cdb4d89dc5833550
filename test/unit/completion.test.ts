// One table of readings drives both followers of build work through the reference's traps (§19
// T1-T6): build_wait (waitFor, over scripted pollers and a scripted client) and the build console
// view (views/build-console/phase.ts, over the same readings as its polls' answers). Both must end
// where the row says: they share completion.ts, and this is what would catch them drifting apart.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Poller, PollListener } from "../../src/core/upstream/poller.js";
import type { ToolContext } from "../../src/core/tools/tool.js";
import { ToolError } from "../../src/core/tools/tool.js";
import { APPEARANCE_MS, KINDS, READING, type Kind, type Phase } from "../../src/services/builder/completion.js";
import { waitFor, type WaitDeps } from "../../src/services/builder/waits.js";
import { WrittenSecrets } from "../../src/services/builder/written-secrets.js";
import { applyPoll, isRunning, nextPoll, stateFromResult, type BuildState } from "../../views/build-console/phase.js";
import { relativeImports } from "../layering.js";

const T0 = Date.parse("2026-11-26T10:00:00.000Z");
const iso = (offsetMs: number) => new Date(T0 + offsetMs).toISOString();
const OLD = "2026-11-19T09:00:00.000Z";
const P = "shop";

interface Row {
  name: string;
  kind: Kind;
  /** Readings of the kind's status (completion.ts READING), each at `at` ms after the start. */
  readings: Array<{ at: number; value: Record<string, unknown> }>;
  /** What GET …/versions lists afterwards (T2's second signal). */
  versions?: Array<Record<string, unknown>>;
  /** The details read after the wait (and by the second signal). */
  after?: Record<string, unknown>;
  expected: Phase;
}

const agent = (status: string, startedAt: string | null, conversation: unknown[] = []) => ({
  status,
  startedAt,
  realtimeConversation: conversation,
});
const live = { agentServerStatus: "Active", temporalDevelopmentProjectUrl: "https://shop.dev.example" };
const lock = { startedAt: iso(1000) };
const recovering = { status: "recovering", versionId: "v1", startedAt: iso(500) };

const ROWS: Row[] = [
  // T1: `done` is also the previous run's resting state.
  {
    name: "T1 the previous run's done, then this run's init and done",
    kind: "agent",
    readings: [
      { at: 2000, value: agent("done", OLD) },
      { at: 5000, value: agent("init", iso(100)) },
      { at: 9000, value: agent("done", iso(100)) },
    ],
    expected: "done",
  },
  {
    name: "T1 only the previous run's done, past the appearance window",
    kind: "agent",
    readings: [
      { at: 2000, value: agent("done", OLD) },
      { at: APPEARANCE_MS + 1000, value: agent("done", OLD) },
    ],
    expected: "idle",
  },
  {
    name: "T1 a done seen after init is ours whatever its startedAt",
    kind: "agent",
    readings: [
      { at: 1000, value: agent("init", null) },
      { at: 4000, value: agent("done", OLD) },
    ],
    expected: "done",
  },
  {
    name: "T1 a run of ours ending on an error message failed",
    kind: "agent",
    readings: [
      { at: 3000, value: agent("done", iso(100), [{ author: "agent", message: "boom", messageType: "error" }]) },
    ],
    expected: "failed",
  },
  {
    name: "T1 a project that never ran (idle), past the window",
    kind: "agent",
    readings: [{ at: APPEARANCE_MS + 1000, value: agent("idle", null) }],
    expected: "idle",
  },
  // T2: a null read from a cached snapshot before the lock appears.
  {
    name: "T2 recovery: a stale null, then the lock, then null",
    kind: "versionRecovery",
    readings: [
      { at: 2000, value: { versionRecovery: null } },
      { at: 5000, value: { versionRecovery: recovering } },
      { at: 9000, value: { versionRecovery: null } },
    ],
    expected: "done",
  },
  {
    name: "T2 recovery: a stale null is still running inside the window",
    kind: "versionRecovery",
    readings: [{ at: 2000, value: { versionRecovery: null } }],
    expected: "running",
  },
  {
    name: "T2 recovery: null past the window and no recovered version: nothing ran",
    kind: "versionRecovery",
    readings: [{ at: APPEARANCE_MS + 1000, value: { versionRecovery: null } }],
    versions: [{ _id: "v9", createdAt: OLD }],
    expected: "idle",
  },
  {
    name: "T2 recovery: ended inside the read lag, confirmed by a new recovered version",
    kind: "versionRecovery",
    readings: [{ at: APPEARANCE_MS + 1000, value: { versionRecovery: null } }],
    versions: [{ _id: "v10", createdAt: iso(30_000), recoveredVersionId: "v1" }],
    expected: "done",
  },
  {
    name: "T2 recovery: the lock says error",
    kind: "versionRecovery",
    readings: [{ at: 3000, value: { versionRecovery: { ...recovering, status: "error", errorMessage: "disk" } } }],
    expected: "failed",
  },
  {
    name: "T2 import: a stale null, then the lock, then null with a live server",
    kind: "import",
    readings: [
      { at: 2000, value: { importInProgress: null } },
      { at: 5000, value: { importInProgress: lock } },
      { at: 9000, value: { importInProgress: null, ...live } },
    ],
    expected: "done",
  },
  // T3: the import lock goes null on failure too.
  {
    name: "T3 import: the lock, then null without a server or preview",
    kind: "import",
    readings: [
      { at: 2000, value: { importInProgress: lock } },
      { at: 9000, value: { importInProgress: null, agentServerStatus: "Archived" } },
    ],
    after: { importInProgress: null, agentServerStatus: "Archived" },
    expected: "failed",
  },
  {
    name: "T3 import: the lock carries an error message",
    kind: "import",
    readings: [{ at: 2000, value: { importInProgress: { ...lock, errorMessage: "bad archive" } } }],
    expected: "failed",
  },
  {
    name: "T3 import: null past the window, no version made: nothing ran",
    kind: "import",
    readings: [{ at: APPEARANCE_MS + 1000, value: { importInProgress: null, ...live } }],
    versions: [],
    after: { importInProgress: null, ...live },
    expected: "idle",
  },
  // T4: the previous deployment's success.
  {
    name: "T4 the previous success, then deploying, then success",
    kind: "deployment",
    readings: [
      { at: 2000, value: { deployment: { status: "success", createdAt: OLD } } },
      { at: 5000, value: { deployment: { status: "deploying", createdAt: iso(200) } } },
      { at: 9000, value: { deployment: { status: "success", createdAt: iso(200) } } },
    ],
    expected: "done",
  },
  {
    name: "T4 only the previous success, past the window",
    kind: "deployment",
    readings: [
      { at: 2000, value: { deployment: { status: "success", createdAt: OLD } } },
      { at: APPEARANCE_MS + 1000, value: { deployment: { status: "success", createdAt: OLD } } },
    ],
    expected: "idle",
  },
  {
    name: "T4 an error after deploying is this deployment's",
    kind: "deployment",
    readings: [
      { at: 2000, value: { deployment: { status: "deploying", createdAt: OLD } } },
      { at: 5000, value: { deployment: { status: "error", createdAt: OLD } } },
    ],
    expected: "failed",
  },
  // T5: a restarted server that still reads Active.
  {
    name: "T5 Active inside the window is the old reading",
    kind: "server",
    readings: [{ at: 2000, value: { agentServerStatus: "Active" } }],
    expected: "running",
  },
  {
    name: "T5 Starting, then Active",
    kind: "server",
    readings: [
      { at: 2000, value: { agentServerStatus: "Active" } },
      { at: 5000, value: { agentServerStatus: "Starting" } },
      { at: 9000, value: { agentServerStatus: "Active" } },
    ],
    expected: "done",
  },
  {
    name: "T5 Starting, then Archived",
    kind: "server",
    readings: [
      { at: 2000, value: { agentServerStatus: "Starting" } },
      { at: 5000, value: { agentServerStatus: "Archived" } },
    ],
    expected: "failed",
  },
  // The same rules for the rebuild and the GitHub pull (their own status endpoints).
  {
    name: "rebuild: the previous success, then rebuilding, then success",
    kind: "rebuild",
    readings: [
      { at: 2000, value: { status: "success", startedAt: OLD } },
      { at: 5000, value: { status: "rebuilding", startedAt: iso(100) } },
      { at: 9000, value: { status: "success", startedAt: iso(100) } },
    ],
    expected: "done",
  },
  {
    name: "GitHub pull: the previous success only, past the window",
    kind: "githubPull",
    readings: [{ at: APPEARANCE_MS + 1000, value: { status: "success", createdAt: OLD } }],
    expected: "idle",
  },
];

/** A poller that hands the row's readings out, one per `at`, on the (fake) clock. */
function scripted<T>(readings: Row["readings"]): Poller<T> {
  return {
    follow(_key: string, listener: PollListener<T>) {
      const timers = readings.map((r) => setTimeout(() => listener({ value: r.value as T }), r.at));
      return () => timers.forEach(clearTimeout);
    },
  };
}

const silent = { debug() {}, info() {}, warn() {}, error() {} };

async function throughBuildWait(row: Row): Promise<Phase> {
  const none = scripted<never>([]);
  const mine = scripted(row.readings);
  const details = { projectId: P, ...(row.after ?? row.readings.at(-1)?.value ?? {}) };
  const deps = {
    client: {
      getProject: async () => (READING[row.kind] === "project" ? details : { projectId: P, ...row.after }),
      listVersions: async () => ({ versions: row.versions ?? [] }),
    },
    writtenSecrets: new WrittenSecrets(),
    agentPoller: row.kind === "agent" ? mine : none,
    projectPoller: READING[row.kind] === "project" ? mine : none,
    rebuildPoller: row.kind === "rebuild" ? mine : none,
    pullPoller: row.kind === "githubPull" ? mine : none,
  } as unknown as WaitDeps;
  const ctx = {
    deps,
    signal: new AbortController().signal,
    progress: async () => {},
    logger: silent,
    secret() {},
    confirm: async () => "unsupported",
    resourcesChanged() {},
  } as ToolContext<WaitDeps>;
  const last = row.readings.at(-1)!.at;
  const timeoutSeconds = Math.ceil((last + 500) / 1000);
  const pending = waitFor(P, row.kind, ctx, { since: T0, timeoutSeconds }).then(
    (r) => r.outcome,
    (err: unknown) => {
      if (err instanceof ToolError && (err.structured as { outcome?: string } | undefined)?.outcome === "failed")
        return "failed" as const;
      throw err;
    },
  );
  await vi.advanceTimersByTimeAsync(timeoutSeconds * 1000 + 10);
  const outcome = await pending;
  return outcome === "timed_out" ? "running" : outcome;
}

const POLL_TOOL: Record<(typeof READING)[Kind], string> = {
  agentStatus: "build_get_agent_status",
  project: "build_get_project",
  rebuildStatus: "build_get_rebuild_status",
  pullStatus: "build_get_github_pull_status",
};

/** The console opened on a build_wait for the row's kind that went on, then fed the same readings. */
function throughConsole(row: Row): Phase {
  const opening = { projectId: P, agentServerStatus: "Active" };
  let state: BuildState = stateFromResult(
    "build_wait",
    // The wait's last reading: nothing of this work showed yet (the server reads Active, as before a restart).
    { outcome: "timed_out", until: row.kind, elapsedSeconds: 1, polls: 1, message: "goes on", project: opening },
    false,
    "",
    { projectId: P, until: row.kind, since: iso(0) },
    T0 + 1000,
  );
  for (const r of row.readings) {
    const call = nextPoll(state);
    expect(call?.name).toBe(row.kind === "deployment" ? "build_get_deployment_status" : POLL_TOOL[READING[row.kind]]);
    const value = row.kind === "deployment" ? (r.value.deployment ?? { status: null }) : r.value;
    state = applyPoll(state, call!.name, { projectId: P, ...(value as object) }, T0 + r.at);
    if (nextPoll(state)?.name === "build_list_versions")
      state = applyPoll(state, "build_list_versions", { versions: row.versions ?? [] }, T0 + r.at + 100);
  }
  if (isRunning(state.phase)) return "running";
  expect(["done", "failed", "idle"]).toContain(state.phase);
  return state.phase as Phase;
}

describe("completion: build_wait and the build console judge work alike (§19 T1-T5)", () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ["Date", "setTimeout", "clearTimeout"] });
    vi.setSystemTime(T0);
  });
  afterEach(() => vi.useRealTimers());

  it("covers every kind of work", () => {
    expect(new Set(ROWS.map((r) => r.kind))).toEqual(new Set(KINDS));
  });

  for (const row of ROWS) {
    it(`${row.name}: ${row.expected}`, async () => {
      expect(await throughBuildWait(row)).toBe(row.expected);
      expect(throughConsole(row)).toBe(row.expected);
    });
  }

  it("the shared definition imports nothing, so the view bundles no server code with it", () => {
    const file = fileURLToPath(new URL("../../src/services/builder/completion.ts", import.meta.url));
    expect(relativeImports(file)).toEqual([]);
    expect(readFileSync(file, "utf8")).not.toMatch(/^\s*import\s/m);
  });
});
