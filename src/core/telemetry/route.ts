/**
 * An upstream path as a route template: every segment that is not a plain word (lowercase letters
 * and dashes, or a version like `v1`) becomes `{id}`, so that spans and the upstream metric's
 * `operation` label name the operation (`/projects/{id}/agent/status`), never a project, secret or
 * record id. The query is dropped.
 */
export function routeTemplate(path: string): string {
  const bare = path.split("?")[0];
  return bare
    .split("/")
    .map((segment) =>
      segment === "" || (/^([a-z]+(-[a-z]+)*|v\d+)$/.test(segment) && segment.length <= 32) ? segment : "{id}",
    )
    .join("/");
}
