/** Marks around an id in a path (Unicode private use: encodeURIComponent never leaves them in). */
const ID_OPEN = "\uE000";
const ID_CLOSE = "\uE001";
const MARKED_ID = /\uE000([^\uE001]*)\uE001/g;

/**
 * An id as a path segment of an upstream request: encoded, and marked so that telemetry names the
 * route with `{id}` in its place (`/projects/{id}/agent/status`), never the id itself. Build every
 * id of a path with it; the upstream client removes the marks before sending (plainPath).
 */
export function pathId(value: string): string {
  return `${ID_OPEN}${encodeURIComponent(value)}${ID_CLOSE}`;
}

/** The path as sent: the ids' marks removed. */
export function plainPath(path: string): string {
  return path.replace(MARKED_ID, "$1");
}

/** The path with each marked id as `{id}`. */
export function markedRoute(path: string): string {
  return path.replace(MARKED_ID, "{id}");
}
