import type { BuildContext } from "./context.js";
import { commitFiles } from "./files.js";
import { fail, type BuildRoutes } from "./routes.js";
import {
  HOUR,
  SANDBOX_APPS_DOMAIN,
  SERVER_BOOT,
  iso,
  sha1,
  type GithubState,
  type Json,
  type SimProject,
} from "./state.js";
import { bodyOf } from "./validation.js";

/**
 * GitHub (reference §12, all free). Tokens are checked by shape (`github_pat_` and at least 20
 * more characters of [A-Za-z0-9_]). What the repository holds follows markers in its name:
 *   default: empty (push_new)            `unrelated`: content, no shared history (push / pull)
 *   `shared`: shared history (merge_and_push, requiresRebuild)   `synced`: already_synced
 *   `missing`: not found (GITHUB_VALIDATION_FAILED)   `nobranches`: no develop/main (GITHUB_SYNC_FAILED)
 * A token containing `noperm` lacks permissions (GITHUB_VALIDATION_FAILED); one containing
 * `expiring` expires an hour (simulated) after connecting. Commits pushed to develop by others
 * come from the test helper BuildSimulator.pushToGithub; content with [pull-error] makes the pull
 * answer GITHUB_PULL_ERROR, content with [rebuild-fail] makes its background rebuild end in error.
 */

const TOKEN = /^github_pat_[A-Za-z0-9_]{20,}$/;
const REPO = /^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/;
const SYNC_DIRECTIONS = ["totalum_to_github", "github_to_totalum"];
const PULL_REBUILD = 90 * 1000;

export function registerGithubRoutes(ctx: BuildContext, routes: BuildRoutes): void {
  routes.onProject("POST", "/github/connect", (p, req) => connect(ctx, p, bodyOf(req)));
  routes.onProject("DELETE", "/github/connect", (p) => disconnect(p));
  routes.onProject("GET", "/github/status", (p) => status(p));
  routes.onProject("POST", "/github/pull", (p) => pull(ctx, p));
  routes.onProject("GET", "/github/pull-status", (p) => pullStatus(p));
  routes.onProject("GET", "/github/env", (p) => env(p));
  ctx.onAdvance((p, now) => advanceGithub(ctx, p, now));
}

function githubOf(p: SimProject): GithubState {
  return (p.github ??= { link: null, expired: false, remoteChanges: new Map(), pull: null });
}

/** Test helper: someone pushed these files to develop; the next pull brings them. */
export function pushToGithub(p: SimProject, files: Record<string, string>): void {
  const gh = githubOf(p);
  if (!gh.link) throw new Error(`${p.projectId} is not connected to GitHub`);
  for (const [path, content] of Object.entries(files)) gh.remoteChanges.set(path, Buffer.from(content));
}

/** Not charged (the charge is not stated): the server is started and the caller retries once it is Active. */
function requireServer(ctx: BuildContext, p: SimProject): void {
  if (p.server.status === "Active") return;
  if (!["Creating", "Starting", "Unarchiving"].includes(p.server.status)) {
    const at = ctx.simNow();
    p.server = { status: "Starting", readyAt: at + SERVER_BOOT };
    ctx.log(p, at, "[server] Starting development server");
  }
  fail(409, "SERVER_NOT_READY", "The dev server is not running; it is being started. Retry in about a minute");
}

function connect(ctx: BuildContext, p: SimProject, body: Json) {
  const { token, repositoryFullName, syncDirection } = body;
  if (
    typeof token !== "string" ||
    token === "" ||
    typeof repositoryFullName !== "string" ||
    repositoryFullName === ""
  ) {
    fail(400, "MISSING_GITHUB_FIELDS", "token and repositoryFullName are required");
  }
  const direction = syncDirection ?? "totalum_to_github";
  if (typeof direction !== "string" || !SYNC_DIRECTIONS.includes(direction))
    fail(400, "INVALID_SYNC_DIRECTION", "syncDirection must be totalum_to_github or github_to_totalum");
  if (p.run?.state === "running")
    fail(409, "AGENT_RUNNING", "The agent is running on this project; wait until it is done");
  requireServer(ctx, p);
  if (!TOKEN.test(token) || token.includes("noperm"))
    fail(
      400,
      "GITHUB_VALIDATION_FAILED",
      "The token is invalid or lacks the Contents, Pull requests and Administration permissions",
    );
  const repo = repositoryFullName.split("/")[1] ?? "";
  if (!REPO.test(repositoryFullName) || repo.includes("missing"))
    fail(
      400,
      "GITHUB_VALIDATION_FAILED",
      `Repository ${repositoryFullName} was not found or the token cannot access it`,
    );
  if (repo.includes("nobranches"))
    fail(400, "GITHUB_SYNC_FAILED", "The repository has content but no develop and main branches");

  const at = ctx.simNow();
  const gh = githubOf(p);
  gh.link = {
    repositoryFullName,
    token,
    connectedAt: at,
    expiresAt: token.includes("expiring") ? at + HOUR : undefined,
  };
  gh.expired = false;
  gh.lastRepositoryFullName = repositoryFullName;
  let syncAction = "push_new";
  let repoHasContent = true;
  let requiresRebuild = false;
  if (repo.includes("synced")) syncAction = "already_synced";
  else if (repo.includes("shared")) [syncAction, requiresRebuild] = ["merge_and_push", true];
  else if (repo.includes("unrelated"))
    [syncAction, requiresRebuild] = direction === "github_to_totalum" ? ["pull", true] : ["push", false];
  else repoHasContent = false;
  ctx.log(p, at, `[github] Connected ${repositoryFullName} (${syncAction})`);
  if (requiresRebuild) {
    const readme = Buffer.from(`# ${repo}\n\nCode from GitHub (${repositoryFullName}, develop).\n`);
    commitFiles(ctx, p, new Map([["README.md", readme]]), `Sync from GitHub (${syncAction})`, at);
    startPull(gh, at, false);
  }
  return { connected: true, repositoryFullName, syncAction, repoHasContent, requiresRebuild };
}

function startPull(gh: GithubState, at: number, fails: boolean): void {
  gh.pull = { status: "pulling", createdAt: at, doneAt: at + PULL_REBUILD, fails };
}

function disconnect(p: SimProject) {
  const gh = githubOf(p);
  if (!gh.link) fail(400, "GITHUB_NOT_CONNECTED", "No GitHub repository is connected to this project");
  gh.link = null;
  gh.expired = false;
  gh.remoteChanges.clear();
  return { success: true, message: "GitHub disconnected; the project code is unchanged" };
}

function status(p: SimProject) {
  const gh = githubOf(p);
  if (!gh.link) {
    return {
      connected: false,
      tokenValid: false,
      tokenExpired: gh.expired,
      repositoryFullName: gh.expired ? (gh.lastRepositoryFullName ?? null) : null,
    };
  }
  return {
    connected: true,
    tokenValid: true,
    tokenExpired: false,
    repositoryFullName: gh.link.repositoryFullName,
    developBranch: "develop",
    productionBranch: "main",
  };
}

function pull(ctx: BuildContext, p: SimProject) {
  const gh = githubOf(p);
  if (!gh.link)
    fail(400, "GITHUB_NOT_CONNECTED", "No GitHub repository is connected to this project; connect one first");
  if (p.run?.state === "running")
    fail(409, "AGENT_RUNNING", "The agent is running on this project; wait until it is done");
  requireServer(ctx, p);
  const changes = new Map(gh.remoteChanges);
  if (changes.size === 0) return { status: "no_changes", message: "develop has no new commits", filesUpdated: 0 };
  if ([...changes.values()].some((b) => b.includes("[pull-error]")))
    fail(400, "GITHUB_PULL_ERROR", "git pull failed: merge conflict on develop");
  const at = ctx.simNow();
  commitFiles(ctx, p, changes, `Pull ${changes.size} file(s) from GitHub (develop)`, at);
  gh.remoteChanges.clear();
  startPull(
    gh,
    at,
    [...changes.values()].some((b) => b.includes("[rebuild-fail]")),
  );
  return { status: "pulling", message: "Pulled develop; rebuilding in the background", filesUpdated: changes.size };
}

function pullStatus(p: SimProject) {
  const pull = githubOf(p).pull;
  return { projectId: p.projectId, status: pull?.status ?? null, createdAt: pull ? iso(pull.createdAt) : null };
}

/** `.env` text with values in clear: the project's secrets plus what the service sets itself. */
function env(p: SimProject) {
  const key = `tlm_app_${sha1(`${p.projectId}:app-key`).slice(0, 32)}`;
  const text = (environment: "development" | "production", url: string) =>
    `${[
      `# ${environment} environment of ${p.projectId}`,
      `NODE_ENV=${environment}`,
      `NEXT_PUBLIC_APP_URL=${url}`,
      `TOTALUM_API_KEY=${key}`,
      ...p.secrets
        .filter((s) => s.environment === environment || s.environment === "both")
        .map((s) => `${s.secretName}="${s.secretValue}"`),
    ].join("\n")}\n`;
  return {
    envDev: text("development", `https://${p.projectId}.dev.${SANDBOX_APPS_DOMAIN}`),
    envProd: text("production", `https://${p.projectId}.${SANDBOX_APPS_DOMAIN}`),
  };
}

function advanceGithub(ctx: BuildContext, p: SimProject, now: number): void {
  const gh = p.github;
  if (!gh) return;
  const link = gh.link;
  if (link?.expiresAt !== undefined && link.expiresAt <= now) {
    // Detected on expiry: the stored credentials are deleted and the status says so until a reconnect.
    gh.link = null;
    gh.expired = true;
    ctx.log(p, link.expiresAt, `[github] Token for ${link.repositoryFullName} expired; credentials deleted`);
  }
  const pull = gh.pull;
  if (pull?.status === "pulling" && pull.doneAt <= now) {
    pull.status = pull.fails ? "error" : "success";
    ctx.log(
      p,
      pull.doneAt,
      pull.fails ? "[rebuild] ERROR Build after the GitHub pull failed" : "[rebuild] Rebuilt after the GitHub pull",
    );
  }
}
