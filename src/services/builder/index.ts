import { z } from "zod";
import type { HintTable } from "../../core/errors.js";
import { SharedPoller } from "../../core/poller.js";
import type { ServiceModule } from "../../core/service.js";
import { httpUrl, isLoopbackUrl, positiveInt, secret } from "../../core/settings.js";
import { UpstreamClient } from "../../core/upstream.js";
import { BuildClient } from "./client.js";
import { CreditGuard, type ConfirmPolicy } from "./credits.js";
import { builderPrompts } from "./prompts.js";
import { builderResources } from "./resources.js";
import type { AgentStatus, ProjectDetails } from "./schemas.js";
import { projectWatcher } from "./subscriptions.js";
import { agentTools } from "./tools/agent.js";
import { operationTools } from "./tools/operations.js";
import { projectTools } from "./tools/projects.js";
import type { WaitDeps } from "./waits.js";

export interface BuildDeps extends WaitDeps {
  guard: CreditGuard;
}

export const DEFAULT_BUILD_BASE_URL = "https://api-accounts.totalum.app";
/** Real upstreams are polled no faster than this; a loopback sandbox may be polled as fast as tests like. */
const MIN_POLL_MS = 2000;

const confirmSpend = z
  .string()
  .trim()
  .transform((v, ctx): ConfirmPolicy => {
    if (v === "always" || v === "never") return v;
    const n = Number(v);
    if (v !== "" && Number.isFinite(n) && n >= 0) return n;
    ctx.addIssue({ code: "custom", message: "must be always, never, or a credit amount above which to ask" });
    return z.NEVER;
  });

const settings = z
  .object({
    BUILD_API_BASE_URL: httpUrl.default(DEFAULT_BUILD_BASE_URL),
    BUILD_API_KEY: secret,
    BUILD_API_KEY_HEADER: z.string().min(1).default("api-key"),
    BUILD_POLL_INTERVAL_MS: positiveInt.optional(),
    BUILD_CONFIRM_SPEND: confirmSpend.default("always"),
  })
  .transform((s, ctx) => {
    const loopback = isLoopbackUrl(s.BUILD_API_BASE_URL);
    const poll = s.BUILD_POLL_INTERVAL_MS ?? (loopback ? 1000 : 12_000);
    if (!loopback && poll < MIN_POLL_MS) {
      ctx.addIssue({ code: "custom", path: ["BUILD_POLL_INTERVAL_MS"], message: `must be at least ${MIN_POLL_MS} ms for a real service (the service asks for a poll every 10-15 s)` });
      return z.NEVER;
    }
    return { ...s, BUILD_POLL_INTERVAL_MS: poll };
  });

export const BUILD_HINTS: HintTable = {
  INSUFFICIENT_CREDITS: "the balance is too low: check build_get_account and build_get_credit_costs, and top up before retrying.",
  MAX_PROJECTS_REACHED: "the plan's project limit is in use: delete a project (build_delete_project) or upgrade the plan.",
  PROJECT_ALREADY_EXISTS: "the id and six suffixed variants are taken: choose a different projectId.",
  RATE_LIMIT_EXCEEDED: "projects are being created faster than the plan allows: wait a minute, then retry once.",
  RATE_LIMITED: "too many Figma token checks (10 per minute per account): wait a minute, then retry.",
  FIGMA_RATE_LIMITED: "Figma is throttling the token check: retry shortly.",
  FIGMA_UNREACHABLE: "Figma could not be reached to check the token: retry shortly, or launch without figma.",
  FIGMA_TOKEN_INVALID: "Figma rejected the token (wrong, expired or revoked): create a new personal access token.",
  FIGMA_TOKEN_FORBIDDEN: "the token lacks scopes: create one with current_user:read and file_content:read.",
  FIGMA_TOKEN_MALFORMED: "the value is not a Figma personal access token (they start with figd_): copy the whole token.",
  MISSING_FIGMA_TOKEN: "figma.token is empty: pass the Figma personal access token, or leave figma out.",
  PLAN_LIMIT_REACHED: "the plan's production-log request limit is used up: wait for it to reset, narrow the window (from/to, regexSearch), or upgrade.",
  PROJECT_CREDIT_LIMIT_REACHED: "the project's monthly credit cap for this kind of spending is reached: raise or remove it (credit limits), or wait for the 1st of the month.",
  NO_DEPLOYMENT: "the project has no successful deployment yet: deploy it first (build_deploy).",
  NO_ACTIVE_SANDBOX: "the project's sandbox is asleep: start the server (build_restart_server, 3 credits) rather than retrying.",
  SANDBOX_NOT_ACTIVE: "the project's sandbox is starting or archived: wait for agentServerStatus Active (build_get_project), or start it with build_restart_server.",
  NO_SANDBOX: "the project has never had a sandbox: run the agent once first (build_start_agent).",
  IMPORT_IN_PROGRESS: "an import is running on this project: wait for it with build_wait { until: \"import\" }.",
  INVALID_PROJECT_GROUP: "the group does not exist, is not yours, or is full: omit groupId or pick another group.",
  AGENT_RUNNING: "an agent run is active: wait for it with build_wait { until: \"agent\" } or stop it with build_stop_agent.",
  DEPLOYMENT_RUNNING: "a deployment is running: wait for it with build_wait { until: \"deployment\" }.",
  RECOVERY_RUNNING: "a version recovery is running: wait for it with build_wait { until: \"versionRecovery\" }.",
  SERVER_NOT_READY:
    "the project's server was asleep and is being started: START_SERVER (3 credits) is already spent. Do not retry blindly: wait until build_get_project shows agentServerStatus Active (2-4 min), then call again (that call charges the operation itself).",
  SANDBOX_NOT_REACHABLE:
    "the project's app did not answer. If Details say reason \"starting\", wait a minute and call again; if \"app_error\", the app is broken and waiting will not help: send the agent a prompt to fix it (build_start_agent).",
  PROJECT_NOT_FOUND: "no project has that id: call build_list_projects to find it.",
  LAUNCH_PROJECT_ERROR: "the project could not be created; read the reason above, fix it and launch again.",
};

export const builder: ServiceModule<z.infer<typeof settings>> = {
  name: "build",
  title: "project build service",
  toolsets: [
    { id: "build", description: "launch, follow, iterate and deploy projects; credits", default: true },
    { id: "build_admin", description: "delete projects, versions and recovery, dev logs, secrets, custom domains, database schema and queries", default: false },
  ],
  env: [
    { name: "BUILD_API_BASE_URL", description: "base URL of the project build service (/api/v1/vcaas/... is appended)", default: DEFAULT_BUILD_BASE_URL },
    { name: "BUILD_API_KEY", description: "API key of the project build service (starts with tlm_sk_)", secret: true },
    { name: "BUILD_API_KEY_HEADER", description: "header that carries the key: Authorization sends Bearer <key>, any other name the bare key", default: "api-key" },
    { name: "BUILD_POLL_INTERVAL_MS", description: "interval between status polls while waiting on a build, deployment, recovery or import (ms)", default: "12000 (1000 against a loopback sandbox)" },
    { name: "BUILD_CONFIRM_SPEND", description: "when to ask the user before spending credits: always, never, or a credit amount above which to ask", default: "always" },
  ],
  baseUrlVar: "BUILD_API_BASE_URL",
  apiKeyVar: "BUILD_API_KEY",
  settings: settings as never,
  instructions:
    "Build service: builds take 5-40 minutes; launch with build_launch_project and follow with build_wait (progress on every poll). Tools marked as spending credits are never retried automatically; check the balance with build_get_account first.",
  hints: BUILD_HINTS,
  create(s, runtime) {
    const keyHeader = s.BUILD_API_KEY_HEADER;
    const header = keyHeader.toLowerCase() === "authorization" ? { authorization: `Bearer ${s.BUILD_API_KEY}` } : { [keyHeader]: s.BUILD_API_KEY };
    const http = new UpstreamClient({
      service: "build",
      baseUrl: s.BUILD_API_BASE_URL,
      headers: header,
      envelope: "errors-data",
      timeoutMs: runtime.upstreamTimeoutMs,
      logger: runtime.logger,
      keyVariable: "BUILD_API_KEY",
      redact: runtime.redact,
    });
    const client = new BuildClient(http);
    const pollOptions = { intervalMs: s.BUILD_POLL_INTERVAL_MS, logger: runtime.logger };
    const deps: BuildDeps = {
      client,
      agentPoller: new SharedPoller<AgentStatus>((id, signal) => client.getAgentStatus(id, signal), pollOptions),
      projectPoller: new SharedPoller<ProjectDetails>((id, signal) => client.getProject(id, signal), pollOptions),
      guard: new CreditGuard(client, s.BUILD_CONFIRM_SPEND),
    };
    return {
      tools: [...projectTools(deps), ...agentTools(deps), ...operationTools(deps)],
      resources: builderResources(client),
      prompts: builderPrompts,
      watch: projectWatcher(deps.projectPoller),
      taskPollIntervalMs: s.BUILD_POLL_INTERVAL_MS,
      close: () => http.close(),
    };
  },
};
