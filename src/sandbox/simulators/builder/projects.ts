import type { BuildContext } from "./context.js";
import { CREDIT_COSTS } from "./credits.js";
import { cachedDetails } from "./freshness.js";
import { fail, WithHeaders, type BuildRoutes } from "./routes.js";
import { MINUTE, SERVER_BOOT, given, iso, sha1, type Json, type NewProjectFields, type SimProject } from "./state.js";
import { bodyOf, dateBound, intParam, validateDescriptionAndLabel, validateProjectId } from "./validation.js";
import { addVersion } from "./versions.js";
import { detailsView, listItemView } from "./views.js";

/** Create, list, read and delete projects (launch, which also starts the agent, is in launch.ts). */
export function registerProjectRoutes(ctx: BuildContext, routes: BuildRoutes): void {
  routes.on("POST", "/projects", (req) => create(ctx, bodyOf(req)));
  routes.on("GET", "/projects", (req) => list(ctx, req.query));
  // §1.4: a snapshot cached for a few seconds (freshness.ts).
  routes.onProject("GET", "", (p) => cachedDetails(ctx, p, () => detailsView(p, ctx.simNow())));
  routes.onProject("DELETE", "", (p) => {
    ctx.projects.delete(p.projectId);
    return { projectId: p.projectId, deleted: true };
  });
}

function create(ctx: BuildContext, body: Json) {
  const fields = validateNewProject(body);
  checkAccountCanCreate(ctx, fields.groupId, CREDIT_COSTS.CREATE_PROJECT, "CREATE_PROJECT");
  // [C] documents 409 for a taken id here (only launch tries suffixed ids; [BSA]'s requestedProjectId is superseded).
  const projectId = fields.projectId;
  if (ctx.projects.has(projectId))
    fail(409, "PROJECT_ALREADY_EXISTS", `A project with the id ${projectId} already exists`);
  const at = ctx.simNow();
  ctx.wallet.charge(CREDIT_COSTS.CREATE_PROJECT);
  const p = createProject(ctx, { ...fields, projectId }, at);
  p.totalCreditsSpent = CREDIT_COSTS.CREATE_PROJECT;
  return {
    projectId,
    description: p.description,
    plan: p.plan,
    createdAt: iso(p.createdAt),
    label: p.label,
    groupId: p.groupId,
  };
}

export function validateNewProject(body: Json): NewProjectFields {
  const projectId = validateProjectId(body.projectId);
  const { description, label } = validateDescriptionAndLabel(body);
  const groupId = given(body.groupId) ? body.groupId : undefined;
  if (groupId !== undefined && typeof groupId !== "string")
    fail(400, "INVALID_PROJECT_GROUP", "groupId must be a string");
  return { projectId, description, label, groupId: groupId === "" ? undefined : groupId };
}

/** Group, plan limit, creation rate and balance, in that order. */
export function checkAccountCanCreate(
  ctx: BuildContext,
  groupId: string | undefined,
  cost: number,
  what: string,
): void {
  if (groupId !== undefined) checkGroup(ctx, groupId);
  if (ctx.projects.size >= ctx.maxProjects) {
    fail(403, "MAX_PROJECTS_REACHED", `The plan allows ${ctx.maxProjects} projects; delete one or upgrade`, {
      maxProjects: ctx.maxProjects,
      projectsUsed: ctx.projects.size,
      ...planOf(ctx.maxProjects),
    });
  }
  const realNow = ctx.now();
  ctx.creations = ctx.creations.filter((t) => realNow - t < MINUTE);
  if (ctx.creations.length >= ctx.createsPerMinute) {
    fail(429, "RATE_LIMIT_EXCEEDED", `At most ${ctx.createsPerMinute} projects may be created per minute`);
  }
  ctx.wallet.require(cost, what);
}

export function checkGroup(ctx: BuildContext, groupId: string): void {
  const group = ctx.groups.get(groupId);
  if (!group) fail(400, "INVALID_PROJECT_GROUP", `Project group ${groupId} does not exist`);
  const members = [...ctx.projects.values()].filter((p) => p.groupId === groupId).length;
  if (members >= group.capacity) fail(400, "INVALID_PROJECT_GROUP", `Project group ${groupId} is full`);
}

/** The plan a project limit belongs to (§1.3) and the next one up; a limit of no plan gives nulls. */
function planOf(maxProjects: number): { plan: string | null; upgradePlan: string | null } {
  const plans: Array<[number, string, string | null]> = [
    [2, "free", "starter"],
    [10, "starter", "basic"],
    [50, "basic", "professional"],
    [300, "professional", "enterprise"],
  ];
  const match = plans.find(([limit]) => limit === maxProjects);
  return match ? { plan: match[1], upgradePlan: match[2] } : { plan: null, upgradePlan: null };
}

/**
 * Launch's suffix lengths ([C]: "the name and six suffixed candidates"; the lengths it lists are
 * five, so 6 is tried twice).
 */
const SUFFIX_LENGTHS = [2, 3, 4, 5, 6, 6];

/**
 * Launch: a taken id gets `-` and 2-6 random-looking lowercase letters and digits appended (the
 * reference's example: barber-bookings-k7q), the first free candidate wins; the candidates follow
 * from the id, so the same id always tries the same six. A 35-character id becomes 38-42.
 */
export function allocateProjectId(
  ctx: BuildContext,
  requested: string,
): { projectId: string; requestedProjectId?: string } {
  if (!ctx.projects.has(requested)) return { projectId: requested };
  for (const [i, length] of SUFFIX_LENGTHS.entries()) {
    const digest = BigInt(`0x${sha1(`suffix:${requested}:${i}`)}`).toString(36);
    const candidate = `${requested}-${digest.slice(0, length)}`;
    if (!ctx.projects.has(candidate)) return { projectId: candidate, requestedProjectId: requested };
  }
  fail(409, "PROJECT_ALREADY_EXISTS", `${requested} and its six suffixed alternatives are all taken`);
}

/** Adds a new project with its initial version and a server that is being created; charges nothing. */
export function createProject(ctx: BuildContext, fields: NewProjectFields, at: number): SimProject {
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
  addVersion(ctx, p, at, "Initial version", "Initial project template", "");
  ctx.projects.set(p.projectId, p);
  if (!ctx.seeding) ctx.creations.push(ctx.now());
  ctx.log(p, at, `[provision] Creating development server for ${p.projectId}`);
  return p;
}

/** §1.2: a limit over 100 is clamped to 100 [RC]; the paging metadata goes in headers, the body stays an array. */
function list(ctx: BuildContext, query: URLSearchParams) {
  const limit = Math.min(100, intParam(query, "limit", 100, 1, Number.MAX_SAFE_INTEGER, "LIST_PROJECTS_ERROR"));
  const skip = intParam(query, "skip", 0, 0, Number.MAX_SAFE_INTEGER, "LIST_PROJECTS_ERROR");
  const from = dateBound(query, "createdFrom", false);
  const to = dateBound(query, "createdTo", true);
  const search = (query.get("search") ?? "").toLowerCase();
  const groupId = query.get("groupId");
  const byLastModified = query.get("sortField") === "lastModified";
  const direction = query.get("sortDirection") === "asc" ? 1 : -1;
  const matches = [...ctx.projects.values()].filter((p) => {
    if (search && !p.projectId.toLowerCase().includes(search) && !p.description.toLowerCase().includes(search))
      return false;
    if (groupId === "none" && p.groupId !== undefined) return false;
    if (groupId && groupId !== "none" && p.groupId !== groupId) return false;
    if (from !== undefined && p.createdAt < from) return false;
    return to === undefined || p.createdAt <= to;
  });
  const key = (p: SimProject) => (byLastModified ? p.lastModifiedAt : p.createdAt);
  matches.sort((a, b) => direction * (key(a) - key(b) || a.projectId.localeCompare(b.projectId)));
  const headers = {
    "X-Total-Count": String(matches.length),
    "X-Limit": String(limit),
    "X-Skip": String(skip),
    "X-Has-More": String(skip + limit < matches.length),
  };
  return new WithHeaders(matches.slice(skip, skip + limit).map(listItemView), headers);
}
