/**
 * In-memory simulator ("sandbox") of the project build service described in
 * shared/specs/build-service-api.md (which wins) and shared/specs/build-service-public-docs.md.
 *
 * State is computed lazily from the clock: every request that touches a project first advances
 * it to the current simulated time, so there are no timers. Simulated time runs `timeScale`
 * times faster than real time; rate limits (project creation, design token checks) count real
 * minutes.
 *
 * Error codes the spec does not show, chosen here:
 *   400 INVALID_JSON, 404 NOT_FOUND (unknown route), 404 PROJECT_NOT_FOUND,
 *   400 INVALID_DESCRIPTION, 400 INVALID_LABEL (create/launch field lengths),
 *   409 AGENT_NOT_RUNNING (stop while idle), 409 IMPORT_RUNNING (activity while an import runs),
 *   404 VERSION_NOT_FOUND, 400 LIST_VERSIONS_ERROR, 404 SECRET_NOT_FOUND, 400 INVALID_HOSTNAME,
 *   404 DOMAIN_NOT_FOUND, 400 MISSING_TABLE_NAME, 400 INVALID_QUERY_OPTIONS, 404 TABLE_NOT_FOUND.
 *
 * Prompt markers (sandbox only):
 *   [minutes=N]   the agent run lasts N simulated minutes (default 5-40, derived from the prompt)
 *   [fail]        the run ends with an `error` message and its credits are refunded
 *   [secrets]     a run message asks for STRIPE_API_KEY through `secretKeysNeeded`
 *   [deploy-fail] deployments of the project end in `error` while this is its latest prompt
 *   [recover-fail] recovering the version built by this prompt ends in `error`
 * Design token markers: tokens must start with `dsgn_` and be at least 20 characters; a token
 * containing `invalid`, `noscope`, `unreachable` or `ratelimited` gets DESIGN_TOKEN_INVALID,
 * DESIGN_TOKEN_FORBIDDEN, DESIGN_UNREACHABLE or DESIGN_RATE_LIMITED.
 */
import { createHash, createHmac } from "node:crypto";
import { bearerToken, Router, type SimRequest, type SimResponse } from "../../router.js";

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
}

/** The service's documented prices (public docs). */
export const CREDIT_COSTS = {
  CREATE_PROJECT: 1,
  CREATE_DEPLOYMENT: 1,
  START_SERVER: 3,
  GET_SOURCE_CODE: 1,
  RECOVER_VERSION: 2,
  UPLOAD_FILE: 0.5,
  ADD_CUSTOM_DOMAIN: 2,
  EXPORT_PROJECT: 2,
  IMPORT_PROJECT: 6,
  UPDATE_FILE: 0.1,
  REBUILD_PROJECT: 1,
} as const;
type CostKey = keyof typeof CREDIT_COSTS;

/** Hostname suffix of simulated production apps. */
export const SANDBOX_APPS_DOMAIN = "sandbox-apps.example";

const API = "/api/v1/vcaas";
const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

const AGENT_MIN_CREDITS = 5;
const MAX_FILES = 10;
const MAX_SECRETS = 50;
const DESIGN_CHECKS_PER_MINUTE = 10;
const SERVER_BOOT = 1 * MINUTE;
const DEPLOY_DURATION = 3 * MINUTE;
const RECOVERY_DURATION = 2 * MINUTE;
const DOMAIN_VALIDATION = 10 * MINUTE;
const IMPORT_DURATION = 4 * MINUTE;
const IMPORT_LOCK_MAX_AGE = 30 * MINUTE;
const MAX_LOG_LINES = 500;

const PROJECT_ID_PATTERN = /^[a-z][a-z0-9-]*$/;
const SECRET_ENVIRONMENTS = ["development", "production", "both"] as const;
const MODELS = ["opus", "sonnet"];
const EFFORTS = ["low", "medium", "high", "xhigh"];

type SecretEnvironment = (typeof SECRET_ENVIRONMENTS)[number];
type ServerStatus = "Active" | "Creating" | "Starting" | "Archived" | "Unarchiving" | "Archiving";
type MessageType = "regular" | "starting" | "building" | "finished" | "error" | "limit-reached";
type Json = Record<string, unknown>;

interface Charge {
  recurrent: number;
  oneTime: number;
}
interface Version {
  _id: string;
  name: string;
  commitMessage: string;
  prompt: string;
  createdAt: number;
}
interface Secret {
  _id: string;
  secretName: string;
  secretValue: string;
  environment: SecretEnvironment;
}
interface Attachment {
  name: string;
  imageDescription: string;
  url: string;
}
interface Message {
  author: "user" | "agent";
  message: string;
  messageType: MessageType;
  createdAt: number;
  versionId?: string;
  gitDiffUrl?: string;
  secretKeysNeeded?: Record<string, { isProvided: boolean; description: string }>;
}
interface RunStep {
  at: number;
  /** share of the run's cost charged once this step is reached */
  fraction: number;
  kind: "starting" | "building" | "final";
  text: string;
  needsSecrets?: boolean;
}
interface RunOptions {
  model: string;
  effort: string;
  fastMode: boolean;
}
interface AgentRun {
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
interface Deployment {
  status: "deploying" | "success" | "error";
  createdAt: number;
  versionId: string;
  doneAt: number;
  fails: boolean;
}
interface Recovery {
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
}
interface CustomDomain {
  hostname: string;
  status: "pending_validation" | "pending_deployment" | "active";
  sslStatus: "pending" | "active";
  validatedAt: number;
}
interface CreditLimits {
  maxDevelopmentCreditsPerMonth: number | null;
  maxInfrastructureCreditsPerMonth: number | null;
}
interface DesignAccount {
  id: string;
  handle: string;
  email: string;
  imgUrl: string;
}
interface TableProperty {
  name: string;
  type: string;
  label: string;
}
interface Table {
  _id: string;
  type: string;
  label: string;
  description: string;
  properties: TableProperty[];
  records: Json[];
}
interface LogLine {
  at: number;
  line: string;
}
interface Group {
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

interface NewProjectFields {
  projectId: string;
  description: string;
  label?: string;
  groupId?: string;
}

class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

function fail(status: number, code: string, message: string): never {
  throw new ApiError(status, code, message);
}

function ok(data: unknown): SimResponse {
  return { status: 200, body: { errors: null, data } };
}

function errorResponse(status: number, errorCode: string, errorMessage: string): SimResponse {
  return { status, body: { errors: { errorCode, errorMessage }, data: null } };
}

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Optional request members: JSON null counts as absent. */
function given(value: unknown): boolean {
  return value !== undefined && value !== null;
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

function round(n: number): number {
  return Math.round(n * 1000) / 1000;
}

/** FNV-1a: a small stable hash, so durations and costs follow from the prompt. */
function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

function sha1(text: string): string {
  return createHash("sha1").update(text).digest("hex");
}

// ---------------------------------------------------------------------------------------------
// Request validation helpers (pure)
// ---------------------------------------------------------------------------------------------

function bodyOf(req: SimRequest): Json {
  if (req.body === undefined) return {};
  if (!isObject(req.body)) fail(400, "INVALID_JSON", "The request body must be a JSON object");
  return req.body;
}

function validateProjectId(value: unknown): string {
  if (value === undefined || value === null || value === "") {
    fail(400, "MISSING_PROJECT_ID", "projectId is required");
  }
  if (typeof value !== "string") fail(400, "INVALID_PROJECT_NAME", "projectId must be a string");
  if (value.length < 4 || value.length > 35) {
    fail(400, "INVALID_PROJECT_NAME_LENGTH", "projectId must be between 4 and 35 characters");
  }
  if (!PROJECT_ID_PATTERN.test(value)) {
    fail(
      400,
      "INVALID_PROJECT_NAME",
      "projectId may contain only lowercase letters, digits and hyphens, and must start with a letter",
    );
  }
  return value;
}

/** The spec gives the limits (500 / 80) but not the codes; INVALID_DESCRIPTION/INVALID_LABEL are ours. */
function validateDescriptionAndLabel(body: Json): { description: string; label?: string } {
  const { description, label } = body;
  if (given(description) && (typeof description !== "string" || description.length > 500)) {
    fail(400, "INVALID_DESCRIPTION", "description must be a string of at most 500 characters");
  }
  if (given(label) && (typeof label !== "string" || label.length > 80)) {
    fail(400, "INVALID_LABEL", "label must be a string of at most 80 characters");
  }
  return {
    description: typeof description === "string" ? description : "",
    label: typeof label === "string" && label.length > 0 ? label : undefined,
  };
}

function isPrivateHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, "").toLowerCase();
  if (host === "localhost" || host.endsWith(".localhost") || host.endsWith(".local") || host.endsWith(".internal")) {
    return true;
  }
  if (host.includes(":")) return host === "::1" || host === "::" || /^f[cd]/.test(host) || host.startsWith("fe80");
  const ipv4 = /^(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(host);
  if (!ipv4) return !host.includes(".");
  const [a, b] = [Number(ipv4[1]), Number(ipv4[2])];
  return (
    a === 0 || a === 10 || a === 127 || (a === 169 && b === 254) || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168)
  );
}

function isPublicHttpUrl(value: unknown): boolean {
  if (typeof value !== "string") return false;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  return (url.protocol === "http:" || url.protocol === "https:") && !isPrivateHost(url.hostname);
}

/** Returns the decoded byte length, or undefined when the content is not base64. */
function base64Length(value: unknown): number | undefined {
  if (typeof value !== "string") return undefined;
  const stripped = value.replace(/^data:[^,]*;base64,/i, "").replace(/\s+/g, "");
  if (stripped.length === 0 || stripped.length % 4 === 1) return undefined;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(stripped)) return undefined;
  return Buffer.from(stripped, "base64").length;
}

interface FileInput {
  name: string;
  imageDescription: string;
  url?: string;
  content?: string;
}

function validateFiles(value: unknown): FileInput[] {
  if (!given(value)) return [];
  if (!Array.isArray(value) || !value.every(isObject)) {
    fail(400, "INVALID_FILES", "files must be an array of objects");
  }
  if (value.length > MAX_FILES) fail(400, "TOO_MANY_FILES", `At most ${MAX_FILES} files are allowed`);
  return value.map((entry, i) => validateFile(entry, i));
}

function validateFile(entry: Json, index: number): FileInput {
  const where = `files[${index}]`;
  if (typeof entry.name !== "string" || entry.name.trim() === "") {
    fail(400, "INVALID_FILE_NAME", `${where} needs a name`);
  }
  if (given(entry.url) === given(entry.content)) {
    fail(400, "INVALID_FILE_SOURCE", `${where} needs exactly one of url or content`);
  }
  if (given(entry.url) && !isPublicHttpUrl(entry.url)) {
    fail(400, "INVALID_FILE_URL", `${where}.url must be a public http(s) URL`);
  }
  if (given(entry.content) && base64Length(entry.content) === undefined) {
    fail(400, "INVALID_FILE_CONTENT", `${where}.content must be base64 (a data-URL prefix is accepted)`);
  }
  const description = entry.description ?? entry.imageDescription;
  return {
    name: entry.name,
    imageDescription: typeof description === "string" ? description : "",
    url: given(entry.url) ? (entry.url as string) : undefined,
    content: given(entry.content) ? (entry.content as string) : undefined,
  };
}

/** inputFiles of agent/start: url entries only. */
function validateInputFiles(value: unknown): Attachment[] {
  if (!given(value)) return [];
  if (!Array.isArray(value) || !value.every(isObject)) {
    fail(400, "INVALID_FILES", "inputFiles must be an array of objects");
  }
  if (value.length > MAX_FILES) fail(400, "TOO_MANY_FILES", `At most ${MAX_FILES} files are allowed`);
  return value.map((entry, i) => {
    if (typeof entry.name !== "string" || entry.name.trim() === "") {
      fail(400, "INVALID_FILE_NAME", `inputFiles[${i}] needs a name`);
    }
    if (!isPublicHttpUrl(entry.url)) fail(400, "INVALID_FILE_URL", `inputFiles[${i}].url must be a public http(s) URL`);
    const description = entry.imageDescription ?? entry.description;
    return { name: entry.name, url: entry.url as string, imageDescription: typeof description === "string" ? description : "" };
  });
}

interface SecretInput {
  secretName: string;
  secretValue: string;
  environment: SecretEnvironment;
}

function validateSecretFields(entry: Json, where: string): SecretInput {
  const { secretName, secretValue, environment } = entry;
  if (typeof secretName !== "string" || secretName === "" || typeof secretValue !== "string" || secretValue === "") {
    fail(400, "MISSING_SECRET_FIELDS", `${where} needs secretName and secretValue`);
  }
  if (given(environment) && !SECRET_ENVIRONMENTS.includes(environment as SecretEnvironment)) {
    fail(400, "INVALID_SECRET_ENVIRONMENT", `${where}.environment must be development, production or both`);
  }
  return { secretName, secretValue, environment: given(environment) ? (environment as SecretEnvironment) : "both" };
}

function validateSecrets(value: unknown): SecretInput[] {
  if (!given(value)) return [];
  if (!Array.isArray(value) || !value.every(isObject)) {
    fail(400, "INVALID_SECRETS", "secrets must be an array of objects");
  }
  if (value.length > MAX_SECRETS) fail(400, "TOO_MANY_SECRETS", `At most ${MAX_SECRETS} secrets are allowed`);
  const seen = new Set<string>();
  return value.map((entry, i) => {
    const where = `secrets[${i}]`;
    const { secretName } = entry;
    if (typeof secretName === "string" && seen.has(secretName)) {
      fail(400, "DUPLICATE_SECRET_NAME", `${where}: secretName ${secretName} appears twice`);
    }
    const secret = validateSecretFields(entry, where);
    seen.add(secret.secretName);
    return secret;
  });
}

function validateCreditLimits(value: unknown): CreditLimits {
  const limits: CreditLimits = { maxDevelopmentCreditsPerMonth: null, maxInfrastructureCreditsPerMonth: 250 };
  if (!given(value)) return limits;
  if (!isObject(value)) fail(400, "INVALID_CREDIT_LIMITS", "creditLimits must be an object");
  for (const key of Object.keys(limits) as Array<keyof CreditLimits>) {
    if (!(key in value)) continue;
    const limit = value[key];
    if (limit !== null && (typeof limit !== "number" || !Number.isFinite(limit) || limit <= 0)) {
      fail(400, "INVALID_LIMIT", `creditLimits.${key} must be a positive number or null`);
    }
    limits[key] = limit as number | null;
  }
  return limits;
}

/** Shape checks of `design`; the token itself is checked by BuildSimulator.checkDesignToken. */
function validateDesignShape(value: unknown): string | undefined {
  if (!given(value)) return undefined;
  if (!isObject(value)) fail(400, "INVALID_DESIGN", "design must be an object");
  const { token } = value;
  if (typeof token !== "string" || token.trim() === "") fail(400, "MISSING_DESIGN_TOKEN", "design.token is required");
  if (!token.startsWith("dsgn_") || token.length < 20) {
    fail(400, "DESIGN_TOKEN_MALFORMED", "design.token does not look like a personal access token of the design tool");
  }
  return token;
}

function runOptions(body: Json): { options: RunOptions; warnings: string[] } {
  const warnings: string[] = [];
  const options: RunOptions = { model: "opus", effort: "high", fastMode: false };
  if (given(body.model)) {
    if (typeof body.model === "string" && MODELS.includes(body.model)) options.model = body.model;
    else warnings.push(`model ${JSON.stringify(body.model)} is not available; the run uses opus`);
  }
  if (given(body.effort)) {
    if (typeof body.effort === "string" && EFFORTS.includes(body.effort)) options.effort = body.effort;
    else warnings.push(`effort ${JSON.stringify(body.effort)} is not one of ${EFFORTS.join(", ")}; the run uses the default`);
  }
  if (given(body.fastMode)) {
    if (typeof body.fastMode !== "boolean") warnings.push("fastMode must be a boolean; it was ignored");
    else if (body.fastMode && options.model === "sonnet") warnings.push("fastMode is available with opus only; it was ignored");
    else options.fastMode = body.fastMode;
  }
  return { options, warnings };
}

function validHostname(value: unknown): string | undefined {
  if (typeof value !== "string") return undefined;
  const host = value.trim().toLowerCase().replace(/\.$/, "");
  const label = "[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?";
  const pattern = new RegExp(`^(?:${label}\\.)+[a-z]{2,63}$`);
  return host.length <= 253 && pattern.test(host) ? host : undefined;
}

/** Reads an integer query parameter; empty or absent means the default. */
function intParam(query: URLSearchParams, name: string, fallback: number, min: number, max: number, code: string): number {
  const raw = query.get(name);
  if (raw === null || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) fail(400, code, `${name} must be an integer between ${min} and ${max}`);
  return n;
}

/** createdFrom/createdTo: a full instant is used verbatim; a bare day is UTC, widened to its end for `to`. */
function dateBound(query: URLSearchParams, name: string, endOfDay: boolean): number | undefined {
  const raw = query.get(name);
  if (raw === null || raw === "") return undefined;
  const bareDay = /^\d{4}-\d{2}-\d{2}$/.test(raw);
  const ms = bareDay ? Date.parse(`${raw}T00:00:00.000Z`) : Date.parse(raw);
  if (Number.isNaN(ms)) fail(400, "LIST_PROJECTS_ERROR", `${name} is not a valid date`);
  return bareDay && endOfDay ? ms + DAY - 1 : ms;
}

// ---------------------------------------------------------------------------------------------
// Simulator
// ---------------------------------------------------------------------------------------------

export class BuildSimulator {
  readonly router: Router;
  private readonly apiKey: string;
  private readonly timeScale: number;
  private readonly now: () => number;
  private readonly createsPerMinute: number;
  private readonly maxProjects: number;
  /** real ms at construction; simulated time coincides with it there */
  private readonly t0: number;
  private readonly projects = new Map<string, SimProject>();
  private readonly groups = new Map<string, Group>([
    ["grp_marketing", { name: "Marketing", capacity: 20 }],
    ["grp_internal", { name: "Internal tools", capacity: 1 }],
  ]);
  private wallet: Charge;
  /** real ms of recent project creations and design token checks, for the per-minute limits */
  private creations: number[] = [];
  private designChecks: number[] = [];
  private seq = 0;
  /** while seeding demo data nothing is charged */
  private seeding = false;

  constructor(options: BuildSimulatorOptions) {
    this.apiKey = options.apiKey;
    this.timeScale = options.timeScale;
    this.now = options.now ?? Date.now;
    this.createsPerMinute = options.createsPerMinute ?? 30;
    this.maxProjects = options.maxProjects ?? 100;
    const credits = options.credits ?? { recurrentCredits: 200, oneTimeCredits: 300 };
    this.wallet = { recurrent: credits.recurrentCredits, oneTime: credits.oneTimeCredits };
    this.t0 = this.now();
    this.router = new Router({
      authorize: (req) => this.unauthorized(req),
      notFound: (req) => errorResponse(404, "NOT_FOUND", `No operation ${req.method} ${req.path}`),
      badJson: (req) => this.unauthorized(req) ?? errorResponse(400, "INVALID_JSON", "The request body is not valid JSON"),
    });
    this.registerRoutes();
    this.seedDemoData();
  }

  /** There are no timers: state is derived from the clock. */
  dispose(): void {}

  // --- test and inspection helpers -------------------------------------------------------------

  setCredits(recurrent: number, oneTime: number): void {
    this.advanceAll();
    this.wallet = { recurrent, oneTime };
  }

  balance(): { credits: number; recurrentCredits: number; oneTimeCredits: number } {
    this.advanceAll();
    const { recurrent, oneTime } = this.wallet;
    return { credits: round(recurrent + oneTime), recurrentCredits: round(recurrent), oneTimeCredits: round(oneTime) };
  }

  /** Raw internal state of a project, advanced to the current simulated time. */
  project(projectId: string): SimProject | undefined {
    const p = this.projects.get(projectId);
    if (p) this.advance(p, this.simNow());
    return p;
  }

  projectIds(): string[] {
    return [...this.projects.keys()];
  }

  /** Current simulated time (epoch ms). */
  simulatedNow(): number {
    return this.simNow();
  }

  /**
   * Puts an import lock on a project (import operations are not shown upstream). It ends after
   * 4 simulated minutes; with `fail` an errorMessage shows from minute 2 until then; with `stuck`
   * it never ends and only the 30-minute staleness rule clears it.
   */
  startImport(projectId: string, opts: { fail?: boolean; stuck?: boolean } = {}): void {
    const p = this.project(projectId);
    if (!p) throw new Error(`Unknown project ${projectId}`);
    const at = this.simNow();
    p.importLock = {
      startedAt: at,
      endsAt: opts.stuck ? Number.POSITIVE_INFINITY : at + IMPORT_DURATION,
      failAt: opts.fail ? at + IMPORT_DURATION / 2 : undefined,
    };
    this.log(p, at, "[import] Restoring database and source code from export");
  }

  storedSecretValue(projectId: string, secretName: string): string | undefined {
    return this.projects.get(projectId)?.secrets.find((s) => s.secretName === secretName)?.secretValue;
  }

  // --- plumbing --------------------------------------------------------------------------------

  private simNow(): number {
    return this.t0 + (this.now() - this.t0) * this.timeScale;
  }

  private newId(prefix = ""): string {
    this.seq += 1;
    return prefix + sha1(`build-sim:${this.seq}`).slice(0, 24);
  }

  private unauthorized(req: SimRequest): SimResponse | undefined {
    const header = req.headers["api-key"];
    if (header === this.apiKey || bearerToken(req) === this.apiKey) return undefined;
    return { status: 401, body: { error: "Unauthorized api key" } };
  }

  private route(method: string, path: string, handler: (req: SimRequest) => unknown): void {
    this.router.on(method, API + path, (req) => {
      // Runs charge credits as they progress, so the balance is only right once every project is current.
      this.advanceAll();
      try {
        return ok(handler(req));
      } catch (err) {
        if (err instanceof ApiError) return errorResponse(err.status, err.code, err.message);
        throw err;
      }
    });
  }

  private projectRoute(method: string, path: string, handler: (p: SimProject, req: SimRequest) => unknown): void {
    this.route(method, `/projects/:projectId${path}`, (req) => handler(this.loadProject(req.params.projectId), req));
  }

  /** PROJECT_NOT_FOUND is our choice: the spec does not show the details operation's errors. */
  private loadProject(projectId: string): SimProject {
    const p = this.projects.get(projectId);
    if (!p) fail(404, "PROJECT_NOT_FOUND", `Project ${projectId} does not exist`);
    return p;
  }

  private registerRoutes(): void {
    this.route("GET", "/account", () => this.balance());
    this.route("GET", "/credit-costs", () => ({ creditCosts: { ...CREDIT_COSTS } }));
    this.route("POST", "/projects/launch", (req) => this.launch(bodyOf(req)));
    this.route("POST", "/projects", (req) => this.create(bodyOf(req)));
    this.route("GET", "/projects", (req) => this.list(req.query));
    this.projectRoute("GET", "", (p) => this.details(p));
    this.projectRoute("DELETE", "", (p) => this.deleteProject(p));
    this.projectRoute("POST", "/agent/start", (p, req) => this.agentStart(p, bodyOf(req)));
    this.projectRoute("GET", "/agent/status", (p) => this.agentStatus(p));
    this.projectRoute("GET", "/agent/full-conversation", (p) => ({ conversation: p.conversation.map(messageView) }));
    this.projectRoute("POST", "/agent/stop", (p) => this.agentStop(p));
    this.projectRoute("POST", "/agent/server/start-or-restart", (p) => this.restartServer(p));
    this.projectRoute("POST", "/deployments/deploy", (p) => this.deploy(p));
    this.projectRoute("GET", "/deployments/status", (p) => this.deploymentStatus(p));
    this.projectRoute("GET", "/versions", (p, req) => this.listVersions(p, req.query));
    this.projectRoute("POST", "/versions/:versionId/recover", (p, req) => this.recover(p, req.params.versionId));
    this.projectRoute("GET", "/backend/dev/logs", (p) => ({ logs: this.logsText(p) }));
    this.projectRoute("POST", "/secrets", (p, req) => this.putSecret(p, bodyOf(req)));
    this.projectRoute("DELETE", "/secrets/:secretId", (p, req) => this.deleteSecret(p, req.params.secretId));
    this.projectRoute("PUT", "/domain", (p, req) => this.putDomain(p, bodyOf(req)));
    this.projectRoute("DELETE", "/domain", (p) => this.deleteDomain(p));
    this.projectRoute("GET", "/database/tables-structure", (p) => ({ tables: p.tables.map(tableStructure) }));
    this.projectRoute("POST", "/database/query", (p, req) => this.query(p, bodyOf(req)));
  }

  // --- credits ---------------------------------------------------------------------------------

  private credits(): number {
    return round(this.wallet.recurrent + this.wallet.oneTime);
  }

  /** Takes recurrent credits first, then one-time credits; undefined when the balance is short. */
  private charge(amount: number): Charge | undefined {
    if (this.seeding || amount <= 0) return { recurrent: 0, oneTime: 0 };
    if (this.credits() + 1e-9 < amount) return undefined;
    const recurrent = round(Math.min(this.wallet.recurrent, amount));
    const oneTime = round(amount - recurrent);
    this.wallet = { recurrent: round(this.wallet.recurrent - recurrent), oneTime: round(this.wallet.oneTime - oneTime) };
    return { recurrent, oneTime };
  }

  private refund(charge: Charge): void {
    this.wallet = {
      recurrent: round(this.wallet.recurrent + charge.recurrent),
      oneTime: round(this.wallet.oneTime + charge.oneTime),
    };
  }

  private requireCredits(amount: number, what: string): void {
    if (!this.seeding && this.credits() + 1e-9 < amount) {
      fail(402, "INSUFFICIENT_CREDITS", `${what} needs ${amount} credits; the balance is ${this.credits()}`);
    }
  }

  private chargeProject(p: SimProject, key: CostKey): void {
    const cost = CREDIT_COSTS[key];
    this.requireCredits(cost, key);
    this.charge(cost);
    p.totalCreditsSpent = round(p.totalCreditsSpent + cost);
  }

  // --- project creation ------------------------------------------------------------------------

  private create(body: Json) {
    const fields = this.validateNewProject(body);
    this.checkAccountCanCreate(fields.groupId, CREDIT_COSTS.CREATE_PROJECT, "CREATE_PROJECT");
    const { projectId, requestedProjectId } = this.allocateProjectId(fields.projectId);
    const at = this.simNow();
    this.charge(CREDIT_COSTS.CREATE_PROJECT);
    const p = this.createProject({ ...fields, projectId }, at);
    p.totalCreditsSpent = CREDIT_COSTS.CREATE_PROJECT;
    return {
      projectId,
      requestedProjectId,
      description: p.description,
      plan: p.plan,
      createdAt: iso(p.createdAt),
      label: p.label,
      groupId: p.groupId,
    };
  }

  private validateNewProject(body: Json): NewProjectFields {
    const projectId = validateProjectId(body.projectId);
    const { description, label } = validateDescriptionAndLabel(body);
    const groupId = given(body.groupId) ? body.groupId : undefined;
    if (groupId !== undefined && typeof groupId !== "string") fail(400, "INVALID_PROJECT_GROUP", "groupId must be a string");
    return { projectId, description, label, groupId: groupId === "" ? undefined : groupId };
  }

  /** Group, plan limit, creation rate and balance, in that order. */
  private checkAccountCanCreate(groupId: string | undefined, cost: number, what: string): void {
    if (groupId !== undefined) this.checkGroup(groupId);
    if (this.projects.size >= this.maxProjects) {
      fail(403, "MAX_PROJECTS_REACHED", `The plan allows ${this.maxProjects} projects; delete one or upgrade`);
    }
    const realNow = this.now();
    this.creations = this.creations.filter((t) => realNow - t < MINUTE);
    if (this.creations.length >= this.createsPerMinute) {
      fail(429, "RATE_LIMIT_EXCEEDED", `At most ${this.createsPerMinute} projects may be created per minute`);
    }
    this.requireCredits(cost, what);
  }

  private checkGroup(groupId: string): void {
    const group = this.groups.get(groupId);
    if (!group) fail(400, "INVALID_PROJECT_GROUP", `Project group ${groupId} does not exist`);
    const members = [...this.projects.values()].filter((p) => p.groupId === groupId).length;
    if (members >= group.capacity) fail(400, "INVALID_PROJECT_GROUP", `Project group ${groupId} is full`);
  }

  /** A taken id is replaced by `<id>-2` .. `<id>-7` (base truncated to stay within 35 characters). */
  private allocateProjectId(requested: string): { projectId: string; requestedProjectId?: string } {
    if (!this.projects.has(requested)) return { projectId: requested };
    for (let n = 2; n <= 7; n++) {
      const suffix = `-${n}`;
      const candidate = requested.slice(0, 35 - suffix.length).replace(/-+$/, "") + suffix;
      if (!this.projects.has(candidate)) return { projectId: candidate, requestedProjectId: requested };
    }
    fail(409, "PROJECT_ALREADY_EXISTS", `${requested} and its six suffixed alternatives are all taken`);
  }

  private createProject(fields: NewProjectFields, at: number): SimProject {
    const p: SimProject = {
      ...fields,
      plan: "api",
      createdAt: at,
      lastModifiedAt: at,
      server: { status: "Creating", readyAt: at + SERVER_BOOT },
      run: null,
      conversation: [],
      versions: [],
      deployment: null,
      lastSuccessfulDeployAt: null,
      recovery: null,
      importLock: null,
      secrets: [],
      customDomain: null,
      creditLimits: { maxDevelopmentCreditsPerMonth: null, maxInfrastructureCreditsPerMonth: 250 },
      files: [],
      totalCreditsSpent: 0,
      tables: [],
      logs: [],
    };
    this.addVersion(p, at, "Initial version", "Initial project template", "");
    this.projects.set(p.projectId, p);
    if (!this.seeding) this.creations.push(this.now());
    this.log(p, at, `[provision] Creating development server for ${p.projectId}`);
    return p;
  }

  // --- launch ----------------------------------------------------------------------------------

  /** Validation follows the order of the spec's Errors table; nothing is created or charged on failure. */
  private launch(body: Json) {
    if (typeof body.prompt !== "string" || body.prompt.trim() === "") {
      fail(400, "MISSING_PROMPT", "prompt is required and must not be empty");
    }
    const prompt = body.prompt;
    const files = validateFiles(body.files);
    const secrets = validateSecrets(body.secrets);
    const creditLimits = validateCreditLimits(body.creditLimits);
    const designToken = validateDesignShape(body.design);
    const design = designToken === undefined ? undefined : this.checkDesignToken(designToken);
    const fields = this.validateNewProject(body);
    const uploads = files.filter((f) => f.content !== undefined).length;
    const cost = round(CREDIT_COSTS.CREATE_PROJECT + uploads * CREDIT_COSTS.UPLOAD_FILE);
    this.checkAccountCanCreate(fields.groupId, cost, "Creating the project and uploading its files");
    const { projectId, requestedProjectId } = this.allocateProjectId(fields.projectId);

    const at = this.simNow();
    this.charge(cost);
    const p = this.createProject({ ...fields, projectId }, at);
    p.totalCreditsSpent = cost;
    p.creditLimits = creditLimits;
    p.files = files.map((f) => this.storeAttachment(p, f, at));
    p.secrets = secrets.map((s) => ({ _id: this.newId(), ...s }));
    p.design = design;
    const { agent, warnings } = this.launchAgent(p, prompt, body, at);
    return {
      projectId,
      requestedProjectId,
      description: p.description,
      plan: p.plan,
      createdAt: iso(at),
      label: p.label,
      groupId: p.groupId,
      creditLimits: { ...p.creditLimits },
      files: p.files.map((f) => ({ ...f })),
      secrets: p.secrets.map(secretView),
      design: design ? { connected: true, account: { ...design } } : undefined,
      agent,
      warnings,
    };
  }

  private launchAgent(p: SimProject, prompt: string, body: Json, at: number) {
    const { options, warnings: optionWarnings } = runOptions(body);
    const agentWarnings = optionWarnings.length > 0 ? optionWarnings : undefined;
    if (this.credits() < AGENT_MIN_CREDITS) {
      const errorMessage =
        `The project was created but the agent needs at least ${AGENT_MIN_CREDITS} credits to start. ` +
        `Add credits, then retry with POST ${API}/projects/${p.projectId}/agent/start`;
      return {
        agent: { started: false, message: errorMessage, warnings: agentWarnings },
        warnings: [{ step: "agent", errorCode: "INSUFFICIENT_CREDITS", errorMessage }],
      };
    }
    this.startRun(p, prompt, at, options, p.files);
    return {
      agent: {
        started: true,
        status: "init",
        message:
          `The agent is building the first version. Poll GET ${API}/projects/${p.projectId} ` +
          "every 10-15 seconds until agentProcessStatus is done.",
        warnings: agentWarnings,
      },
      warnings: [],
    };
  }

  private storeAttachment(p: SimProject, file: FileInput, at: number): Attachment {
    if (file.url !== undefined) return { name: file.name, imageDescription: file.imageDescription, url: file.url };
    const fileId = this.newId();
    const expires = Math.floor(at / 1000) + 7 * 24 * 3600;
    const path = `/${p.projectId}/${fileId}/${encodeURIComponent(file.name)}`;
    const signature = createHmac("sha256", "build-sim-files").update(`${path}:${expires}`).digest("hex").slice(0, 32);
    const url = `https://files.${SANDBOX_APPS_DOMAIN}${path}?expires=${expires}&signature=${signature}`;
    return { name: file.name, imageDescription: file.imageDescription, url };
  }

  /** The remote part of the design check, rate-limited to 10 checks per real minute. */
  private checkDesignToken(token: string): DesignAccount {
    const realNow = this.now();
    this.designChecks = this.designChecks.filter((t) => realNow - t < MINUTE);
    if (this.designChecks.length >= DESIGN_CHECKS_PER_MINUTE) {
      fail(429, "RATE_LIMITED", `At most ${DESIGN_CHECKS_PER_MINUTE} design token checks per minute; retry shortly`);
    }
    this.designChecks.push(realNow);
    if (token.includes("invalid")) fail(400, "DESIGN_TOKEN_INVALID", "The design tool rejected the token");
    if (token.includes("noscope")) fail(400, "DESIGN_TOKEN_FORBIDDEN", "The token lacks the file read scope");
    if (token.includes("unreachable")) fail(400, "DESIGN_UNREACHABLE", "The design tool could not be reached; retry later");
    if (token.includes("ratelimited")) {
      fail(400, "DESIGN_RATE_LIMITED", "The design tool is rate-limiting the check; retry shortly");
    }
    const h = sha1(token);
    return {
      id: `dsgn_user_${h.slice(0, 12)}`,
      handle: `designer-${h.slice(12, 16)}`,
      email: `designer-${h.slice(12, 16)}@example.com`,
      imgUrl: `https://avatars.${SANDBOX_APPS_DOMAIN}/${h.slice(0, 12)}.png`,
    };
  }

  // --- list and details ------------------------------------------------------------------------

  private list(query: URLSearchParams) {
    const limit = intParam(query, "limit", 100, 1, 100, "LIST_PROJECTS_ERROR");
    const skip = intParam(query, "skip", 0, 0, Number.MAX_SAFE_INTEGER, "LIST_PROJECTS_ERROR");
    const from = dateBound(query, "createdFrom", false);
    const to = dateBound(query, "createdTo", true);
    const search = (query.get("search") ?? "").toLowerCase();
    const groupId = query.get("groupId");
    const byLastModified = query.get("sortField") === "lastModified";
    const direction = query.get("sortDirection") === "asc" ? 1 : -1;
    const matches = [...this.projects.values()].filter((p) => {
      if (search && !p.projectId.toLowerCase().includes(search) && !p.description.toLowerCase().includes(search)) return false;
      if (groupId === "none" && p.groupId !== undefined) return false;
      if (groupId && groupId !== "none" && p.groupId !== groupId) return false;
      if (from !== undefined && p.createdAt < from) return false;
      return to === undefined || p.createdAt <= to;
    });
    const key = (p: SimProject) => (byLastModified ? p.lastModifiedAt : p.createdAt);
    matches.sort((a, b) => direction * (key(a) - key(b) || a.projectId.localeCompare(b.projectId)));
    return matches.slice(skip, skip + limit).map((p) => this.listItem(p));
  }

  private listItem(p: SimProject) {
    return {
      projectId: p.projectId,
      description: p.description,
      plan: p.plan,
      createdAt: iso(p.createdAt),
      label: p.label,
      groupId: p.groupId,
      previewImageUrl: p.previewImageUrl,
      lastModifiedAt: iso(p.lastModifiedAt),
      productionProjectUrl: productionHost(p.projectId),
    };
  }

  private details(p: SimProject) {
    return {
      projectId: p.projectId,
      label: p.label,
      groupId: p.groupId,
      previewImageUrl: p.previewImageUrl,
      description: p.description,
      plan: p.plan,
      createdAt: iso(p.createdAt),
      lastModifiedAt: iso(p.lastModifiedAt),
      agentProcessStatus: agentStatusOf(p),
      agentServerStatus: p.server.status,
      deployment: p.deployment && {
        status: p.deployment.status,
        createdAt: iso(p.deployment.createdAt),
        versionId: p.deployment.versionId,
      },
      versionRecovery: p.recovery && {
        status: p.recovery.status,
        versionId: p.recovery.versionId,
        startedAt: iso(p.recovery.startedAt),
        errorMessage: p.recovery.errorMessage,
      },
      importInProgress: this.importView(p),
      secrets: p.secrets.map(secretView),
      customDomain: p.customDomain && customDomainView(p),
      productionProjectUrl: productionHost(p.projectId),
      temporalDevelopmentProjectUrl: `https://${p.projectId}.dev.${SANDBOX_APPS_DOMAIN}`,
      totalCreditsSpent: p.totalCreditsSpent,
      creditLimits: { ...p.creditLimits },
    };
  }

  private importView(p: SimProject) {
    const lock = p.importLock;
    if (!lock) return null;
    const failed = lock.failAt !== undefined && lock.failAt <= this.simNow();
    return {
      startedAt: iso(lock.startedAt),
      errorMessage: failed ? "The import failed while restoring the database; the project was left unchanged" : undefined,
    };
  }

  private deleteProject(p: SimProject) {
    this.projects.delete(p.projectId);
    return { projectId: p.projectId, deleted: true };
  }

  // --- time: advancing a project ---------------------------------------------------------------

  private advanceAll(): void {
    const now = this.simNow();
    for (const p of this.projects.values()) this.advance(p, now);
  }

  private advance(p: SimProject, now: number): void {
    this.advanceServer(p, now);
    this.advanceRun(p, now);
    this.advanceDeployment(p, now);
    this.advanceRecovery(p, now);
    this.advanceImport(p, now);
    this.advanceDomain(p, now);
  }

  private advanceServer(p: SimProject, now: number): void {
    const { status, readyAt } = p.server;
    if ((status === "Creating" || status === "Starting" || status === "Unarchiving") && readyAt <= now) {
      p.server = { status: "Active", readyAt };
      this.log(p, readyAt, `[server] Dev server listening on https://${p.projectId}.dev.${SANDBOX_APPS_DOMAIN}`);
      this.log(p, readyAt + 2 * SECOND, "[api] GET /api/health 200 3ms");
    }
  }

  private advanceRun(p: SimProject, now: number): void {
    const run = p.run;
    while (run && run.state === "running" && run.nextStep < run.steps.length && run.steps[run.nextStep].at <= now) {
      const step = run.steps[run.nextStep];
      run.nextStep += 1;
      this.applyStep(p, run, step);
    }
  }

  private applyStep(p: SimProject, run: AgentRun, step: RunStep): void {
    if (!this.chargeRunStep(p, run, step)) return;
    if (step.kind === "final") {
      if (run.fails) this.failRun(p, run, step.at);
      else this.finishRun(p, run, step.at);
      return;
    }
    const message: Message = { author: "agent", message: step.text, messageType: step.kind, createdAt: step.at };
    if (step.needsSecrets) {
      const isProvided = p.secrets.some((s) => s.secretName === "STRIPE_API_KEY");
      message.secretKeysNeeded = {
        STRIPE_API_KEY: { isProvided, description: "Stripe secret key used by the checkout backend" },
      };
    }
    p.conversation.push(message);
    this.log(p, step.at, `[agent] ${step.text}`);
    if (step.kind === "building") this.log(p, step.at + SECOND, "[vite] hmr update /src/pages/Home.tsx");
  }

  /** Charges the run up to this step's share of its cost; false (and the run ends) when credits or the project cap run out. */
  private chargeRunStep(p: SimProject, run: AgentRun, step: RunStep): boolean {
    const target = round(run.cost * step.fraction);
    const delta = round(target - run.creditsSpent);
    if (delta <= 0) return true;
    // The cap is compared with everything the project spent; the simulator does not reset it monthly.
    const cap = p.creditLimits.maxDevelopmentCreditsPerMonth;
    const overCap = cap !== null && p.totalCreditsSpent + delta > cap;
    const charge = overCap ? undefined : this.charge(delta);
    if (!charge) {
      const reason = overCap ? "The project's monthly development credit limit was reached" : "The account ran out of credits";
      run.state = "limit-reached";
      const message = `${reason}; the agent stopped.`;
      p.conversation.push({ author: "agent", message, messageType: "limit-reached", createdAt: step.at });
      this.log(p, step.at, `[agent] Stopped: ${reason}`);
      return false;
    }
    run.charged = {
      recurrent: round(run.charged.recurrent + charge.recurrent),
      oneTime: round(run.charged.oneTime + charge.oneTime),
    };
    run.creditsSpent = target;
    p.totalCreditsSpent = round(p.totalCreditsSpent + delta);
    return true;
  }

  private finishRun(p: SimProject, run: AgentRun, at: number): void {
    const n = p.versions.length + 1;
    const version = this.addVersion(p, at, `Version ${n}`, commitMessageFor(run.prompt), run.prompt);
    p.conversation.push({
      author: "agent",
      message: `Done! I implemented your request. The preview is live at https://${p.projectId}.dev.${SANDBOX_APPS_DOMAIN}`,
      messageType: "finished",
      createdAt: at,
      versionId: version._id,
      gitDiffUrl: `https://git.${SANDBOX_APPS_DOMAIN}/${p.projectId}/commit/${version._id}`,
    });
    run.state = "finished";
    p.previewImageUrl = `https://previews.${SANDBOX_APPS_DOMAIN}/${p.projectId}/${version._id}.png`;
    p.lastModifiedAt = at;
    this.log(p, at, "[build] Compiled successfully in 1.8s");
  }

  private failRun(p: SimProject, run: AgentRun, at: number): void {
    this.refund(run.charged);
    p.totalCreditsSpent = round(p.totalCreditsSpent - run.creditsSpent);
    run.charged = { recurrent: 0, oneTime: 0 };
    run.creditsSpent = 0;
    run.state = "failed";
    p.conversation.push({
      author: "agent",
      message: "The build failed: the dev server did not compile after my changes. The credits of this run were refunded.",
      messageType: "error",
      createdAt: at,
    });
    this.log(p, at, "[build] ERROR Build failed: Cannot find module './components/Checkout'");
  }

  private advanceDeployment(p: SimProject, now: number): void {
    const d = p.deployment;
    if (!d || d.status !== "deploying" || d.doneAt > now) return;
    d.status = d.fails ? "error" : "success";
    if (d.fails) {
      this.log(p, d.doneAt, "[deploy] ERROR Production build failed: type errors in src/pages/Booking.tsx");
      return;
    }
    p.lastSuccessfulDeployAt = d.doneAt;
    p.lastModifiedAt = Math.max(p.lastModifiedAt, d.doneAt);
    this.log(p, d.doneAt, `[deploy] Live at https://${productionHost(p.projectId)}`);
  }

  private advanceRecovery(p: SimProject, now: number): void {
    const r = p.recovery;
    if (!r || r.status !== "recovering" || r.doneAt > now) return;
    if (r.fails) {
      r.status = "error";
      r.errorMessage = "The recovered version did not build; the project was left unchanged";
      this.log(p, r.doneAt, `[recover] ERROR Recovering ${r.versionId} failed`);
      return;
    }
    const source = p.versions.find((v) => v._id === r.versionId);
    this.addVersion(p, r.doneAt, `Version ${p.versions.length + 1}`, `Recover ${source?.name ?? r.versionId}`, "");
    p.recovery = null;
    p.lastModifiedAt = Math.max(p.lastModifiedAt, r.doneAt);
    this.log(p, r.doneAt, `[recover] Recovered ${r.versionId}`);
  }

  private advanceImport(p: SimProject, now: number): void {
    const lock = p.importLock;
    if (!lock) return;
    if (now >= lock.endsAt) {
      p.importLock = null;
      this.log(p, lock.endsAt, lock.failAt !== undefined ? "[import] ERROR Import failed" : "[import] Import finished");
      if (lock.failAt === undefined) p.lastModifiedAt = Math.max(p.lastModifiedAt, lock.endsAt);
    } else if (now - lock.startedAt > IMPORT_LOCK_MAX_AGE) {
      p.importLock = null;
    }
  }

  /** pending_validation for 10 minutes, then pending_deployment until a deployment has succeeded. */
  private advanceDomain(p: SimProject, now: number): void {
    const d = p.customDomain;
    if (!d || d.status === "active" || d.validatedAt > now) return;
    d.status = p.lastSuccessfulDeployAt !== null ? "active" : "pending_deployment";
    d.sslStatus = d.status === "active" ? "active" : "pending";
  }

  // --- agent -----------------------------------------------------------------------------------

  private agentStart(p: SimProject, body: Json) {
    if (typeof body.prompt !== "string" || body.prompt.trim() === "") {
      fail(400, "MISSING_PROMPT", "prompt is required and must not be empty");
    }
    const inputFiles = validateInputFiles(body.inputFiles);
    this.checkIdle(p, { deployment: true });
    if (this.credits() < AGENT_MIN_CREDITS) {
      fail(402, "INSUFFICIENT_CREDITS", `Starting the agent needs at least ${AGENT_MIN_CREDITS} credits`);
    }
    this.startRun(p, body.prompt, this.simNow(), { model: "opus", effort: "high", fastMode: false }, inputFiles);
    return {
      projectId: p.projectId,
      status: "init",
      message:
        `The agent started. Poll GET ${API}/projects/${p.projectId}/agent/status ` +
        "every 10-15 seconds until status is done.",
    };
  }

  /** 409 while another activity runs on the project. */
  private checkIdle(p: SimProject, also: { deployment: boolean }): void {
    if (p.run?.state === "running") fail(409, "AGENT_RUNNING", "The agent is running on this project; wait until it is done");
    if (also.deployment && p.deployment?.status === "deploying") {
      fail(409, "DEPLOYMENT_RUNNING", "A deployment is running on this project; wait until it ends");
    }
    if (p.recovery?.status === "recovering") fail(409, "RECOVERY_RUNNING", "A version recovery is running on this project");
    if (p.importLock) fail(409, "IMPORT_RUNNING", "A project import is running; poll importInProgress until it is null");
  }

  private startRun(p: SimProject, prompt: string, at: number, options: RunOptions, inputFiles: Attachment[]): AgentRun {
    const minutesMarker = /\[minutes=(\d+(?:\.\d+)?)\]/.exec(prompt);
    const minutes = minutesMarker ? Math.max(0.05, Number(minutesMarker[1])) : 5 + (hash(prompt) % 36);
    const run: AgentRun = {
      prompt,
      startedAt: at,
      cost: 10 + (hash(`cost:${prompt}`) % 31),
      creditsSpent: 0,
      charged: { recurrent: 0, oneTime: 0 },
      steps: runSteps(at, minutes * MINUTE, prompt.includes("[secrets]")),
      nextStep: 0,
      state: "running",
      fails: prompt.includes("[fail]"),
      conversationStart: p.conversation.length,
      options,
      inputFiles,
    };
    p.conversation.push({ author: "user", message: prompt, messageType: "regular", createdAt: at });
    p.run = run;
    p.lastModifiedAt = at;
    if (p.server.status === "Archived") p.server = { status: "Unarchiving", readyAt: at + SERVER_BOOT };
    this.log(p, at, `[agent] Run started (${options.model}, effort ${options.effort})`);
    this.advanceRun(p, at);
    return run;
  }

  private agentStatus(p: SimProject) {
    const run = p.run;
    return {
      projectId: p.projectId,
      status: agentStatusOf(p),
      startedAt: run ? iso(run.startedAt) : null,
      creditsSpent: run?.creditsSpent ?? 0,
      realtimeConversation: run ? p.conversation.slice(run.conversationStart).map(messageView) : [],
    };
  }

  private agentStop(p: SimProject) {
    const run = p.run;
    if (!run || run.state !== "running") fail(409, "AGENT_NOT_RUNNING", "The agent is not running on this project");
    const at = this.simNow();
    run.state = "stopped";
    p.conversation.push({ author: "agent", message: "Stopped at your request.", messageType: "regular", createdAt: at });
    this.log(p, at, "[agent] Run stopped by the user");
    return { projectId: p.projectId, status: "done", message: "The agent was stopped" };
  }

  // --- server, deployments, versions -----------------------------------------------------------

  private restartServer(p: SimProject) {
    this.chargeProject(p, "START_SERVER");
    this.startServer(p, this.simNow());
    const message = "The dev server is starting; it is Active in about a minute";
    return { projectId: p.projectId, status: p.server.status, message };
  }

  private startServer(p: SimProject, at: number): void {
    p.server = { status: "Starting", readyAt: at + SERVER_BOOT };
    this.log(p, at, "[server] Starting development server");
  }

  private deploy(p: SimProject) {
    this.checkIdle(p, { deployment: true });
    if (p.server.status !== "Active") this.serverNotReady(p);
    this.chargeProject(p, "CREATE_DEPLOYMENT");
    const at = this.simNow();
    this.startDeployment(p, at, latestPrompt(p).includes("[deploy-fail]"));
    return {
      projectId: p.projectId,
      status: "deploying",
      message: `Deployment started. Poll GET ${API}/projects/${p.projectId}/deployments/status until it is success or error.`,
    };
  }

  /** Starts the server unless it is already on its way up (charging START_SERVER), then answers 409. */
  private serverNotReady(p: SimProject): never {
    const booting = ["Creating", "Starting", "Unarchiving"].includes(p.server.status);
    if (!booting) {
      this.chargeProject(p, "START_SERVER");
      this.startServer(p, this.simNow());
    }
    fail(409, "SERVER_NOT_READY", "The dev server is not running; it is being started. Retry the deployment in about a minute");
  }

  private startDeployment(p: SimProject, at: number, fails: boolean): void {
    const latest = p.versions[p.versions.length - 1];
    p.deployment = { status: "deploying", createdAt: at, versionId: latest._id, doneAt: at + DEPLOY_DURATION, fails };
    p.lastModifiedAt = at;
    this.log(p, at, "[deploy] Building production bundle");
  }

  private deploymentStatus(p: SimProject) {
    const d = p.deployment;
    return {
      projectId: p.projectId,
      status: d ? d.status : null,
      createdAt: d ? iso(d.createdAt) : null,
      versionId: d ? d.versionId : null,
    };
  }

  private addVersion(p: SimProject, at: number, name: string, commitMessage: string, prompt: string): Version {
    const version: Version = { _id: this.newId(), name, commitMessage, prompt, createdAt: at };
    p.versions.push(version);
    return version;
  }

  private listVersions(p: SimProject, query: URLSearchParams) {
    const limit = intParam(query, "limit", 50, 1, 1000, "LIST_VERSIONS_ERROR");
    const skip = intParam(query, "skip", 0, 0, Number.MAX_SAFE_INTEGER, "LIST_VERSIONS_ERROR");
    const newestFirst = [...p.versions].reverse();
    return {
      versions: newestFirst.slice(skip, skip + limit).map((v) => ({ ...v, createdAt: iso(v.createdAt) })),
      totalCount: p.versions.length,
    };
  }

  private recover(p: SimProject, versionId: string) {
    const version = p.versions.find((v) => v._id === versionId);
    if (!version) fail(404, "VERSION_NOT_FOUND", `Version ${versionId} does not exist in ${p.projectId}`);
    this.checkIdle(p, { deployment: false });
    this.chargeProject(p, "RECOVER_VERSION");
    const at = this.simNow();
    p.recovery = {
      status: "recovering",
      versionId,
      startedAt: at,
      doneAt: at + RECOVERY_DURATION,
      fails: version.prompt.includes("[recover-fail]"),
    };
    this.log(p, at, `[recover] Restoring ${version.name}`);
    const message = "Recovery started; poll the project's versionRecovery until it is null";
    return { projectId: p.projectId, versionId, status: "recovering", message };
  }

  // --- logs, secrets, domain, database ---------------------------------------------------------

  private log(p: SimProject, at: number, line: string): void {
    p.logs.push({ at, line });
    if (p.logs.length > MAX_LOG_LINES) p.logs.splice(0, p.logs.length - MAX_LOG_LINES);
  }

  private logsText(p: SimProject): string {
    const now = this.simNow();
    return p.logs
      .filter((l) => l.at <= now)
      .sort((a, b) => a.at - b.at)
      .slice(-200)
      .map((l) => `${iso(l.at)} ${l.line}`)
      .join("\n");
  }

  private putSecret(p: SimProject, body: Json) {
    const input = validateSecretFields(body, "secret");
    const existing = p.secrets.find((s) => s.secretName === input.secretName);
    if (existing) {
      existing.secretValue = input.secretValue;
      existing.environment = input.environment;
      return secretView(existing);
    }
    const secret: Secret = { _id: this.newId(), ...input };
    p.secrets.push(secret);
    return secretView(secret);
  }

  private deleteSecret(p: SimProject, secretId: string) {
    const index = p.secrets.findIndex((s) => s._id === secretId);
    if (index < 0) fail(404, "SECRET_NOT_FOUND", `Secret ${secretId} does not exist in ${p.projectId}`);
    p.secrets.splice(index, 1);
    return { _id: secretId, deleted: true };
  }

  private putDomain(p: SimProject, body: Json) {
    const hostname = validHostname(body.hostname);
    if (!hostname) fail(400, "INVALID_HOSTNAME", "hostname must be a domain name such as shop.example.com");
    if (p.customDomain?.hostname !== hostname) {
      this.chargeProject(p, "ADD_CUSTOM_DOMAIN");
      this.addCustomDomain(p, hostname, this.simNow());
    }
    return customDomainView(p);
  }

  private addCustomDomain(p: SimProject, hostname: string, at: number): void {
    p.customDomain = { hostname, status: "pending_validation", sslStatus: "pending", validatedAt: at + DOMAIN_VALIDATION };
  }

  private deleteDomain(p: SimProject) {
    if (!p.customDomain) fail(404, "DOMAIN_NOT_FOUND", `${p.projectId} has no custom domain`);
    const { hostname } = p.customDomain;
    p.customDomain = null;
    return { hostname, deleted: true };
  }

  private query(p: SimProject, body: Json) {
    const { tableName } = body;
    if (typeof tableName !== "string" || tableName === "") fail(400, "MISSING_TABLE_NAME", "tableName is required");
    const table = p.tables.find((t) => t.type === tableName);
    if (!table) fail(404, "TABLE_NOT_FOUND", `Table ${tableName} does not exist in ${p.projectId}`);
    const options = given(body.queryOptions) ? body.queryOptions : {};
    if (!isObject(options)) fail(400, "INVALID_QUERY_OPTIONS", "queryOptions must be an object");
    return { results: queryRecords(table.records, options) };
  }

  // --- demo data -------------------------------------------------------------------------------

  private seedDemoData(): void {
    this.seeding = true;
    const t = this.t0;

    const acme = this.seedProject("acme-storefront", t - 120 * DAY, {
      label: "Acme Storefront",
      description: "Online store for Acme outdoor gear with catalog, cart and checkout",
    });
    const storePrompt = "Build an online store for outdoor gear with a product catalog, a cart and a checkout page";
    this.seedRun(acme, storePrompt, t - 120 * DAY + HOUR);
    this.seedRun(acme, "Add a customers admin page and an orders table with status filters", t - 90 * DAY);
    this.seedRun(acme, "Make the home page hero brighter and add customer reviews", t - 12 * DAY);
    this.startDeployment(acme, t - 11 * DAY, false);
    this.addCustomDomain(acme, "shop.acme-demo.com", t - 11 * DAY + HOUR);
    acme.tables = demoTables(() => this.newId(), t - 90 * DAY);

    const empty = this.seedProject("empty-sandbox", t - 75 * DAY, { description: "Empty project, nothing built yet" });
    this.advance(empty, t - 74 * DAY);
    empty.server = { status: "Archived", readyAt: empty.server.readyAt };

    const campaign = this.seedProject("spring-campaign", t - 40 * DAY, {
      label: "Spring campaign",
      description: "Landing page for the spring marketing campaign",
      groupId: "grp_marketing",
    });
    this.seedRun(campaign, "Create a landing page for our spring sale with a newsletter signup form", t - 40 * DAY + HOUR);

    const dashboard = this.seedProject("internal-dashboard", t - 20 * DAY, {
      label: "Internal dashboard",
      description: "Sales dashboard for the internal team",
      groupId: "grp_internal",
    });
    dashboard.secrets = [
      { _id: this.newId(), secretName: "DATABASE_URL", secretValue: "postgres://demo:demo@db/sales", environment: "both" },
      { _id: this.newId(), secretName: "SENDGRID_API_KEY", secretValue: "SG.demo-secret-value", environment: "production" },
    ];
    const dashboardPrompt = "Build a sales dashboard with charts of monthly revenue and a weekly email report";
    this.seedRun(dashboard, dashboardPrompt, t - 20 * DAY + HOUR);
    this.startDeployment(dashboard, t - 19 * DAY, false);

    const booking = this.seedProject("booking-app", t - 3 * DAY, {
      description: "Appointment booking for a hair salon",
    });
    this.seedRun(booking, "Build an appointment booking app for a hair salon with a calendar view", t - 3 * DAY + HOUR);
    this.startDeployment(booking, t - 2 * DAY, true);

    for (const p of this.projects.values()) this.advance(p, t);
    this.seeding = false;
  }

  private seedProject(projectId: string, at: number, fields: Omit<NewProjectFields, "projectId">): SimProject {
    return this.createProject({ projectId, ...fields }, at);
  }

  private seedRun(p: SimProject, prompt: string, at: number): void {
    this.startRun(p, prompt, at, { model: "opus", effort: "high", fastMode: false }, []);
    this.advance(p, at + 2 * HOUR);
  }
}

// ---------------------------------------------------------------------------------------------
// Views and pure helpers
// ---------------------------------------------------------------------------------------------

function productionHost(projectId: string): string {
  return `${projectId}.${SANDBOX_APPS_DOMAIN}`;
}

function agentStatusOf(p: SimProject): "idle" | "init" | "done" {
  if (!p.run) return "idle";
  return p.run.state === "running" ? "init" : "done";
}

function latestPrompt(p: SimProject): string {
  for (let i = p.conversation.length - 1; i >= 0; i--) {
    if (p.conversation[i].author === "user") return p.conversation[i].message;
  }
  return "";
}

function messageView(m: Message) {
  return { ...m, createdAt: iso(m.createdAt) };
}

function secretView(s: Secret) {
  return { _id: s._id, secretName: s.secretName, environment: s.environment };
}

function customDomainView(p: SimProject) {
  const d = p.customDomain!;
  return {
    hostname: d.hostname,
    status: d.status,
    sslStatus: d.sslStatus,
    dnsRecordsToAdd: [{ type: "CNAME", name: d.hostname, value: productionHost(p.projectId) }],
  };
}

function commitMessageFor(prompt: string): string {
  const clean = prompt.replace(/\[[^\]]*\]/g, "").replace(/\s+/g, " ").trim();
  return clean.length > 72 ? `${clean.slice(0, 69)}...` : clean;
}

const BUILDING_TEXTS = [
  "Planning the data model and pages",
  "Creating pages and components",
  "Wiring up the backend API and database",
  "Polishing styles and checking the build",
];

/** starting at once, four building messages at 20/40/60/80 %, the final message at the end. */
function runSteps(startedAt: number, duration: number, needsSecrets: boolean): RunStep[] {
  const steps: RunStep[] = [{ at: startedAt, fraction: 0, kind: "starting", text: "Starting to work on your request" }];
  BUILDING_TEXTS.forEach((text, i) => {
    const fraction = (i + 1) / 5;
    const step: RunStep = { at: startedAt + Math.round(duration * fraction), fraction, kind: "building", text };
    if (needsSecrets && i === 2) {
      step.text = "The checkout needs a Stripe key: please add the STRIPE_API_KEY secret";
      step.needsSecrets = true;
    }
    steps.push(step);
  });
  steps.push({ at: startedAt + duration, fraction: 1, kind: "final", text: "" });
  return steps;
}

function tableStructure(t: Table) {
  const properties = t.properties.map((p) => ({ ...p }));
  return { _id: t._id, type: t.type, label: t.label, description: t.description, properties };
}

function queryRecords(records: Json[], options: Json): Json[] {
  let rows = [...records];
  if (isObject(options._filter)) {
    const filter = options._filter;
    rows = rows.filter((r) => Object.entries(filter).every(([field, value]) => r[field] === value));
  }
  if (isObject(options._sort)) {
    const [[field, dir] = ["", 1]] = Object.entries(options._sort);
    const sign = dir === -1 || dir === "-1" || dir === "desc" ? -1 : 1;
    rows.sort((a, b) => sign * compareValues(a[field], b[field]));
  }
  const offset = typeof options._offset === "number" && options._offset > 0 ? Math.floor(options._offset) : 0;
  const limit = typeof options._limit === "number" && options._limit > 0 ? Math.min(Math.floor(options._limit), 1000) : 50;
  return rows.slice(offset, offset + limit).map((r) => ({ ...r }));
}

function compareValues(a: unknown, b: unknown): number {
  if (typeof a === "number" && typeof b === "number") return a - b;
  return String(a ?? "").localeCompare(String(b ?? ""));
}

const FIRST_NAMES = ["Ana", "Ben", "Chloe", "Diego", "Emma", "Farid", "Grace", "Hugo", "Iris", "Jonas"];
const LAST_NAMES = ["Lopez", "Smith", "Novak"];
const COUNTRIES = ["ES", "US", "DE", "FR", "GB"];
const ORDER_STATUSES = ["pending", "paid", "shipped", "delivered", "refunded"];

function demoTables(newId: () => string, since: number): Table[] {
  const customers: Json[] = Array.from({ length: 30 }, (_, i) => {
    const name = `${FIRST_NAMES[i % 10]} ${LAST_NAMES[Math.floor(i / 10)]}`;
    return {
      _id: newId(),
      name,
      email: `${name.toLowerCase().replace(" ", ".")}@example.com`,
      country: COUNTRIES[i % COUNTRIES.length],
      vip: i % 7 === 0,
      createdAt: iso(since + i * DAY),
    };
  });
  const orders: Json[] = Array.from({ length: 30 }, (_, i) => ({
    _id: newId(),
    customer: customers[(i * 7) % 30]._id,
    total: round(19.9 + ((i * 37) % 250)),
    status: ORDER_STATUSES[i % ORDER_STATUSES.length],
    createdAt: iso(since + (i + 5) * DAY),
  }));
  return [
    {
      _id: newId(),
      type: "customers",
      label: "Customers",
      description: "People who bought from the store",
      properties: [
        { name: "name", type: "string", label: "Name" },
        { name: "email", type: "string", label: "Email" },
        { name: "country", type: "options", label: "Country" },
        { name: "vip", type: "boolean", label: "VIP" },
      ],
      records: customers,
    },
    {
      _id: newId(),
      type: "orders",
      label: "Orders",
      description: "Orders placed in the store",
      properties: [
        { name: "customer", type: "relation", label: "Customer" },
        { name: "total", type: "number", label: "Total (EUR)" },
        { name: "status", type: "options", label: "Status" },
      ],
      records: orders,
    },
  ];
}
