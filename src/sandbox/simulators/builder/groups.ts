import type { BuildContext } from "./context.js";
import { WithHeaders, fail, type BuildRoutes } from "./routes.js";
import { given, iso, type Group, type Json } from "./state.js";
import { bodyOf, intParam } from "./validation.js";

/**
 * Project groups (reference §16): labels stored on projects; deleting one releases its projects.
 * The demo groups of BuildContext have a small `capacity` so a full group can be tested; new
 * groups hold the documented 100,000.
 */
const MAX_GROUPS = 3000;
const GROUP_CAPACITY = 100_000;
const MAX_NAME = 80;
const MAX_DESCRIPTION = 500;
const MAX_PAGE = 200;

export function registerGroupRoutes(ctx: BuildContext, routes: BuildRoutes): void {
  routes.on("POST", "/project-groups", (req) => createGroup(ctx, bodyOf(req)));
  routes.on("GET", "/project-groups", (req) => listGroups(ctx, req.query));
  routes.on("GET", "/project-groups/:groupId", (req) =>
    groupView(ctx, req.params.groupId, loadGroup(ctx, req.params.groupId)),
  );
  routes.on("PATCH", "/project-groups/:groupId", (req) => updateGroup(ctx, req.params.groupId, bodyOf(req)));
  routes.on("DELETE", "/project-groups/:groupId", (req) => deleteGroup(ctx, req.params.groupId));
}

function loadGroup(ctx: BuildContext, groupId: string): Group {
  const group = ctx.groups.get(groupId);
  if (!group) fail(404, "PROJECT_GROUP_NOT_FOUND", `Project group ${groupId} does not exist`);
  return group;
}

function baseView(ctx: BuildContext, groupId: string, g: Group) {
  return {
    groupId,
    name: g.name,
    description: g.description ?? "",
    createdAt: iso(g.createdAt ?? ctx.t0),
    updatedAt: iso(g.updatedAt ?? g.createdAt ?? ctx.t0),
  };
}

function groupView(ctx: BuildContext, groupId: string, g: Group) {
  const projectCount = [...ctx.projects.values()].filter((p) => p.groupId === groupId).length;
  return { ...baseView(ctx, groupId, g), projectCount };
}

/** Trimmed, 1-80 characters; `code` is the operation's error. */
function validName(value: unknown, code: string): string {
  const name = typeof value === "string" ? value.trim() : "";
  if (name === "" || name.length > MAX_NAME)
    fail(400, code, `name is required and must be at most ${MAX_NAME} characters`);
  return name;
}

/** Trimmed and cut to 500 characters (the reference says truncated, not refused). */
function cutDescription(value: unknown, code: string): string {
  if (typeof value !== "string") fail(400, code, "description must be a string");
  return value.trim().slice(0, MAX_DESCRIPTION);
}

function createGroup(ctx: BuildContext, body: Json) {
  const name = validName(body.name, "CREATE_PROJECT_GROUP_ERROR");
  const description = given(body.description) ? cutDescription(body.description, "CREATE_PROJECT_GROUP_ERROR") : "";
  if (ctx.groups.size >= MAX_GROUPS)
    fail(400, "CREATE_PROJECT_GROUP_ERROR", `An account may have at most ${MAX_GROUPS} project groups`);
  const at = ctx.simNow();
  const groupId = ctx.newId();
  const group: Group = { name, description, capacity: GROUP_CAPACITY, createdAt: at, updatedAt: at };
  ctx.groups.set(groupId, group);
  return baseView(ctx, groupId, group);
}

/** Newest first; a limit over 200 is clamped (the reference gives the maximum, not the refusal). */
function listGroups(ctx: BuildContext, query: URLSearchParams) {
  const limit = Math.min(
    intParam(query, "limit", 100, 1, Number.MAX_SAFE_INTEGER, "LIST_PROJECT_GROUPS_ERROR"),
    MAX_PAGE,
  );
  const skip = intParam(query, "skip", 0, 0, Number.MAX_SAFE_INTEGER, "LIST_PROJECT_GROUPS_ERROR");
  const search = (query.get("search") ?? "").toLowerCase();
  const matches = [...ctx.groups]
    .reverse()
    .filter(([, g]) => !search || g.name.toLowerCase().includes(search))
    .sort(([, a], [, b]) => (b.createdAt ?? ctx.t0) - (a.createdAt ?? ctx.t0));
  const page = matches.slice(skip, skip + limit).map(([id, g]) => groupView(ctx, id, g));
  return new WithHeaders(page, {
    "X-Total-Count": String(matches.length),
    "X-Limit": String(limit),
    "X-Skip": String(skip),
  });
}

function updateGroup(ctx: BuildContext, groupId: string, body: Json) {
  const group = loadGroup(ctx, groupId);
  const name = given(body.name) ? validName(body.name, "UPDATE_PROJECT_GROUP_ERROR") : undefined;
  const description = given(body.description)
    ? cutDescription(body.description, "UPDATE_PROJECT_GROUP_ERROR")
    : undefined;
  if (name !== undefined) group.name = name;
  if (description !== undefined) group.description = description;
  group.updatedAt = ctx.simNow();
  return groupView(ctx, groupId, group);
}

function deleteGroup(ctx: BuildContext, groupId: string) {
  loadGroup(ctx, groupId);
  ctx.groups.delete(groupId);
  let releasedProjects = 0;
  for (const p of ctx.projects.values()) {
    if (p.groupId !== groupId) continue;
    p.groupId = undefined;
    releasedProjects++;
  }
  return { deleted: true, releasedProjects };
}
