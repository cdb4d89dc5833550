import { pathId } from "../../../core/base/path-id.js";
import type { UpstreamClient } from "../../../core/upstream/upstream.js";

const project = (projectId: string) => `/api/v1/vcaas/projects/${pathId(projectId)}`;

export type Json = Record<string, unknown>;

type SyncDirection = "totalum_to_github" | "github_to_totalum";

interface GithubConnection extends Json {
  connected?: boolean;
  repositoryFullName?: string;
  syncAction?: string;
  repoHasContent?: boolean;
  requiresRebuild?: boolean;
}

interface GithubStatus extends Json {
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

/** GitHub operations of the build service (reference §12; all free). */
export class GithubClient {
  constructor(readonly http: UpstreamClient) {}

  connect(
    projectId: string,
    body: { token: string; repositoryFullName: string; syncDirection?: SyncDirection },
    signal?: AbortSignal,
  ) {
    return this.http.request<GithubConnection>({
      method: "POST",
      path: `${project(projectId)}/github/connect`,
      body,
      signal,
    });
  }

  disconnect(projectId: string, signal?: AbortSignal) {
    return this.http.request<Json & { success?: boolean; message?: string }>({
      method: "DELETE",
      path: `${project(projectId)}/github/connect`,
      signal,
    });
  }

  getStatus(projectId: string, signal?: AbortSignal) {
    return this.http.request<GithubStatus>({ method: "GET", path: `${project(projectId)}/github/status`, signal });
  }

  pull(projectId: string, signal?: AbortSignal) {
    return this.http.request<Json & { status?: string; message?: string; filesUpdated?: number }>({
      method: "POST",
      path: `${project(projectId)}/github/pull`,
      body: {},
      signal,
    });
  }

  getPullStatus(projectId: string, signal?: AbortSignal) {
    return this.http.request<PullStatus>({ method: "GET", path: `${project(projectId)}/github/pull-status`, signal });
  }

  /** `.env` text per environment, secret values in clear: callers must never pass the values on. */
  getEnv(projectId: string, signal?: AbortSignal) {
    return this.http.request<{ envDev?: string; envProd?: string } & Json>({
      method: "GET",
      path: `${project(projectId)}/github/env`,
      signal,
    });
  }
}
