import { z } from "zod";
import { viewUri } from "../../../core/service/views.js";
import type { ToolContext } from "../../../core/tools/tool.js";
import { defineTool, type BuildDeps } from "../deps.js";
import { waitInput } from "../../../core/upstream/wait.js";
import * as s from "../schemas.js";
import { projectLine, projectSummary, waitSummary } from "../render.js";
import { trimLine } from "../../../core/base/text.js";
import { followHint, followStarted, resumeWait } from "../waits.js";

/** Agent runs have no fixed price; the public docs give this range. */
/**
 * Agent runs have no fixed price: typically 10-40 credits, and a run that uses its whole time
 * budget is billed a flat 50, or 60 on a healthy balance (reference §1.7): 60 is the most one costs.
 */
export const AGENT_RUN_COST = {
  description:
    "the agent run (typically 10-40 credits: 10 at the start, the rest at the end; at most 60 if it " +
    "runs to its time limit)",
  upTo: 60,
};

/**
 * §3: each launch warning names the endpoint that retries its step; these are the tools for them,
 * and what a retry after the run started cannot undo (secrets are written into the .env when a
 * run starts, Figma must be connected before it, caps set later do not cover it).
 */
const STEP_RETRY: Record<string, { tool: string; late?: string }> = {
  agent: { tool: "build_start_agent (the same prompt)" },
  secrets: {
    tool: "build_set_secret",
    late: "a secret added now is not in the .env of the run already started; it reaches the next run only",
  },
  creditLimits: {
    tool: "build_set_credit_limits",
    late: "caps set now do not cover the run already started, which can spend up to 60 credits uncapped",
  },
  figma: {
    tool: "build_connect_figma",
    late: "Figma must be connected before a run: the run already started goes on without it",
  },
  files: {
    tool: "build_upload_file, then build_start_agent's inputFiles",
    late: "the run already started has no attachments; files reach only a run started with them",
  },
};

type LaunchWarning = NonNullable<s.LaunchResult["warnings"]>[number];

/** A launch warning in words, read defensively: [RC] shapes lack errorCode and errorMessage. */
function warningLine(w: LaunchWarning, agentStarted: boolean): string {
  const text = w.errorMessage ?? w.message;
  const head =
    `Step ${w.step ?? "(not named)"} did not happen${w.errorCode ? ` (${w.errorCode})` : ""}` +
    `${text ? `: "${trimLine(text, 300)}"` : ""}${w.endpoint ? ` (the service names ${w.endpoint})` : ""}.`;
  const retry = w.step ? STEP_RETRY[w.step] : undefined;
  if (!retry) return head;
  if (w.step !== "agent" && !agentStarted)
    return `${head} Fix it with ${retry.tool} before build_start_agent, so the run gets it.`;
  const late = agentStarted && retry.late ? ` Note: ${retry.late}.` : "";
  return `${head} Retry only this step with ${retry.tool}.${late}`;
}

const listed = (projectId: string) => `call build_list_projects with search "${projectId}"`;
/** A launch whose id is taken creates `<id>-` plus 2-6 letters or digits (reference §3): the check covers those. */
const launched = (projectId: string) =>
  `${listed(projectId)} and look for "${projectId}" or "${projectId}-" followed by 2-6 letters or ` +
  `digits, created since that call: such a project is that launch, and launching again would ` +
  `create and charge a second one`;

/**
 * The launch's (or create's) check, done: the projects named like it, created since the first call
 * (a taken id gets a suffix). What it found, or undefined.
 */
async function findLaunched(
  projectId: string,
  since: string,
  ctx: ToolContext<BuildDeps>,
): Promise<string | undefined> {
  const projects = (await ctx.deps.client.listProjects({ search: projectId, limit: 50 }, ctx.signal)) as Array<{
    projectId?: string;
    createdAt?: string;
  }>;
  const named = new RegExp(`^${projectId.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}(-[a-z0-9]{2,6})?$`, "i");
  // A minute of slack for clocks: the upstream stamps creation, this server stamped the call.
  const after = Date.parse(since) - 60_000;
  const found = (Array.isArray(projects) ? projects : []).filter(
    (p) => p.projectId && named.test(p.projectId) && (!p.createdAt || Date.parse(p.createdAt) >= after),
  );
  if (!found.length) return undefined;
  const ids = found.map((p) => `${p.projectId}${p.createdAt ? ` (created ${p.createdAt})` : ""}`).join(", ");
  return (
    `found project ${ids}: that call took effect (and was charged). Use it (build_get_project, build_wait) ` +
    "instead of spending again."
  );
}

export function projectTools() {
  return [
    defineTool({
      name: "build_get_account",
      upstream: "GET /account",
      title: "Credit balance",
      description:
        "Credit balance of the build-service account (total, monthly plan, purchased). Check before spending credits.",
      toolset: "build",
      kind: "read",
      input: {},
      output: s.account,
      run: (_input, ctx) => ctx.deps.client.getAccount(ctx.signal),
      render: (a) =>
        `Balance: ${a.credits} credits (${a.recurrentCredits ?? 0} monthly plan + ${a.oneTimeCredits ?? 0} purchased).`,
    }),

    defineTool({
      name: "build_get_credit_costs",
      upstream: "GET /credit-costs",
      title: "Credit costs",
      description:
        "Price in credits of each paid build-service operation (CREATE_PROJECT, CREATE_DEPLOYMENT, " +
        "...). Agent runs are metered: typically 10-40 credits; one that reaches its time budget " +
        "costs a flat 50 (60 on a healthy balance).",
      toolset: "build",
      kind: "read",
      input: {},
      output: s.creditCosts,
      run: (_input, ctx) => ctx.deps.client.getCreditCosts(ctx.signal),
      render: (c) =>
        `Credit costs:\n${Object.entries(c.creditCosts)
          .map(([k, v]) => `- ${k}: ${v}`)
          .join("\n")}`,
    }),

    defineTool({
      name: "build_list_projects",
      upstream: "GET /projects",
      title: "List projects",
      description:
        "List projects, newest first by default; filter by text, group or creation dates, page with limit/skip.",
      toolset: "build",
      kind: "read",
      input: {
        limit: z
          .number()
          .int()
          .min(1, "limit must be 1-100")
          .max(100, "limit must be 1-100")
          .optional()
          .describe("Page size 1-100 (default 100)"),
        skip: z.number().int().min(0).optional(),
        search: z.string().optional().describe("Matches id and description"),
        sortField: z.enum(["date", "lastModified"]).optional(),
        sortDirection: z.enum(["asc", "desc"]).optional(),
        groupId: z.string().min(1).optional().describe('Only this group; "none" = ungrouped'),
        createdFrom: z.string().min(1).optional().describe("Inclusive; ISO instant or bare day (UTC)"),
        createdTo: z.string().min(1).optional().describe("Inclusive; a bare day covers the whole day"),
      },
      output: z.object({
        projects: z.array(s.projectListItem),
        count: z.number().int(),
        skip: z.number().int(),
        limit: z.number().int(),
        total: z.number().int().optional().describe("X-Total-Count: projects matching the filters"),
        hasMore: z.boolean().optional().describe("X-Has-More: another page exists"),
      }),
      run: async (input, ctx) => {
        const page = await ctx.deps.client.listProjectsPage(input, ctx.signal);
        const projects = s.projectListItem.array().parse(page.projects);
        // The headers say what the service applied (a larger limit is clamped to 100).
        return {
          projects,
          count: projects.length,
          skip: page.skip ?? input.skip ?? 0,
          limit: page.limit ?? input.limit ?? 100,
          total: page.total,
          hasMore: page.hasMore,
        };
      },
      render: (r) => {
        if (r.count === 0)
          return r.total ? `No projects on this page (skip ${r.skip}); ${r.total} match in all.` : "No projects match.";
        const of = r.total !== undefined ? ` of ${r.total}` : "";
        const more = r.hasMore ? `\nMore: call again with skip ${r.skip + r.count}.` : "";
        return `${r.count}${of} project(s):\n${r.projects.map(projectLine).join("\n")}${more}`;
      },
    }),

    defineTool({
      name: "build_get_project",
      upstream: "GET /projects/{projectId}",
      title: "Project details",
      description:
        "Full state of one project: agent and dev-server status, latest deployment, recovery, " +
        "import, secrets (names only), custom domain.",
      toolset: "build",
      kind: "read",
      input: { projectId: s.projectId },
      output: s.projectDetails,
      run: ({ projectId }, ctx) => ctx.deps.client.getProject(projectId, ctx.signal),
      render: projectSummary,
    }),

    defineTool({
      name: "build_create_project",
      upstream: "POST /projects",
      title: "Create empty project",
      description:
        "Create an empty project without starting a build. Spends CREATE_PROJECT credits. A taken " +
        "id answers 409 PROJECT_ALREADY_EXISTS; use the returned projectId.",
      toolset: "build",
      kind: "spend",
      input: {
        projectId: s.newProjectId,
        description: s.description.optional(),
        label: s.label.optional(),
        groupId: z.string().min(1).optional(),
      },
      output: z.looseObject({ projectId: z.string(), requestedProjectId: z.string().optional() }),
      verify: ({ projectId }) => listed(projectId),
      find: ({ projectId }, ctx, since) => findLaunched(projectId, since, ctx),
      before: ({ projectId }, ctx) =>
        ctx.deps.guard.check({ operation: `Create project ${projectId}`, items: [["CREATE_PROJECT", 1]] }, ctx),
      run: async (input, ctx) => {
        const created = (await ctx.deps.client.createProject(input, ctx.signal)) as { projectId: string };
        ctx.resourcesChanged();
        return created;
      },
      render: (r) =>
        `Created project ${r.projectId}${r.requestedProjectId ? ` (${r.requestedProjectId} was taken)` : ""}.`,
    }),

    defineTool({
      name: "build_launch_project",
      view: viewUri("build-console"),
      upstream: "POST /projects/launch",
      title: "Launch project",
      description:
        "Create a project and start its first AI build from a prompt. Costs CREATE_PROJECT + " +
        "UPLOAD_FILE per content file + the run (10-60). 5-40 min: set wait or follow with build_wait.",
      toolset: "build",
      kind: "spend",
      longRunning: { runsAsTask: (input) => input.wait === true, resume: resumeWait },
      input: { ...s.launchFields, ...waitInput },
      output: s.launchResult,
      verify: ({ projectId }) => launched(projectId),
      find: ({ projectId }, ctx, since) => findLaunched(projectId, since, ctx),
      before: ({ projectId, files }, ctx) =>
        ctx.deps.guard.check(
          {
            operation: `Launch project ${projectId}`,
            items: [
              ["CREATE_PROJECT", 1],
              ["UPLOAD_FILE", (files ?? []).filter((f) => f.content !== undefined).length],
            ],
            variable: AGENT_RUN_COST,
          },
          ctx,
        ),
      run: async ({ wait, timeoutSeconds, ...body }, ctx) => {
        for (const secret of body.secrets ?? []) ctx.secret(secret.secretValue);
        ctx.secret(body.figma?.token);
        const since = Date.now();
        const launched = s.launchResult.parse(await ctx.deps.client.launchProject(body, ctx.signal));
        ctx.resourcesChanged();
        if (!wait || !launched.agent?.started) return { ...launched, startedAt: new Date(since).toISOString() };
        await ctx.progress({ message: `Project ${launched.projectId} created; agent started` });
        const started = { ...launched, startedAt: new Date(since).toISOString() };
        return {
          ...started,
          wait: await followStarted(
            { projectId: launched.projectId, until: "agent", since, timeoutSeconds, started },
            ctx,
          ),
        };
      },
      render: (r) => {
        const lines = [
          `Launched project ` +
            `${r.projectId}${r.requestedProjectId ? ` (${r.requestedProjectId} was taken)` : ""}; ` +
            `it exists and was charged.`,
        ];
        const agentStep = r.warnings?.find((w) => w.step === "agent");
        if (r.agent?.started === false) {
          const why = agentStep?.errorCode ?? agentStep?.errorMessage ?? agentStep?.message;
          const reason = why ? ` (${trimLine(why, 200)})` : "";
          lines.push(
            `Agent NOT started${reason}. Next step: once the cause is fixed, call build_start_agent ` +
              `{ projectId: "${r.projectId}" } with the same prompt.`,
          );
        } else if (r.agent) lines.push(`Agent started (${r.agent.status ?? "init"}).`);
        for (const w of r.agent?.warnings ?? []) lines.push(`Agent warning: ${w}`);
        for (const w of r.warnings ?? []) lines.push(warningLine(w, r.agent?.started === true));
        if (r.wait) lines.push(waitSummary(r.wait));
        else if (r.agent?.started)
          lines.push(`Follow it with ${followHint(String(r.projectId), "agent", String(r.startedAt))}.`);
        return lines.join("\n");
      },
    }),

    defineTool({
      name: "build_delete_project",
      upstream: "DELETE /projects/{projectId}",
      title: "Delete project",
      description: "Permanently delete a project, its database and deployments. Cannot be undone.",
      toolset: "build_admin",
      kind: "destructive",
      destroys: ({ projectId }) => `Project ${projectId}, its database and deployments are deleted for good.`,
      input: { projectId: s.projectId },
      output: z.object({ projectId: z.string(), deleted: z.boolean() }),
      verify: ({ projectId }) => `call build_get_project for "${projectId}"`,
      run: async ({ projectId }, ctx) => {
        await ctx.deps.client.deleteProject(projectId, ctx.signal);
        ctx.resourcesChanged();
        return { projectId, deleted: true };
      },
      render: (r) => `Deleted project ${r.projectId}.`,
    }),
  ];
}
