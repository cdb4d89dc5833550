import { z } from "zod";
import type { HintTable } from "../../core/tools/errors.js";
import type { ServiceDeclaration } from "../../core/service/service.js";
import { httpUrl, isLoopbackUrl, positiveInt, secret } from "../../core/service/settings.js";
import { ENV } from "../../core/base/settings.js";
import type { ConfirmPolicy } from "./credits.js";

export type { BuildDeps } from "./deps.js";

const DEFAULT_BUILD_BASE_URL = "https://api-accounts.totalum.app";
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
    BUILD_WEBHOOKS: z.enum(["on", "off"], { error: "must be on or off" }).default("off"),
    BUILD_WEBHOOK_POLL_MS: positiveInt.default(60_000),
  })
  .transform((s, ctx) => {
    const loopback = isLoopbackUrl(s.BUILD_API_BASE_URL);
    const poll = s.BUILD_POLL_INTERVAL_MS ?? (loopback ? 1000 : 12_000);
    if (!loopback && poll < MIN_POLL_MS) {
      ctx.addIssue({
        code: "custom",
        path: ["BUILD_POLL_INTERVAL_MS"],
        message: `must be at least ${MIN_POLL_MS} ms for a real service (the service asks for a poll every 10-15 s)`,
      });
      return z.NEVER;
    }
    return { ...s, BUILD_POLL_INTERVAL_MS: poll, BUILD_WEBHOOK_POLL_MS: Math.max(poll, s.BUILD_WEBHOOK_POLL_MS) };
  });

/**
 * §1.6: deploy and recover on a sleeping server charge START_SERVER (3) before this answer; for
 * github/connect and github/pull the charge is not stated, nor for import ([RC] only handles the
 * answer there; the simulator's charge is assumed, as for deploy).
 */
function serverNotReadyHint({ path }: { path: string }): string {
  const unstated = /\/(github\/connect|github\/pull|import)$/.test(path);
  const charge = unstated
    ? "whether this answer charged START_SERVER (3 credits) is not stated for this endpoint " +
      "(build_get_account shows the balance)"
    : "START_SERVER (3 credits) is already spent";
  return (
    `the project's server was asleep and is being started: ${charge}. Do not retry blindly: follow the ` +
    'start with build_wait { until: "server" } (or build_get_project until agentServerStatus Active, ' +
    "2-4 min), then call again once (that call charges the operation itself, if it has a price)."
  );
}

const BUILD_HINTS: HintTable = {
  INSUFFICIENT_CREDITS:
    "the balance is too low: check build_get_account and build_get_credit_costs, and top up before retrying.",
  MAX_PROJECTS_REACHED:
    "the plan's project limit is in use: delete a project (build_delete_project) or upgrade the plan.",
  PROJECT_ALREADY_EXISTS:
    "the id is taken (launch also tried its suffixed variants): choose a different projectId, " +
    "or look for yours with build_list_projects if an earlier attempt may have landed.",
  RATE_LIMIT_EXCEEDED:
    "projects are being created faster than the plan allows (Free: 1 per 5 minutes and 12 per hour; paid plans: " +
    "per minute and per hour): wait up to 5 minutes on the Free plan (a minute on paid ones), then retry once.",
  RATE_LIMITED: "too many Figma token checks (10 per minute per account): wait a minute, then retry.",
  FIGMA_RATE_LIMITED: "Figma is throttling the token check: retry shortly.",
  FIGMA_UNREACHABLE: "Figma could not be reached to check the token: retry shortly, or launch without figma.",
  FIGMA_TOKEN_INVALID: "Figma rejected the token (wrong, expired or revoked): create a new personal access token.",
  FIGMA_TOKEN_FORBIDDEN: "the token lacks scopes: create one with current_user:read and file_content:read.",
  FIGMA_TOKEN_MALFORMED:
    "the value is not a Figma personal access token (they start with figd_): copy the whole token.",
  MISSING_FIGMA_TOKEN: "figma.token is empty: pass the Figma personal access token, or leave figma out.",
  PLAN_LIMIT_REACHED:
    "the plan's production-log request limit is used up: wait for it to reset, narrow the window (from/to, " +
    "regexSearch), or upgrade.",
  PROJECT_CREDIT_LIMIT_REACHED:
    "the project's monthly credit cap for this kind of spending is reached: " +
    "raise or remove it (build_set_credit_limits), or wait for the 1st of the month.",
  NO_DEPLOYMENT: "the project has no successful deployment yet: deploy it first (build_deploy).",
  NO_ACTIVE_SANDBOX:
    "the project's sandbox is asleep: start the server (build_restart_server, 3 credits) rather than retrying.",
  SANDBOX_NOT_ACTIVE:
    "the project's sandbox is starting or archived: wait for agentServerStatus Active (build_get_project), " +
    "or start it with build_restart_server.",
  NO_SANDBOX: "the project has never had a sandbox: run the agent once first (build_start_agent).",
  IMPORT_IN_PROGRESS: 'an import is running on this project: wait for it with build_wait { until: "import" }.',
  INVALID_PROJECT_GROUP: "the group does not exist, is not yours, or is full: omit groupId or pick another group.",
  NO_PROCESS_RUNNING:
    "no agent run is in flight, so there is nothing to stop: build_get_agent_status shows how the last one ended.",
  AUTO_EXECUTION_ALREADY_ACTIVE:
    "an earlier multi-prompt batch is still executing, paused or awaiting approval: " +
    'wait for it with build_wait { until: "agent" }. No cancel endpoint is documented (build_stop_agent stops the ' +
    "running prompt; its effect on the batch is not stated).",
  AGENT_RUNNING:
    'an agent run is active: wait for it with build_wait { until: "agent" } or stop it with build_stop_agent.',
  DEPLOYMENT_RUNNING: 'a deployment is running: wait for it with build_wait { until: "deployment" }.',
  RECOVERY_RUNNING: 'a version recovery is running: wait for it with build_wait { until: "versionRecovery" }.',
  SERVER_NOT_READY: serverNotReadyHint,
  SANDBOX_NOT_REACHABLE:
    'the project\'s app did not answer. If Details say reason "starting", wait a minute and call again; ' +
    'if "app_error", the app is broken and waiting will not help: send the agent a prompt to fix it ' +
    "(build_start_agent).",
  PROJECT_NOT_FOUND: "no project has that id: call build_list_projects to find it.",
  INVALID_PATH:
    'the path must be relative to the project root, without "..", outside node_modules, .next, .git and dist: ' +
    "find it with build_list_files.",
  FILE_NOT_FOUND: "no file at that path: find it with build_list_files (paths are relative to the project root).",
  FILE_TOO_LARGE:
    "the file is over the limit (read 1 MB, write 512 KB, upload 12 MB): for reading, " +
    "download the whole source with build_get_source_code.",
  PROJECT_TOO_LARGE:
    "the project is too large to list: download the whole source with build_get_source_code (1 credit).",
  FREE_PLAN_NO_SOURCE_EDITING:
    "writing source files needs a paid plan (reading works on every plan): upgrade, " +
    "or ask the agent for the change (build_start_agent).",
  REBUILD_RUNNING: 'a rebuild is running: wait for it with build_wait { until: "rebuild" }.',
  REBUILD_LIMIT_REACHED: "the plan's rebuild limit is used up: wait for it to reset, or upgrade the plan.",
  MISSING_FILE: "the upload carried no file: pass name and base64 content.",
  UPLOAD_FAILED:
    "the service's storage failed to keep the file: check build_get_account (a charge means it may have landed), " +
    "then retry once.",
  MISSING_GITHUB_FIELDS: "token and repositoryFullName are both required.",
  INVALID_SYNC_DIRECTION: "syncDirection must be totalum_to_github or github_to_totalum.",
  GITHUB_VALIDATION_FAILED:
    "GitHub refused the token or repository: use a fine-grained token (github_pat_…) " +
    "for only this repo with Contents, Pull requests and Administration read and write, and check owner/repo.",
  GITHUB_NOT_CONNECTED: "no GitHub repository is connected to this project: connect one with build_connect_github.",
  GITHUB_SYNC_FAILED:
    "the first sync failed: a repository with content needs both develop and main branches; fix the repo, " +
    "then connect again.",
  GITHUB_SECRET_STORE_ERROR: "the service could not store the GitHub credentials: connect again shortly.",
  GITHUB_PULL_ERROR: "the pull failed: check the develop branch on GitHub, then pull again.",
  ENV_DOWNLOAD_ERROR: "the service could not read the environment variables: try again shortly.",
  WEBHOOK_EVENT_ALREADY_EXISTS:
    "the account already has a webhook for this event (maybe with another URL): see build_list_webhooks; " +
    "to change it, delete it (build_delete_webhook), then add it again.",
  WEBHOOK_NOT_FOUND:
    "no webhook has that id: it may already be deleted (then nothing is left to do); " +
    "build_list_webhooks lists the current ones.",
  PROD_LOGS_WORKER_ERROR:
    "the log pipeline could not answer this query: narrow from/to or simplify regexSearch, then try once more.",
  LAUNCH_PROJECT_ERROR: "the project could not be created; read the reason above, fix it and launch again.",
  TABLE_NOT_FOUND: "no table has that name: tableName is a table's type, from build_get_database_schema.",
  PROJECT_EXPORT_LIMIT_REACHED:
    "exports are limited to 1 per minute and 5 per hour per account: wait, then export once (never in a loop).",
  PROJECT_IMPORT_LIMIT_REACHED:
    "imports are limited to 1 per minute and 5 per hour per account: wait, then import once; " +
    "the transferId stays valid for its hour.",
  PROJECT_NOT_IMPORTABLE:
    "the target has more than 5 tables or more than 1 version: create a fresh empty project (build_create_project) " +
    "and import into it.",
  PROJECT_GROUP_NOT_FOUND: "no group has that id (or it is another account's): call build_list_groups to find it.",
  CREATE_PROJECT_GROUP_ERROR: "the name is empty or over 80 characters, or the account already has 3,000 groups.",
  NOTHING_TO_UPDATE: "pass at least one of label, description or groupId.",
};

export type BuildSettings = z.infer<typeof settings>;

/** The declaration; the tools and the client are in implementation.ts, loaded when first needed. */
export const builder: ServiceDeclaration<BuildSettings> = {
  name: "build",
  title: "project build service",
  displayName: "Totalum App Builder",
  keyHint:
    "Find it in your Totalum account, in the API keys section of its settings. It starts with tlm_sk_ " +
    "followed by letters and digits.",
  toolsets: [
    { id: "build", description: "launch, follow, iterate and deploy projects; credits", default: true, tasks: "read" },
    {
      id: "build_admin",
      description:
        "update and delete projects, versions, diffs and recovery, dev and production logs, secrets, " +
        "custom domains, database schema and queries",
      default: false,
      tasks: "write",
    },
    {
      id: "build_files",
      description: "source code archive, uploads, reading and writing source files, rebuilds",
      default: false,
      tasks: "write",
    },
    { id: "build_figma", description: "connect, check and disconnect a project's Figma account", default: false },
    {
      id: "build_webhooks",
      description: "account webhooks: agent.prompt.finished, project.credit_limit.reached",
      default: false,
    },
    { id: "build_billing", description: "per-project monthly credit caps, daily spending analytics", default: false },
    {
      id: "build_github",
      description: "connect a GitHub repository, pull from it, environment variable names",
      default: false,
      tasks: "write",
    },
    {
      id: "build_database",
      description: "create, update and delete database records; many-to-many links",
      default: false,
    },
    {
      id: "build_transfer",
      description: "export a project and import it into a fresh one (clone, move)",
      default: false,
      tasks: "write",
    },
    { id: "build_groups", description: "project groups: create, list, rename, delete", default: false },
  ],
  env: [
    {
      name: "BUILD_API_BASE_URL",
      description: "base URL of the project build service (/api/v1/vcaas/... is appended)",
      default: DEFAULT_BUILD_BASE_URL,
    },
    { name: "BUILD_API_KEY", description: "API key of the project build service (starts with tlm_sk_)", secret: true },
    {
      name: "BUILD_API_KEY_HEADER",
      description: "header that carries the key: Authorization sends Bearer <key>, any other name the bare key",
      default: "api-key",
    },
    {
      name: "BUILD_POLL_INTERVAL_MS",
      description:
        "interval between status polls while waiting on a build, deployment, recovery or import; " +
        "at least 2000 for a real service (ms)",
      default: "12000 (1000 against a loopback sandbox)",
    },
    {
      name: "BUILD_CONFIRM_SPEND",
      description: "when to ask the user before spending credits: always, never, or a credit amount above which to ask",
      default: "always",
    },
    {
      name: "BUILD_WEBHOOKS",
      description:
        "on: subscribe each account's agent.prompt.finished webhook on its first wait, so waits end within a " +
        `second of the run's end (polling stays as the fallback); needs ${ENV.publicUrl} (https) and ` +
        `${ENV.stateKey} (docs/deployment.md: what it changes on the account, how to undo it)`,
      default: "off",
    },
    {
      name: "BUILD_WEBHOOK_POLL_MS",
      description: "with BUILD_WEBHOOKS=on: the poll interval of agent-run waits while deliveries arrive (ms)",
      default: "60000",
    },
  ],
  baseUrlVar: "BUILD_API_BASE_URL",
  apiKeyVar: "BUILD_API_KEY",
  bearerKeyPrefix: "tlm_sk_",
  keyCheck: { tool: "build_get_account" },
  settings: settings as never,
  instructions:
    "Build service: builds take 5-40 minutes; launch with build_launch_project and follow with build_wait " +
    "(progress on every poll). Tools marked as spending credits are never retried automatically; " +
    "check the balance with build_get_account first.",
  hints: BUILD_HINTS,
  lostTask: { follow: "build_wait" },
  completions: true,
  load: () => import("./implementation.js").then((m) => m.builderImplementation),
  samples: () => import("./samples.js").then((m) => m.builderSamples),
  views: [
    {
      name: "build-console",
      title: "Build console",
      description:
        "How a build, deployment or recovery is going: phase, time, credits, the agent's latest messages, " +
        "secrets needed, the preview and links",
      // The preview screenshot is an <img> of the project's https previewImageUrl: the host admits
      // only declared origins. The production one is not documented, so there the host blocks the
      // image and the view offers the link instead; the sandbox's is known (SANDBOX_APPS_DOMAIN).
      imgSrc: "https:",
      sandboxResourceDomains: ["https://previews.sandbox-apps.example"],
    },
  ],
  webhooks: {
    variable: "BUILD_WEBHOOKS",
    enabled: (s) => (s as BuildSettings).BUILD_WEBHOOKS === "on",
  },
};
