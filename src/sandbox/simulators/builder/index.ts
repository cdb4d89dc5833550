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
 *
 * Layout: this file is the facade (the public API and the list of areas). Each area is one file
 * that registers its operations and, when its state moves with time, an advance step:
 *   state.ts      the simulated project, shared constants, small pure helpers
 *   context.ts    BuildContext: projects, wallet, clocks, ids, logs, advance steps, checkIdle
 *   routes.ts     BuildRoutes (route registration, the envelope) and fail()
 *   credits.ts    CREDIT_COSTS, the wallet, GET /account and /credit-costs
 *   validation.ts pure request validation;  views.ts  JSON views of the state
 *   projects.ts, launch.ts, agent.ts, server.ts, deployments.ts, versions.ts, imports.ts,
 *   domain.ts, secrets.ts, database.ts   the areas;  design.ts  the design token check
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
import { BuildContext, type BuildSimulatorOptions } from "./context.js";
import { currentBalance, registerAccountRoutes } from "./credits.js";
import { registerDatabaseRoutes } from "./database.js";
import { registerDeploymentRoutes } from "./deployments.js";
import { registerDomainRoutes } from "./domain.js";
import { registerImportRoutes, startImport } from "./imports.js";
import { registerLaunchRoutes } from "./launch.js";
import { registerProjectRoutes } from "./projects.js";
import { BuildRoutes, errorResponse } from "./routes.js";
import { registerSecretRoutes } from "./secrets.js";
import { seedDemoData } from "./seed.js";
import { registerServerRoutes } from "./server.js";
import type { SimProject } from "./state.js";
import { registerVersionRoutes } from "./versions.js";

export type { BuildSimulatorOptions } from "./context.js";
export { CREDIT_COSTS } from "./credits.js";
export { SANDBOX_APPS_DOMAIN, type SimProject } from "./state.js";

/** An area registers its operations on `routes` and may add advance steps with ctx.onAdvance. */
export type Area = (ctx: BuildContext, routes: BuildRoutes) => void;

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
  registerDeploymentRoutes,
  registerVersionRoutes,
  registerImportRoutes,
  registerDomainRoutes,
  registerSecretRoutes,
  registerDatabaseRoutes,
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
      badJson: (req) => this.unauthorized(req) ?? errorResponse(400, "INVALID_JSON", "The request body is not valid JSON"),
    });
    const routes = new BuildRoutes(this.router, this.ctx);
    for (const register of AREAS) register(this.ctx, routes);
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

  storedSecretValue(projectId: string, secretName: string): string | undefined {
    return this.ctx.projects.get(projectId)?.secrets.find((s) => s.secretName === secretName)?.secretValue;
  }

  private unauthorized(req: SimRequest): SimResponse | undefined {
    const header = req.headers["api-key"];
    if (header === this.apiKey || bearerToken(req) === this.apiKey) return undefined;
    return { status: 401, body: { error: "Unauthorized api key" } };
  }
}
