/**
 * In-memory simulator ("sandbox") of the project build service as its reference describes it
 * (docs/openapi/build-service.yaml is written from that reference; "§n" in these files are its
 * sections; where older descriptions of the service disagree, the reference wins).
 *
 * State is computed lazily from the clock: every request that touches a project first advances
 * it to the current simulated time, so there are no timers. Simulated time runs `timeScale`
 * times faster than real time; rate limits (project creation, design token checks) count real
 * minutes.
 *
 * Error codes the spec does not show, chosen here:
 *   400 INVALID_JSON, 404 NOT_FOUND (unknown route), 404 PROJECT_NOT_FOUND,
 *   400 INVALID_DESCRIPTION, 400 INVALID_LABEL (create/launch field lengths),
 *   409 IMPORT_IN_PROGRESS (deploy, recover or agent/start while an import runs: the reference
 *   names the code for prompting, not its HTTP status), 409 SANDBOX_NOT_REACHABLE (HTTP not stated),
 *   404 VERSION_NOT_FOUND, 400 LIST_VERSIONS_ERROR, 404 SECRET_NOT_FOUND, 400 INVALID_HOSTNAME
 *   (also an apex: §9 asks for a subdomain), 400 MISSING_TABLE_NAME, 400 INVALID_QUERY_OPTIONS, 404 TABLE_NOT_FOUND,
 *   404 RECORD_NOT_FOUND (update, delete or link of an unknown record), 400 INVALID_IMPORT_CODE
 *   (a code this simulator never issued), 400 INVALID_LABEL / INVALID_DESCRIPTION /
 *   INVALID_PROJECT_GROUP (PATCH project fields of the wrong type).
 *
 * Other choices where the reference is silent (records.ts, transfer.ts, groups.ts, project-update.ts):
 *   records: `_id`, `createdAt`, `updatedAt` in `data` are ignored; deleting a record drops its
 *   links; link/unlink take the property's id or name, answer success for a property that is not
 *   many-to-many (or unknown), and unlink checks no record; a link made twice is kept once.
 *   transfer: includeRecords only when exactly true; codes never expire; the 1/min and 5/h limits
 *   count only calls carried out and are checked after the target's state; import checks in this
 *   order: code present, IMPORT_IN_PROGRESS, AGENT_RUNNING, PROJECT_NOT_IMPORTABLE, known code,
 *   limit, SERVER_NOT_READY (an Archived target is started, START_SERVER charged as for deploy),
 *   balance. The target's tables go at once; the export comes back when the lock ends (4 min),
 *   with a new version and an Active server.
 *   groups: a list limit over 200 is clamped; names need not be unique; PATCH {} changes nothing.
 *   PATCH project: a label or description over 80 / 500 characters is cut; groupId "" clears.
 *
 * Choices of files.ts, rebuild.ts, github.ts (their headers say more):
 *   the account is on a paid plan unless setAccountPlan("free") (writes: FREE_PLAN_NO_SOURCE_EDITING);
 *   a sandbox exists once the agent ran or a second version exists, else NO_SANDBOX, no files and
 *   commitSha null; its files start as a small Next.js app; limits in bytes (1 MB = 1,048,576,
 *   512 KB = 524,288, 12 MB for uploads: over it 413 FILE_TOO_LARGE), write size counted decoded;
 *   utf8 writes pass an HTML sanitizer (script elements and className attributes dropped);
 *   400 INVALID_PAGINATION (tree limit/offset not whole numbers; a limit over 5000 is clamped),
 *   413 PROJECT_TOO_LARGE over 20,000 files, an unknown tree folder lists nothing, INVALID_PATH
 *   also for a missing path or writing over a folder; the tree is depth first, folders first;
 *   write checks: path, content, encoding, size, plan, sandbox, Active server, agent, balance;
 *   an upload whose name contains `upload-fail` gets 500 UPLOAD_FAILED (not charged); source-code
 *   is charged even with no files (downloadUrl null); rebuilds take 2 min, end in error when a
 *   file holds [rebuild-fail], allow 30 per project per real hour (3 on the free plan), are
 *   refused while the sandbox is not Active (400 SANDBOX_NOT_ACTIVE), and block nothing else;
 *   GitHub: SERVER_NOT_READY on connect/pull is not charged; connecting again replaces the link;
 *   a pull while one runs starts over; a pull with no remote commits makes no version; writes are
 *   pushed to develop; the pull rebuild takes 90 s; .env text adds NODE_ENV, NEXT_PUBLIC_APP_URL
 *   and TOTALUM_API_KEY to the project's secrets; github/env does not need a connection.
 *
 * Choices of figma.ts, webhooks.ts, billing.ts, prodlogs.ts, diffs.ts (their headers say more):
 *   Figma: every live token check (launch, connect, validate, status?verify=true) shares the 10 per
 *   real minute; connecting again replaces the account; status of a project never connected is
 *   {connected: false, account: null, connectedAt: null}; a failed re-check (tokenValid false,
 *   tokenError) never disconnects (a token containing `expiring` passes at connect and fails every
 *   re-check), only the account limit is an error (429); validate answers
 *   {valid: false, errorCode, errorMessage} for a rejected or under-scoped token, and the errors of
 *   connect otherwise. Webhooks: 400 INVALID_WEBHOOK_HEADERS (headers not an object of strings);
 *   DELETE answers {success: true}; nothing is ever sent: deliveries are recorded
 *   (webhookDeliveries()); agent.prompt.finished fires when a prompt ends in any way;
 *   project.credit_limit.reached carries {projectId, category, limit, spent}, once per project and
 *   category until that cap changes. Credit caps are compared with all of the project's spending
 *   (no monthly reset), checked before the balance; analytics: 400 MISSING_DATE_RANGE,
 *   INVALID_DATE, INVALID_DATE_RANGE, UTC days, every day listed, projectId not checked, types of
 *   other priced operations are their lower-case cost keys, create/launch charges are not counted.
 *   Production logs: one request per 3 simulated minutes after the first successful deployment;
 *   24 h without from/to, at most 1000 records, oldest first; getOnlyLastLogs: the last 20 as a
 *   bare array; regexSearch case-insensitive, with the records either side; 60 requests per real
 *   minute (429 PLAN_LIMIT_REACHED). Version diffs: a commitSha prefix matches; 404
 *   COMMIT_NOT_FOUND; made up from the prompt unless an area gives one (setVersionDiff).
 *
 * Choices of freshness.ts, batches.ts, agent.ts billing and project ids (their headers say more):
 *   reads lag (options detailsCacheMs, default 2000 real ms; startLagMs, default 1000 real ms):
 *   GET /projects/:id is a cached snapshot, dropped by PATCH (and DELETE) of the project only;
 *   after deploy, recover, import and start-or-restart, deployments/status and the details show
 *   the state from before the call (the previous deployment, no lock, a still-Active server) for
 *   startLagMs. Timestamps are simulated time, timeScale times faster than real time: a state
 *   made earlier in the same session can carry a time after the client's clock.
 *   Agent billing (§1.7): 10 when a prompt starts, the rest of its price (10-40) when it
 *   finishes; a short balance never stops a run (the wallet goes to 0); a prompt longer than
 *   runBudgetMinutes (assumed 60; option) stops there with a `limit-reached` message, no
 *   version, billed flat 60, or 50 when the balance is under 100 ("healthy" assumed = not under
 *   the low-credit e-mail line); failed prompts are refunded; a stopped prompt keeps its 10.
 *   agent/start below 5 credits: 402 (the "hard minimum" assumed); launch needs the project, its
 *   inline files and those 5 before anything is created (402 otherwise, §3); over the development cap with
 *   the 10 upfront: 403 PROJECT_CREDIT_LIMIT_REACHED (launch: warning step agent); at the end the
 *   cap bounds what is billed. agent/status keeps creditsSpent while a prompt runs (the credits
 *   billed so far; the reference shows it only once done). agent/stop: 400 NO_PROCESS_RUNNING,
 *   and it cancels a batch in flight. Batches (batches.ts): planning 2 min, 3-5 planned prompts,
 *   1 min between prompts, a failed prompt does not stop the batch, `paused` never shows.
 *   Ids: create answers 409 for a taken id ([C]); launch appends `-` and 2, 3, 4, 5, 6, 6
 *   random-looking lowercase letters and digits (the candidates follow from the id), then 409.
 *   Secrets (assumed, §8 does not say): every POST creates one, even with a name in use (the newest
 *   is the one in .env); secretKeysNeeded[].isProvided is always false ([RC], §4).
 *   Custom domains (domain.ts): every PUT is charged and replaces the domain; validation takes 10
 *   minutes; DNS record names are relative to the hostname's last two labels; DELETE is idempotent.
 *   Versions: listed newest first (ordering not stated); a recovery's version carries
 *   recoveredVersionId; every import makes a version (§7). Previews: temporalDevelopmentProjectUrl
 *   is "" until the server was first Active; cachedDevelopmentUrl is set (and named by
 *   developmentUrlFieldToUse) while a server that had run sleeps. Database (database.ts): the
 *   documented query options; relation expansion is not simulated.
 *   Deploy or recover on a server that is not Active: START_SERVER charged unless it is already
 *   starting, then 409 SERVER_NOT_READY; start-or-restart answers 409 while the agent, a
 *   deployment or a recovery runs. MAX_PROJECTS_REACHED errorDetails: plan and upgradePlan from
 *   the limit (2 free, 10 starter, 50 basic, 300 professional; any other limit: null). GET
 *   /projects clamps limit to 100 and sends X-Total-Count, X-Limit, X-Skip, X-Has-More.
 *
 * Prompt markers (sandbox only):
 *   [minutes=N]   the agent run lasts N simulated minutes (default 5-40, derived from the prompt);
 *                 past the run budget it stops there and is billed flat
 *   [fail]        the run ends with an `error` message and its credits are refunded
 *   [secrets]     a run message asks for STRIPE_API_KEY through `secretKeysNeeded`
 *   [deploy-fail] deployments of the project end in `error` while this is its latest prompt
 *   [recover-fail] recovering the version built by this prompt ends in `error`
 *   [app-error]   deploys answer SANDBOX_NOT_REACHABLE (reason app_error) while this is the latest prompt
 *   [app-starting] the first deploy after this prompt answers SANDBOX_NOT_REACHABLE (reason starting)
 *   [prompts=N]   a batch planned from this goal (letTotalumDecide) has N prompts (default 3-5)
 *   [big-diff]    the version's diff has 60 files of 80 lines;  [no-changes]  its diff is empty
 * Figma token markers: a token with whitespace or `://`, or under 20 characters, is
 * FIGMA_TOKEN_MALFORMED (personal tokens start with figd_; others are not refused for it); one
 * containing `invalid`, `noscope`, `unreachable` or `ratelimited` gets FIGMA_TOKEN_INVALID,
 * FIGMA_TOKEN_FORBIDDEN, FIGMA_UNREACHABLE or FIGMA_RATE_LIMITED (figma-token.ts).
 *
 * Layout: this file is the facade (the public API and the list of areas). Each area is one file
 * that registers its operations and, when its state moves with time, an advance step:
 *   state.ts      the simulated project, shared constants, small pure helpers
 *   context.ts    BuildContext: projects, wallet, clocks, ids, logs, advance steps, checkIdle
 *   routes.ts     BuildRoutes (route registration, the envelope) and fail()
 *   credits.ts    CREDIT_COSTS, the wallet, GET /account and /credit-costs
 *   validation.ts pure request validation;  views.ts  JSON views of the state
 *   projects.ts, launch.ts, agent.ts, batches.ts, server.ts, deployments.ts, versions.ts, imports.ts,
 *   domain.ts, secrets.ts, database.ts, records.ts, transfer.ts, groups.ts, project-update.ts,
 *   figma.ts, diffs.ts, prodlogs.ts, webhooks.ts, billing.ts
 *                 the areas;  figma-token.ts  the Figma token check;  freshness.ts  stale reads
 *   seed.ts       the demo projects every simulator starts with
 *
 * Adding an area (e.g. github.ts):
 *   export function registerGithubRoutes(ctx: BuildContext, routes: BuildRoutes): void {
 *     routes.onProject("POST", "/github/connect", (p, req) => connect(ctx, p, bodyOf(req)));
 *     ctx.onAdvance((p, now) => advanceGithubSync(ctx, p, now)); // only if its state moves with time
 *   }
 * then import it here and add `registerGithubRoutes,` to AREAS (its place there is also when its
 * advance step runs). Handlers return the envelope's `data` or throw with fail(status, code,
 * message); new project fields go in SimProject (state.ts), their initial values in createProject
 * (projects.ts), and demo values in seed.ts.
 */
import { bearerToken, Router, type SimRequest, type SimResponse } from "../../router.js";
import { registerAgentRoutes } from "./agent.js";
import { chargeInfrastructure, registerBillingRoutes } from "./billing.js";
import { registerBatchRoutes } from "./batches.js";
import { BuildContext, type BuildSimulatorOptions } from "./context.js";
import { currentBalance, registerAccountRoutes } from "./credits.js";
import { registerDatabaseRoutes } from "./database.js";
import { registerVersionDiffRoutes } from "./diffs.js";
import { registerFigmaRoutes } from "./figma.js";
import { registerProdLogRoutes } from "./prodlogs.js";
import { registerDeploymentRoutes } from "./deployments.js";
import { registerDomainRoutes } from "./domain.js";
import { registerFileRoutes, setAccountPlan, type AccountPlan } from "./files.js";
import { pushToGithub, registerGithubRoutes } from "./github.js";
import { registerRebuildRoutes } from "./rebuild.js";
import { registerGroupRoutes } from "./groups.js";
import { registerImportRoutes, startImport } from "./imports.js";
import { registerLaunchRoutes } from "./launch.js";
import { registerProjectUpdateRoutes } from "./project-update.js";
import { registerProjectRoutes } from "./projects.js";
import { registerRecordRoutes } from "./records.js";
import { BuildRoutes, errorResponse } from "./routes.js";
import { registerSecretRoutes } from "./secrets.js";
import { seedDemoData } from "./seed.js";
import { registerServerRoutes } from "./server.js";
import type { SimProject } from "./state.js";
import { registerTransferRoutes } from "./transfer.js";
import { registerVersionRoutes } from "./versions.js";
import { registerWebhookRoutes, webhookDeliveries, type Delivery } from "./webhooks.js";
import type { StartSimulator } from "../../simulator.js";

export type { BuildSimulatorOptions } from "./context.js";
export { CREDIT_COSTS } from "./credits.js";
export { SANDBOX_APPS_DOMAIN, type SimProject } from "./state.js";

/**
 * An area registers its operations on `routes` and may add advance steps with ctx.onAdvance;
 * `router` is for the rare operation outside /api/v1/vcaas (spending analytics).
 */
export type Area = (ctx: BuildContext, routes: BuildRoutes, router: Router) => void;

/**
 * Advance steps run in this order on every request: the server before the agent (their log lines
 * can share a timestamp) and deployments before the domain (a success activates the domain).
 */
const AREAS: Area[] = [
  registerAccountRoutes,
  registerLaunchRoutes,
  registerProjectRoutes,
  registerServerRoutes,
  registerAgentRoutes,
  registerBatchRoutes,
  registerDeploymentRoutes,
  registerVersionRoutes,
  registerImportRoutes,
  registerDomainRoutes,
  registerSecretRoutes,
  registerDatabaseRoutes,
  registerFileRoutes,
  registerRebuildRoutes,
  registerGithubRoutes,
  registerRecordRoutes,
  registerTransferRoutes,
  registerGroupRoutes,
  registerProjectUpdateRoutes,
  registerFigmaRoutes,
  registerVersionDiffRoutes,
  registerProdLogRoutes,
  // After every area that bills or ends runs: they see this pass's charges and endings.
  registerWebhookRoutes,
  registerBillingRoutes,
];

export class BuildSimulator {
  readonly router: Router;
  private readonly apiKey: string;
  private readonly ctx: BuildContext;

  constructor(options: BuildSimulatorOptions) {
    this.apiKey = options.apiKey;
    this.ctx = new BuildContext(options);
    this.router = new Router({
      authorize: (req) => this.unauthorized(req),
      notFound: (req) => errorResponse(404, "NOT_FOUND", `No operation ${req.method} ${req.path}`),
      badJson: (req) =>
        this.unauthorized(req) ?? errorResponse(400, "INVALID_JSON", "The request body is not valid JSON"),
    });
    const routes = new BuildRoutes(this.router, this.ctx);
    for (const register of AREAS) register(this.ctx, routes, this.router);
    seedDemoData(this.ctx);
  }

  /** There are no timers: state is derived from the clock. */
  dispose(): void {}

  // --- test and inspection helpers -------------------------------------------------------------

  setCredits(recurrent: number, oneTime: number): void {
    this.ctx.advanceAll();
    this.ctx.wallet.set(recurrent, oneTime);
  }

  balance(): { credits: number; recurrentCredits: number; oneTimeCredits: number } {
    return currentBalance(this.ctx);
  }

  /** Raw internal state of a project, advanced to the current simulated time. */
  project(projectId: string): SimProject | undefined {
    const p = this.ctx.projects.get(projectId);
    if (p) this.ctx.advance(p, this.ctx.simNow());
    return p;
  }

  projectIds(): string[] {
    return [...this.ctx.projects.keys()];
  }

  /** Current simulated time (epoch ms). */
  simulatedNow(): number {
    return this.ctx.simNow();
  }

  /**
   * Puts an import lock on a project (import operations are not shown upstream). It ends after
   * 4 simulated minutes; with `fail` an errorMessage shows from minute 2 until then; with `stuck`
   * it never ends and only the 30-minute staleness rule clears it.
   */
  startImport(projectId: string, opts: { fail?: boolean; stuck?: boolean } = {}): void {
    const p = this.project(projectId);
    if (!p) throw new Error(`Unknown project ${projectId}`);
    startImport(this.ctx, p, opts);
  }

  /** The account's plan: "paid" by default; "free" refuses source writes and lowers the rebuild limit. */
  setAccountPlan(plan: AccountPlan): void {
    setAccountPlan(this.ctx, plan);
  }

  /** Someone pushes files to the connected repository's develop branch; the next pull brings them. */
  pushToGithub(projectId: string, files: Record<string, string>): void {
    const p = this.project(projectId);
    if (!p) throw new Error(`Unknown project ${projectId}`);
    pushToGithub(p, files);
  }

  /** Webhook deliveries the service would have sent (none is sent), oldest first. */
  webhookDeliveries(): Delivery[] {
    return webhookDeliveries(this.ctx);
  }

  /**
   * The project's app uses paid infrastructure (`type`: email, pdf, chatgpt, ...): charged to the
   * account and its analytics; throws the 403 PROJECT_CREDIT_LIMIT_REACHED ApiError at the cap.
   */
  chargeInfrastructure(projectId: string, type: string, credits: number): void {
    const p = this.project(projectId);
    if (!p) throw new Error(`Unknown project ${projectId}`);
    chargeInfrastructure(this.ctx, p, type, credits);
  }

  storedSecretValue(projectId: string, secretName: string): string | undefined {
    return this.ctx.projects.get(projectId)?.secrets.findLast((s) => s.secretName === secretName)?.secretValue;
  }

  private unauthorized(req: SimRequest): SimResponse | undefined {
    const header = req.headers["api-key"];
    if (header === this.apiKey || bearerToken(req) === this.apiKey) return undefined;
    return { status: 401, body: { error: "Unauthorized api key" } };
  }
}

/** One account of this simulator, as the sandbox starts it (declaration.ts). */
export const startBuildSimulator: StartSimulator<
  BuildSimulator,
  Omit<BuildSimulatorOptions, "apiKey" | "timeScale">
> = (apiKey, timeScale, options) => new BuildSimulator({ ...options, apiKey, timeScale });
