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
export type ServerStatus = "Active" | "Creating" | "Starting" | "Archived" | "Unarchiving" | "Archiving";
export type MessageType = "regular" | "starting" | "building" | "finished" | "error" | "limit-reached";
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
  /** share of the run's cost charged once this step is reached */
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
}
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
export interface ImportLock {
  startedAt: number;
  endsAt: number;
  failAt?: number;
}
export interface CustomDomain {
  hostname: string;
  status: "pending_validation" | "pending_deployment" | "active";
  sslStatus: "pending" | "active";
  validatedAt: number;
}
export interface CreditLimits {
  maxDevelopmentCreditsPerMonth: number | null;
  maxInfrastructureCreditsPerMonth: number | null;
}
export interface DesignAccount {
  id: string;
  handle: string;
  email: string;
  imgUrl: string;
}
export interface TableProperty {
  name: string;
  type: string;
  label: string;
}
export interface Table {
  _id: string;
  type: string;
  label: string;
  description: string;
  properties: TableProperty[];
  records: Json[];
}
export interface LogLine {
  at: number;
  line: string;
}
export interface Group {
  name: string;
  capacity: number;
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
  design?: DesignAccount;
  totalCreditsSpent: number;
  tables: Table[];
  logs: LogLine[];
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
