import { markedRoute } from "../base/path-id.js";

/** Templates by marked route: few per service, so held (bounded: cleared at 1,024). */
const templates = new Map<string, string>();

/**
 * An upstream path as a route template, so that spans and the upstream metric's `operation` label
 * name the operation (`/projects/{id}/agent/status`), never a project, secret or record id: each id
 * the service marked (pathId) becomes `{id}`, and so does every other segment that is not a plain
 * word (lowercase letters and dashes, or a version like `v1`). The query is dropped.
 */
export function routeTemplate(path: string): string {
  const query = path.indexOf("?");
  const marked = markedRoute(query < 0 ? path : path.slice(0, query));
  let template = templates.get(marked);
  if (template === undefined) {
    template = marked
      .split("/")
      .map((segment) =>
        segment === "" || segment === "{id}" || (/^([a-z]+(-[a-z]+)*|v\d+)$/.test(segment) && segment.length <= 32)
          ? segment
          : "{id}",
      )
      .join("/");
    if (templates.size >= 1024) templates.clear();
    templates.set(marked, template);
  }
  return template;
}
