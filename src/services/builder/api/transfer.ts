import { pathId } from "../../../core/base/path-id.js";
import type { UpstreamClient } from "../../../core/upstream/upstream.js";

const project = (projectId: string) => `/api/v1/vcaas/projects/${pathId(projectId)}`;

export type Json = Record<string, unknown>;

/**
 * Project transfer (reference §15): export (EXPORT_PROJECT) and import (IMPORT_PROJECT). Both are
 * limited to 1 per minute and 5 per hour, so neither is ever retried. The import code is a secret
 * bearer credential: callers register it before anything can echo it.
 */
export class TransferClient {
  constructor(readonly http: UpstreamClient) {}

  exportProject(projectId: string, includeRecords: boolean, signal?: AbortSignal) {
    return this.http.request<Json & { importCode?: string; includeRecords?: boolean; message?: string }>({
      method: "POST",
      path: `${project(projectId)}/export`,
      body: { includeRecords },
      signal,
    });
  }

  importProject(projectId: string, importCode: string, signal?: AbortSignal) {
    return this.http.request<Json & { projectId?: string; status?: string; message?: string }>({
      method: "POST",
      path: `${project(projectId)}/import`,
      body: { importCode },
      signal,
    });
  }
}
