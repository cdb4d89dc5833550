import type { UpstreamClient } from "../../../core/upstream/upstream.js";

/** GitHub operations of the build service (reference §12; all free). */

const project = (projectId: string) => `/api/v1/vcaas/projects/${encodeURIComponent(projectId)}`;

export type Json = Record<string, unknown>;

export type SyncDirection = "totalum_to_github" | "github_to_totalum";

export interface GithubConnection extends Json {
  connected?: boolean;
  repositoryFullName?: string;
  syncAction?: string;
  repoHasContent?: boolean;
  requiresRebuild?: boolean;
}

export interface GithubStatus extends Json {
  connected?: boolean;
  tokenValid?: boolean;
  tokenExpired?: boolean;
  repositoryFullName?: string | null;
  developBranch?: string;
  productionBranch?: string;
}

/** `pulling`, `success`, `error`, or null when no pull ever ran. */
export interface PullStatus extends Json {
  status: string | null;
  createdAt?: string | null;
}

export function connect(
  http: UpstreamClient,
  projectId: string,
  body: { token: string; repositoryFullName: string; syncDirection?: SyncDirection },
  signal?: AbortSignal,
) {
  return http.request<GithubConnection>({ method: "POST", path: `${project(projectId)}/github/connect`, body, signal });
}

export function disconnect(http: UpstreamClient, projectId: string, signal?: AbortSignal) {
  return http.request<Json & { success?: boolean; message?: string }>({
    method: "DELETE",
    path: `${project(projectId)}/github/connect`,
    signal,
  });
}

export function getStatus(http: UpstreamClient, projectId: string, signal?: AbortSignal) {
  return http.request<GithubStatus>({ method: "GET", path: `${project(projectId)}/github/status`, signal });
}

export function pull(http: UpstreamClient, projectId: string, signal?: AbortSignal) {
  return http.request<Json & { status?: string; message?: string; filesUpdated?: number }>({
    method: "POST",
    path: `${project(projectId)}/github/pull`,
    body: {},
    signal,
  });
}

export function getPullStatus(http: UpstreamClient, projectId: string, signal?: AbortSignal) {
  return http.request<PullStatus>({ method: "GET", path: `${project(projectId)}/github/pull-status`, signal });
}

/** `.env` text per environment, secret values in clear: callers must never pass the values on. */
export function getEnv(http: UpstreamClient, projectId: string, signal?: AbortSignal) {
  return http.request<{ envDev?: string; envProd?: string } & Json>({
    method: "GET",
    path: `${project(projectId)}/github/env`,
    signal,
  });
}
