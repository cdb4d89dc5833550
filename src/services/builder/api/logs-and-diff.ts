import { pathId } from "../../../core/base/path-id.js";
import type { UpstreamClient } from "../../../core/upstream/upstream.js";

const project = (projectId: string) => `/api/v1/vcaas/projects/${pathId(projectId)}`;

export type Json = Record<string, unknown>;

interface ProdLogsQuery {
  getOnlyLastLogs?: boolean;
  from?: string;
  to?: string;
  regexSearch?: string;
}

/** Production request logs (reference §6) and one version's diff (§7); both free. */
export class LogsAndDiffClient {
  constructor(readonly http: UpstreamClient) {}

  /**
   * Passed through from the log pipeline: records at `data.records`, or `data` is the array itself.
   * Never retried: each request counts against the plan's log allowance (429 PLAN_LIMIT_REACHED, §6).
   */
  getProductionLogs(projectId: string, query: ProdLogsQuery, signal?: AbortSignal) {
    return this.http.request<unknown>({
      method: "GET",
      path: `${project(projectId)}/backend/prod/logs`,
      query: { ...query },
      signal,
      retries: 0,
    });
  }

  getVersionDiff(projectId: string, commitSha: string, signal?: AbortSignal) {
    return this.http.request<Json & { commitSha?: string; diff?: string }>({
      method: "GET",
      path: `${project(projectId)}/version-diff`,
      query: { commitSha },
      signal,
    });
  }
}
