import { createHash } from "node:crypto";

/** The simulated project and its parts, shared constants, and small pure helpers. */

/** Prefix of every operation path. */
export const API = "/api/v1/vcaas";
/** Hostname suffix of simulated production apps. */
export const SANDBOX_APPS_DOMAIN = "sandbox-apps.example";

export const SECOND = 1000;
export const MINUTE = 60 * SECOND;
export const HOUR = 60 * MINUTE;
export const DAY = 24 * HOUR;
/** Time for a dev server to become Active after it is created, started or unarchived. */
export const SERVER_BOOT = 1 * MINUTE;

export const SECRET_ENVIRONMENTS = ["development", "production", "both"] as const;

export type SecretEnvironment = (typeof SECRET_ENVIRONMENTS)[number];
type ServerStatus = "Active" | "Creating" | "Starting" | "Archived" | "Unarchiving" | "Archiving";
type MessageType = "regular" | "starting" | "building" | "finished" | "error" | "limit-reached";
export type Json = Record<string, unknown>;

export interface Charge {
  recurrent: number;
  oneTime: number;
}
export interface Version {
  _id: string;
  name: string;
  commitMessage: string;
  prompt: string;
  createdAt: number;
  /** git commit of the version, for version-diff (diffs.ts); 40 hex */
  commitSha: string;
  /** the `_id` of the version a recovery restored, on the version that recovery made (§7) */
  recoveredVersionId?: string;
}
export interface Secret {
  _id: string;
  secretName: string;
  secretValue: string;
  environment: SecretEnvironment;
}
export interface Attachment {
  name: string;
  imageDescription: string;
  url: string;
}
export interface Message {
  author: "user" | "agent";
  message: string;
  messageType: MessageType;
  createdAt: number;
  versionId?: string;
  gitDiffUrl?: string;
  secretKeysNeeded?: Record<string, { isProvided: boolean; description: string }>;
}
export interface RunStep {
  at: number;
  /** share of the run's duration at this step */
  fraction: number;
  kind: "starting" | "building" | "final";
  text: string;
  needsSecrets?: boolean;
}
export interface RunOptions {
  model: string;
  effort: string;
  fastMode: boolean;
}
export interface AgentRun {
  prompt: string;
  startedAt: number;
  cost: number;
  creditsSpent: number;
  charged: Charge;
  steps: RunStep[];
  nextStep: number;
  state: "running" | "finished" | "failed" | "stopped" | "limit-reached";
  fails: boolean;
  /** index in the project conversation where this run's messages start (its user prompt) */
  conversationStart: number;
  options: RunOptions;
  inputFiles: Attachment[];
  /** the prompt outlasts the run budget: it stops there, billed flat (agent.ts) */
  overBudget: boolean;
  /** simulated time the run ended (finished, failed, stopped or stopped at its budget) */
  endedAt?: number;
  /** `order` of the batch prompt this run executes */
  batchOrder?: number;
}
type BatchStatus = "planning" | "executing" | "paused" | "done" | "cancelled";
interface BatchPrompt {
  order: number;
  prompt: string;
  status: "pending" | "executing" | "done" | "failed";
}
/** A multi-prompt batch (agent/start with multiPrompt; batches.ts). */
export interface Batch {
  status: BatchStatus;
  /** letTotalumDecide: the goal the prompts are planned from */
  goal?: string;
  prompts: BatchPrompt[];
  currentPromptIndex: number;
  startedAt: number;
  updatedAt: number;
  /** planning ends at this simulated time (letTotalumDecide) */
  plannedAt?: number;
  /** the next prompt starts at this simulated time */
  nextAt: number;
  /** index in the project conversation where the batch's messages start */
  conversationStart: number;
  /** agent/start's inputFiles, attached to the first prompt */
  inputFiles: Attachment[];
}
/** Reads that still show the state from before a call, until `until` (simulated ms; freshness.ts). */
interface Hold {
  until: number;
  value: unknown;
}
export type HeldField = "deployment" | "versionRecovery" | "importInProgress" | "agentServerStatus";
export interface Deployment {
  status: "deploying" | "success" | "error";
  createdAt: number;
  versionId: string;
  doneAt: number;
  fails: boolean;
}
export interface Recovery {
  status: "recovering" | "error";
  versionId: string;
  startedAt: number;
  doneAt: number;
  fails: boolean;
  errorMessage?: string;
}
interface ImportLock {
  startedAt: number;
  endsAt: number;
  failAt?: number;
  /** Runs when the import ends well (POST import: restores the exported data). */
  onSuccess?: (at: number) => void;
}
export interface CustomDomain {
  hostname: string;
  status: "pending_validation" | "pending_deployment" | "active";
  sslStatus: "initializing" | "active";
  validatedAt: number;
  /** the TXT record's verification value */
  token: string;
}
export interface CreditLimits {
  maxDevelopmentCreditsPerMonth: number | null;
  maxInfrastructureCreditsPerMonth: number | null;
}
export interface FigmaAccount {
  id: string;
  handle: string;
  email: string;
  imgUrl: string;
}
export interface TableProperty {
  name: string;
  /** §10: string, number, date, options, file, long-string, objectReference ([RC]: also boolean) */
  propertyType: string;
  label: string;
  /** Relations: both sides of one relation carry the same `id`; the target is a table `_id`. */
  id: string;
  objectReference?: {
    objectReferenceTypeId: string;
    objectReferenceRelation: "manyToMany" | "oneToMany" | "manyToOne" | "oneToOne";
  };
}
export interface Table {
  _id: string;
  type: string;
  label: string;
  description: string;
  properties: TableProperty[];
  records: Json[];
}
/** A many-to-many link the service keeps (the junction): the relation's id and the two record ids, sorted. */
export interface RecordLink {
  propertyId: string;
  recordIds: [string, string];
}
interface LogLine {
  at: number;
  line: string;
}
export interface Group {
  name: string;
  capacity: number;
  /** Absent on the built-in demo groups: "" and the simulator's start. */
  description?: string;
  createdAt?: number;
  updatedAt?: number;
}

export interface SimProject {
  projectId: string;
  description: string;
  label?: string;
  groupId?: string;
  plan: "api";
  createdAt: number;
  lastModifiedAt: number;
  previewImageUrl?: string;
  server: { status: ServerStatus; readyAt: number };
  /** the dev server has been Active at least once: the live preview URL exists from then on */
  serverStarted?: boolean;
  run: AgentRun | null;
  conversation: Message[];
  /** oldest first */
  versions: Version[];
  deployment: Deployment | null;
  lastSuccessfulDeployAt: number | null;
  recovery: Recovery | null;
  importLock: ImportLock | null;
  secrets: Secret[];
  customDomain: CustomDomain | null;
  creditLimits: CreditLimits;
  files: Attachment[];
  figma?: FigmaAccount;
  /** the latest multi-prompt batch; absent until one is started */
  batch?: Batch;
  holds?: Partial<Record<HeldField, Hold>>;
  /** conversation length when an [app-starting] prompt last answered SANDBOX_NOT_REACHABLE (deployments.ts) */
  appStartingPrompt?: number;
  totalCreditsSpent: number;
  tables: Table[];
  /** Absent until the first link is made. */
  recordLinks?: RecordLink[];
  logs: LogLine[];
  /** Source files, rebuilds, uploads and GitHub (files.ts, rebuild.ts, github.ts): made on first use. */
  source?: SourceTree;
  rebuild?: Rebuild;
  github?: GithubState;
}

export interface SourceTree {
  /** root-relative path -> bytes; excluded folders (dist/) may be tracked but are never listed */
  files: Map<string, Buffer>;
  /**
   * the template is in (a project whose agent never ran has no sandbox and no files); HEAD is the
   * latest version's commitSha
   */
  seeded: boolean;
  uploads: Array<{ fileNameId: string; name: string; type: string; size: number; at: number }>;
}
export interface Rebuild {
  status: "rebuilding" | "success" | "error";
  startedAt: number;
  doneAt: number;
  /** what makes it fail, found in the files when it starts */
  failure?: { errorCode: string; errorMessage: string };
  /** real ms of the rebuilds started, for the plan limit */
  history: number[];
}
export interface GithubState {
  /** null once disconnected or expired */
  link: { repositoryFullName: string; token: string; connectedAt: number; expiresAt?: number } | null;
  expired: boolean;
  lastRepositoryFullName?: string;
  /** commits pushed to develop by someone else, waiting for a pull: path -> new content */
  remoteChanges: Map<string, Buffer>;
  pull: { status: "pulling" | "success" | "error"; createdAt: number; doneAt: number; fails: boolean } | null;
}

export interface NewProjectFields {
  projectId: string;
  description: string;
  label?: string;
  groupId?: string;
}

export function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Optional request members: JSON null counts as absent. */
export function given(value: unknown): boolean {
  return value !== undefined && value !== null;
}

export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

export function round(n: number): number {
  return Math.round(n * 1000) / 1000;
}

/** FNV-1a: a small stable hash, so durations and costs follow from the prompt. */
export function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

export function sha1(text: string): string {
  return createHash("sha1").update(text).digest("hex");
}

export function productionHost(projectId: string): string {
  return `${projectId}.${SANDBOX_APPS_DOMAIN}`;
}

export function latestPrompt(p: SimProject): string {
  for (let i = p.conversation.length - 1; i >= 0; i--) {
    if (p.conversation[i].author === "user") return p.conversation[i].message;
  }
  return "";
}
