import type { UpstreamClient } from "../../../core/upstream/upstream.js";

/** PATCH /projects/:projectId (reference §3; free): label, description, groupId. */

const project = (projectId: string) => `/api/v1/vcaas/projects/${encodeURIComponent(projectId)}`;

export type Json = Record<string, unknown>;

/** Absent keys are left as they are; null clears (groupId null takes the project out of its group). */
export interface ProjectUpdate {
  label?: string | null;
  description?: string | null;
  groupId?: string | null;
}

export function updateProject(http: UpstreamClient, projectId: string, body: ProjectUpdate, signal?: AbortSignal) {
  return http.request<Json & { projectId?: string; label?: string; description?: string; groupId?: string }>({
    method: "PATCH",
    path: project(projectId),
    body,
    signal,
  });
}
