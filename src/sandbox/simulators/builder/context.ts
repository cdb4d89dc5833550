import { Wallet } from "./credits.js";
import { fail } from "./routes.js";
import { sha1, type Group, type SimProject } from "./state.js";

export interface BuildSimulatorOptions {
  apiKey: string;
  /** simulated ms per real ms; e.g. 1000 makes a 6-minute run last 0.36 s */
  timeScale: number;
  /** clock in real ms, default Date.now; tests may inject */
  now?: () => number;
  /** max projects created per real minute before 429 RATE_LIMIT_EXCEEDED; default 30 */
  createsPerMinute?: number;
  /** plan project limit before 403 MAX_PROJECTS_REACHED; default 100 */
  maxProjects?: number;
  /** starting balance; default recurrentCredits 200, oneTimeCredits 300 */
  credits?: { recurrentCredits: number; oneTimeCredits: number };
  /** real ms a GET /projects/:id snapshot is served from cache (reference §1.4: "a few seconds"); default 2000 */
  detailsCacheMs?: number;
  /**
   * real ms after a deploy, recover, import or start-or-restart call during which reads still show
   * the state from before the call (traps T2, T4, T5); default 1000
   */
  startLagMs?: number;
  /** simulated minutes an agent prompt may run before it is stopped and billed flat (§1.7; assumed); default 60 */
  runBudgetMinutes?: number;
  /** PEM of a test CA the sandbox trusts for its own webhook deliveries only (webhook-sender.ts) */
  webhookCa?: string;
}

/** Brings one part of a project (server, run, deployment, ...) up to simulated time `now`. */
export type Advance = (p: SimProject, now: number) => void;

const MAX_LOG_LINES = 500;

/**
 * What every area shares: the projects, the wallet, the clocks, ids, logs, and the list of
 * advance steps that bring a project up to the current simulated time.
 */
export class BuildContext {
  readonly projects = new Map<string, SimProject>();
  readonly groups = new Map<string, Group>([
    ["grp_marketing", { name: "Marketing", capacity: 20 }],
    ["grp_internal", { name: "Internal tools", capacity: 1 }],
  ]);
  readonly wallet: Wallet;
  /** clock in real ms */
  readonly now: () => number;
  readonly createsPerMinute: number;
  readonly maxProjects: number;
  readonly detailsCacheMs: number;
  readonly startLagMs: number;
  readonly runBudgetMinutes: number;
  readonly webhookCa?: string;
  /** GET /projects/:id snapshots: real ms when taken, and the view (see freshness.ts) */
  readonly detailsCache = new Map<string, { at: number; view: unknown }>();
  /** real ms at construction; simulated time coincides with it there */
  readonly t0: number;
  /** real ms of recent project creations and Figma token checks, for the per-minute limits */
  creations: number[] = [];
  figmaChecks: number[] = [];
  /** while seeding demo data nothing is charged and creations do not count against the rate limit */
  seeding = false;
  private readonly timeScale: number;
  private readonly advanceSteps: Advance[] = [];
  private seq = 0;

  constructor(options: BuildSimulatorOptions) {
    this.timeScale = options.timeScale;
    this.now = options.now ?? Date.now;
    this.createsPerMinute = options.createsPerMinute ?? 30;
    this.maxProjects = options.maxProjects ?? 100;
    this.detailsCacheMs = options.detailsCacheMs ?? 2000;
    this.startLagMs = options.startLagMs ?? 1000;
    this.runBudgetMinutes = options.runBudgetMinutes ?? 60;
    this.webhookCa = options.webhookCa;
    this.wallet = new Wallet(options.credits ?? { recurrentCredits: 200, oneTimeCredits: 300 }, () => this.seeding);
    this.t0 = this.now();
  }

  simNow(): number {
    return this.t0 + (this.now() - this.t0) * this.timeScale;
  }

  /**
   * The real moment a simulated instant was reached (the inverse of simNow; before t0 the two
   * coincide). Agent messages are stamped with it: people read those times against their own
   * clock, and simulated time runs ahead of it by `timeScale`.
   */
  wallTime(simMs: number): number {
    return simMs <= this.t0 ? simMs : this.t0 + (simMs - this.t0) / this.timeScale;
  }

  /** Simulated ms that pass in `realMs` real ms. */
  simSpan(realMs: number): number {
    return realMs * this.timeScale;
  }

  newId(prefix = ""): string {
    this.seq += 1;
    return prefix + sha1(`build-sim:${this.seq}`).slice(0, 24);
  }

  log(p: SimProject, at: number, line: string): void {
    p.logs.push({ at, line });
    if (p.logs.length > MAX_LOG_LINES) p.logs.splice(0, p.logs.length - MAX_LOG_LINES);
  }

  /** Steps run in the order they were added (the facade's area order). */
  onAdvance(step: Advance): void {
    this.advanceSteps.push(step);
  }

  advance(p: SimProject, now: number): void {
    for (const step of this.advanceSteps) step(p, now);
  }

  advanceAll(): void {
    const now = this.simNow();
    for (const p of this.projects.values()) this.advance(p, now);
  }

  /** PROJECT_NOT_FOUND is our choice: the spec does not show the details operation's errors. */
  loadProject(projectId: string): SimProject {
    const p = this.projects.get(projectId);
    if (!p) fail(404, "PROJECT_NOT_FOUND", `Project ${projectId} does not exist`);
    return p;
  }
}

/** 409 while another activity runs on the project. */
export function checkIdle(p: SimProject, also: { deployment: boolean }): void {
  if (p.run?.state === "running")
    fail(409, "AGENT_RUNNING", "The agent is running on this project; wait until it is done");
  if (also.deployment && p.deployment?.status === "deploying") {
    fail(409, "DEPLOYMENT_RUNNING", "A deployment is running on this project; wait until it ends");
  }
  if (p.recovery?.status === "recovering")
    fail(409, "RECOVERY_RUNNING", "A version recovery is running on this project");
  if (p.importLock)
    fail(409, "IMPORT_IN_PROGRESS", "A project import is running; poll importInProgress until it is null");
}
