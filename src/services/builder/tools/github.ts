import { z } from "zod";
import { trimLine } from "../../../core/base/text.js";
import type { ToolContext } from "../../../core/tools/tool.js";
import { defineTool } from "../deps.js";
import { waitInput } from "../../../core/upstream/wait.js";
import { waitSummary } from "../render.js";
import * as s from "../schemas.js";
import { followHint, resumeWait, startThenWait } from "../waits.js";

/** GitHub connection, pulls and the .env names (reference §12, all free): toolset build_github, off by default. */

/** A variable whose name says it holds a secret, or a URL with credentials in it. */
const SECRET_NAME = /KEY|SECRET|TOKEN|PASS|PWD|AUTH|CREDENTIAL|PRIVATE|DSN|SALT|SIGNATURE/i;
const URL_WITH_CREDENTIALS = /^[a-z][a-z0-9+.-]*:\/\/[^/@\s]+:[^/@\s]*@/i;

/**
 * Names of the variables in `.env` text; never a value. A name that contains one of the values
 * (a line that is not `NAME=value` may continue a multi-line value) is withheld. Only secret-like
 * values are remembered (for this project only: ctx.secret), so that they are scrubbed wherever
 * this project's outputs echo them later; the rest are often ordinary words (`development`) that
 * must not censor later answers.
 */
function envNames(env: unknown, ctx: ToolContext): string[] {
  const entries: Array<[string, string]> = [];
  const loose: string[] = [];
  if (env && typeof env === "object") {
    // Not the documented shape (text): a name-to-value map is read the same way.
    for (const [name, value] of Object.entries(env))
      entries.push([name, typeof value === "string" ? value : JSON.stringify(value)]);
  } else {
    for (const raw of (typeof env === "string" ? env : "").split(/\r?\n/)) {
      const line = raw.trim();
      if (!line || line.startsWith("#")) continue;
      const m = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*=(.*)$/.exec(line);
      if (!m) loose.push(line);
      else entries.push([m[1], m[2].trim().replace(/^(['"`])([\s\S]*)\1$/, "$2")]);
    }
  }
  for (const [name, value] of entries)
    if (SECRET_NAME.test(name) || URL_WITH_CREDENTIALS.test(value)) ctx.secret(value);
  const values = [...entries.map(([, v]) => v), ...loose].filter((v) => v.length >= 4);
  const names: string[] = [];
  for (const [name] of entries) {
    const shown = values.some((v) => name.includes(v)) ? "[withheld: the name contains a value]" : name;
    if (!names.includes(shown)) names.push(shown);
  }
  return names;
}

/**
 * §12: with no shared history, `totalum_to_github` (the default) overwrites both branches with the
 * project, and `github_to_totalum` replaces the project code. Whether the repo has such content is
 * known only after the call, so every connect is confirmed with both what may be lost and where.
 */
function overwriteOf(projectId: string, repo: string, direction: string | undefined): string {
  return direction === "github_to_totalum"
    ? `If ${repo} has content with no history shared with project ${projectId}, the project's code is ` +
        `replaced by the repository's (develop, created from main if missing).`
    : `If ${repo} has content with no history shared with project ${projectId}, its branches main and ` +
        `develop are overwritten with the project's code.`;
}

/** What the initial sync overwrote, from the syncAction the service reports (§12). */
function overwrittenBy(action: string | undefined, projectId: string, repo: string): string {
  switch (action) {
    case "push":
      return `branches main and develop of ${repo}, replaced by the code of ${projectId}`;
    case "pull":
      return `the code of ${projectId}, replaced by ${repo}'s develop`;
    case "push_new":
      return `nothing (${repo} was empty: main and develop were created)`;
    case "merge_and_push":
      return "nothing (shared history: merged)";
    case "already_synced":
      return "nothing (already in sync)";
    default:
      return `not known (the service reported syncAction ${action ?? "none"}): check ${repo}'s main and develop`;
  }
}

export function githubTools() {
  return [
    defineTool({
      name: "build_connect_github",
      upstream: "POST …/github/connect",
      title: "Connect GitHub",
      description:
        "Connect a GitHub repo (pushed to develop after each prompt, main on deploy). A repo with content " +
        "needs both branches; without shared history one side is overwritten (syncDirection). Asks first.",
      toolset: "build_github",
      kind: "write",
      destroys: ({ projectId, repositoryFullName, syncDirection }) =>
        overwriteOf(projectId, repositoryFullName, syncDirection),
      input: {
        projectId: s.projectId,
        token: z
          .string()
          .regex(/^github_pat_[A-Za-z0-9_]+$/, "token must be a fine-grained personal access token (github_pat_…)")
          .describe("Fine-grained PAT for this repo only: Contents, Pull requests, Administration read+write"),
        repositoryFullName: z
          .string()
          .refine((r) => /^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/.test(r), "repositoryFullName must be owner/repo"),
        syncDirection: z
          .enum(["totalum_to_github", "github_to_totalum"])
          .optional()
          .describe(
            "If repo and project share no history: totalum_to_github (default) overwrites the repo's main and " +
              "develop; github_to_totalum replaces the project's code",
          ),
      },
      output: z.looseObject({
        projectId: z.string(),
        connected: z.boolean().optional(),
        repositoryFullName: z.string().optional(),
        syncAction: z.string().optional(),
        repoHasContent: z.boolean().optional(),
        requiresRebuild: z.boolean().optional(),
        startedAt: z.string(),
        overwritten: z.string().describe("What the initial sync overwrote, from syncAction"),
      }),
      verify: ({ projectId }) => `call build_get_github_status for "${projectId}"`,
      run: async ({ projectId, token, repositoryFullName, syncDirection }, ctx) => {
        ctx.secret(token);
        const since = Date.now();
        const data = await ctx.deps.client.github.connect(
          projectId,
          { token, repositoryFullName, ...(syncDirection ? { syncDirection } : {}) },
          ctx.signal,
        );
        const repo = data.repositoryFullName ?? repositoryFullName;
        const overwritten = overwrittenBy(data.syncAction, projectId, repo);
        return { ...data, projectId, startedAt: new Date(since).toISOString(), overwritten };
      },
      render: (r) => {
        const connected = r.connected === false ? "Not connected" : "Connected";
        const sync = r.syncAction ? ` (${r.syncAction})` : "";
        const rebuilding = r.requiresRebuild
          ? " The project code changed and is rebuilding: follow it with " +
            `${followHint(r.projectId, "githubPull", r.startedAt)}.`
          : "";
        const repo = r.repositoryFullName ?? "the repository";
        return `${connected} ${repo} to ${r.projectId}${sync}. Overwritten: ${r.overwritten}.${rebuilding}`;
      },
    }),

    defineTool({
      name: "build_disconnect_github",
      upstream: "DELETE …/github/connect",
      title: "Disconnect GitHub",
      description: "Delete a project's stored GitHub token and repo link; the code and the repo stay as they are.",
      toolset: "build_github",
      kind: "destructive",
      destroys: ({ projectId }) => `The GitHub token and repo link stored for project ${projectId} are deleted.`,
      input: { projectId: s.projectId },
      output: z.looseObject({ projectId: z.string(), success: z.boolean().optional(), message: z.string().optional() }),
      run: async ({ projectId }, ctx) => ({
        ...(await ctx.deps.client.github.disconnect(projectId, ctx.signal)),
        projectId,
      }),
      render: (r) => `Disconnected GitHub from ${r.projectId}.${r.message ? ` "${trimLine(r.message)}"` : ""}`,
    }),

    defineTool({
      name: "build_get_github_status",
      upstream: "GET …/github/status",
      title: "GitHub status",
      description: "Whether a project is connected to GitHub, which repo, and whether the token is still valid.",
      toolset: "build_github",
      kind: "read",
      input: { projectId: s.projectId },
      output: z.looseObject({
        projectId: z.string(),
        connected: z.boolean().optional(),
        tokenValid: z.boolean().optional(),
        tokenExpired: z.boolean().optional(),
        repositoryFullName: z.string().nullable().optional(),
        developBranch: z.string().optional(),
        productionBranch: z.string().optional(),
      }),
      run: async ({ projectId }, ctx) => ({
        ...(await ctx.deps.client.github.getStatus(projectId, ctx.signal)),
        projectId,
      }),
      render: (r) => {
        if (r.tokenExpired) {
          const repo = r.repositoryFullName ? ` (repo ${r.repositoryFullName})` : "";
          return (
            `The GitHub token of ${r.projectId} expired${repo}; the credentials were deleted. ` +
            "Reconnect with build_connect_github and a new token."
          );
        }
        if (!r.connected) return `${r.projectId} is not connected to GitHub.`;
        const token = r.tokenValid === false ? "invalid" : "valid";
        const branches = `${r.developBranch ?? "develop"} = development, ${r.productionBranch ?? "main"} = production`;
        const repo = r.repositoryFullName ?? "a repository";
        return `${r.projectId} is connected to ${repo} (token ${token}; ${branches}).`;
      },
    }),

    defineTool({
      name: "build_pull_github",
      upstream: "POST …/github/pull",
      title: "Pull from GitHub",
      description: "Pull GitHub's develop branch into the project; changed files are rebuilt in the background.",
      toolset: "build_github",
      kind: "write",
      longRunning: { runsAsTask: (input) => input.wait === true, resume: resumeWait },
      input: { projectId: s.projectId, ...waitInput },
      output: z.looseObject({
        projectId: z.string(),
        status: z.string().optional().describe("pulling or no_changes"),
        message: z.string().optional(),
        filesUpdated: z.number().optional(),
        startedAt: z.string(),
        wait: s.waitResult.optional(),
      }),
      verify: ({ projectId }) => `call build_get_github_pull_status for "${projectId}"`,
      run: ({ projectId, wait, timeoutSeconds }, ctx) =>
        startThenWait(
          projectId,
          "githubPull",
          ctx,
          { wait, timeoutSeconds, worthFollowing: (r) => r.status !== "no_changes" },
          async () => ({
            ...(await ctx.deps.client.github.pull(projectId, ctx.signal)),
            projectId,
          }),
        ),
      render: (r) => {
        if (r.wait) return waitSummary(r.wait);
        const said = r.message ? ` "${trimLine(r.message)}"` : "";
        if (r.status === "no_changes") return `No changes on develop to pull into ${r.projectId}.${said}`;
        const updated = r.filesUpdated !== undefined ? `, ${r.filesUpdated} file(s) updated` : "";
        const follow = followHint(r.projectId, "githubPull", r.startedAt);
        return `Pull into ${r.projectId}: ${r.status ?? "pulling"}${updated}.${said} Follow it with ${follow}.`;
      },
    }),

    defineTool({
      name: "build_get_github_pull_status",
      upstream: "GET …/github/pull-status",
      title: "GitHub pull status",
      description:
        "Status of a project's latest GitHub pull and its rebuild: pulling, success, error, or null when none.",
      toolset: "build_github",
      kind: "read",
      input: { projectId: s.projectId },
      output: z.looseObject({
        projectId: z.string(),
        status: z.string().nullable(),
        createdAt: z.string().nullable().optional(),
      }),
      run: async ({ projectId }, ctx) => {
        const data = await ctx.deps.client.github.getPullStatus(projectId, ctx.signal);
        return { ...data, projectId, status: data.status ?? null };
      },
      render: (r) =>
        r.status === null
          ? `No GitHub pull has run on ${r.projectId}.`
          : `GitHub pull of ${r.projectId}: ${r.status}${r.createdAt ? ` (started ${r.createdAt})` : ""}.`,
    }),

    defineTool({
      name: "build_get_env_names",
      upstream: "GET …/github/env",
      title: "Environment variable names",
      description:
        "Names of the variables in a project's development and production .env files. Values are never returned.",
      toolset: "build_github",
      kind: "read",
      input: { projectId: s.projectId },
      output: z.object({ projectId: z.string(), development: z.array(z.string()), production: z.array(z.string()) }),
      run: async ({ projectId }, ctx) => {
        const env = await ctx.deps.client.github.getEnv(projectId, ctx.signal);
        return { projectId, development: envNames(env.envDev, ctx), production: envNames(env.envProd, ctx) };
      },
      render: (r) => {
        const list = (names: string[]) => (names.length ? names.join(", ") : "(none)");
        return (
          `Environment of ${r.projectId} (names only; values are not shown):\n` +
          `- development: ${list(r.development)}\n- production: ${list(r.production)}`
        );
      },
    }),
  ];
}
