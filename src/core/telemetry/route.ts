import { markedRoute } from "../base/path-id.js";

/**
 * An upstream path as a route template, so that spans and the upstream metric's `operation` label
 * name the operation (`/projects/{id}/agent/status`), never a project, secret or record id: each id
 * the service marked (pathId) becomes `{id}`, and so does every other segment that is not a plain
 * word (lowercase letters and dashes, or a version like `v1`). The query is dropped.
 */
export function routeTemplate(path: string): string {
  const bare = markedRoute(path.split("?")[0]);
  return bare
    .split("/")
    .map((segment) =>
      segment === "" || segment === "{id}" || (/^([a-z]+(-[a-z]+)*|v\d+)$/.test(segment) && segment.length <= 32)
        ? segment
        : "{id}",
    )
    .join("/");
}
