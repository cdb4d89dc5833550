import { pagingHeaders } from "../client.js";
import type { UpstreamClient } from "../../../core/upstream/upstream.js";

/** Project groups (reference §16; all free). Deleting a group keeps its projects (they become ungrouped). */

const GROUPS = "/api/v1/vcaas/project-groups";
const group = (groupId: string) => `${GROUPS}/${encodeURIComponent(groupId)}`;

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

export function createGroup(http: UpstreamClient, body: { name: string; description?: string }, signal?: AbortSignal) {
  return http.request<ProjectGroup>({ method: "POST", path: GROUPS, body, signal });
}

/** A page of groups with the paging headers X-Total-Count, X-Limit, X-Skip (there is no X-Has-More). */
export async function listGroups(
  http: UpstreamClient,
  query: { search?: string; limit?: number; skip?: number },
  signal?: AbortSignal,
) {
  const { data, headers } = await http.requestFull<ProjectGroup[]>({ method: "GET", path: GROUPS, query, signal });
  const { total, limit, skip } = pagingHeaders(headers);
  return { groups: data, total, limit, skip };
}

export function getGroup(http: UpstreamClient, groupId: string, signal?: AbortSignal) {
  return http.request<ProjectGroup>({ method: "GET", path: group(groupId), signal });
}

/** Absent keys are left as they are; description "" clears it. */
export function updateGroup(
  http: UpstreamClient,
  groupId: string,
  body: { name?: string; description?: string },
  signal?: AbortSignal,
) {
  return http.request<ProjectGroup>({ method: "PATCH", path: group(groupId), body, signal });
}

export function deleteGroup(http: UpstreamClient, groupId: string, signal?: AbortSignal) {
  return http.request<Json & { deleted?: boolean; releasedProjects?: number }>({
    method: "DELETE",
    path: group(groupId),
    signal,
  });
}
