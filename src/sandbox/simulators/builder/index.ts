/**
 * In-memory simulator ("sandbox") of the project build service as its reference describes it
 * (docs/openapi/build-service.yaml is written from that reference; "§n" in these files are its
 * sections; where older descriptions of the service disagree, the reference wins).
 *
 * State is computed lazily from the clock: every request that touches a project first advances
 * it to the current simulated time, so there are no timers. Simulated time runs `timeScale`
 * times faster than real time; rate limits (project creation, design token checks) count real
 * minutes. Agent messages are the one exception to simulated stamps: their `createdAt` is the
 * real moment they were written (BuildContext.wallTime), since people read it against a clock.
 *
 * Every rule the reference does not state (error codes it does not show, timings, limits,
 * orders of checks, what a silent case does) is listed, each marked assumed, in ONE place:
 * docs/simulator-assumptions.md. A new choice goes there too (test/unit/build-simulator-rules
 * fails on an error code answered here that is neither in the reference's description nor listed).
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
import {
  injectWebhookFault,
  registerWebhookRoutes,
  stopWebhooks,
  webhookDeliveries,
  webhooksSettled,
  type Delivery,
} from "./webhooks.js";
import type { WebhookFault } from "./webhook-sender.js";
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

  /** State is derived from the clock; the one timer runs while a webhook on this machine is subscribed. */
  dispose(): void {
    stopWebhooks(this.ctx);
  }

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

  /** Webhook deliveries, oldest first, with the real POSTs made of them (`attempts`). */
  webhookDeliveries(): Delivery[] {
    return webhookDeliveries(this.ctx);
  }

  /** The next deliveries (`times`, default 1) go missing, late, twice, or with a forged secret header. */
  injectWebhookFault(fault: WebhookFault): void {
    injectWebhookFault(this.ctx, fault);
  }

  /** Resolves once every real delivery started so far has its answer. */
  webhooksSettled(): Promise<void> {
    return webhooksSettled(this.ctx);
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
