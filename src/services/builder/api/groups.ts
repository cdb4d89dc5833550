import { pathId } from "../../../core/base/path-id.js";
import { pagingHeaders } from "./paging.js";
import type { UpstreamClient } from "../../../core/upstream/upstream.js";

const GROUPS = "/api/v1/vcaas/project-groups";
const group = (groupId: string) => `${GROUPS}/${pathId(groupId)}`;

export type Json = Record<string, unknown>;

export interface ProjectGroup extends Json {
  groupId: string;
  name?: string;
  description?: string;
  createdAt?: string;
  updatedAt?: string;
  /** list and get only */
  projectCount?: number;
}

/** Project groups (reference §16; all free). Deleting a group keeps its projects (they become ungrouped). */
export class GroupsClient {
  constructor(readonly http: UpstreamClient) {}

  createGroup(body: { name: string; description?: string }, signal?: AbortSignal) {
    return this.http.request<ProjectGroup>({ method: "POST", path: GROUPS, body, signal });
  }

  /** A page of groups with the paging headers X-Total-Count, X-Limit, X-Skip (there is no X-Has-More). */
  async listGroups(query: { search?: string; limit?: number; skip?: number }, signal?: AbortSignal) {
    const { data, headers } = await this.http.requestFull<ProjectGroup[]>({
      method: "GET",
      path: GROUPS,
      query,
      signal,
    });
    const { total, limit, skip } = pagingHeaders(headers);
    return { groups: data, total, limit, skip };
  }

  getGroup(groupId: string, signal?: AbortSignal) {
    return this.http.request<ProjectGroup>({ method: "GET", path: group(groupId), signal });
  }

  /** Absent keys are left as they are; description "" clears it. */
  updateGroup(groupId: string, body: { name?: string; description?: string }, signal?: AbortSignal) {
    return this.http.request<ProjectGroup>({ method: "PATCH", path: group(groupId), body, signal });
  }

  deleteGroup(groupId: string, signal?: AbortSignal) {
    return this.http.request<Json & { deleted?: boolean; releasedProjects?: number }>({
      method: "DELETE",
      path: group(groupId),
      signal,
    });
  }
}
