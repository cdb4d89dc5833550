import type { BuildContext } from "./context.js";
import { checkGroup } from "./projects.js";
import { fail, type BuildRoutes } from "./routes.js";
import type { Json, SimProject } from "./state.js";
import { bodyOf } from "./validation.js";

/**
 * PATCH /projects/:projectId (reference §3): label, description, groupId. Absent keys stay, null
 * (or "") clears, `{}` is refused; a `projectId` in the body is ignored. Over-long text is cut to
 * the cap (the reference says "capped", not whether it refuses).
 */
const FIELDS = ["label", "description", "groupId"] as const;

export function registerProjectUpdateRoutes(ctx: BuildContext, routes: BuildRoutes): void {
  routes.onProject("PATCH", "", (p, req) => updateProject(ctx, p, bodyOf(req)));
}

/** Trimmed and cut to `max`; undefined when cleared (null or ""). */
function text(value: unknown, max: number, code: string, field: string): string | undefined {
  if (value === null) return undefined;
  if (typeof value !== "string") fail(400, code, `${field} must be a string or null`);
  return value.trim().slice(0, max) || undefined;
}

function updateProject(ctx: BuildContext, p: SimProject, body: Json) {
  if (!FIELDS.some((f) => f in body))
    fail(400, "NOTHING_TO_UPDATE", "Send at least one of label, description or groupId");
  const label = "label" in body ? text(body.label, 80, "INVALID_LABEL", "label") : p.label;
  const description =
    "description" in body ? (text(body.description, 500, "INVALID_DESCRIPTION", "description") ?? "") : p.description;
  let groupId = p.groupId;
  if ("groupId" in body) {
    const wanted = body.groupId;
    if (wanted !== null && wanted !== "" && typeof wanted !== "string")
      fail(400, "INVALID_PROJECT_GROUP", "groupId must be a string or null");
    groupId = typeof wanted === "string" && wanted !== "" ? wanted : undefined;
    if (groupId !== undefined && groupId !== p.groupId) checkGroup(ctx, groupId);
  }
  Object.assign(p, { label, description, groupId });
  return { projectId: p.projectId, label: p.label, description: p.description, groupId: p.groupId };
}
