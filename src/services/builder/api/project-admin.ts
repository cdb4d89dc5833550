import { pathId } from "../../../core/base/path-id.js";
import type { UpstreamClient } from "../../../core/upstream/upstream.js";

const project = (projectId: string) => `/api/v1/vcaas/projects/${pathId(projectId)}`;

export type Json = Record<string, unknown>;

/** Absent keys are left as they are; null clears (groupId null takes the project out of its group). */
interface ProjectUpdate {
  label?: string | null;
  description?: string | null;
  groupId?: string | null;
}

/** PATCH /projects/:projectId (reference §3; free): label, description, groupId. */
export class ProjectAdminClient {
  constructor(readonly http: UpstreamClient) {}

  updateProject(projectId: string, body: ProjectUpdate, signal?: AbortSignal) {
    return this.http.request<Json & { projectId?: string; label?: string; description?: string; groupId?: string }>({
      method: "PATCH",
      path: project(projectId),
      body,
      signal,
    });
  }
}
