import type { UpstreamClient } from "../../../core/upstream/upstream.js";

/**
 * Project transfer (reference §15): export (EXPORT_PROJECT) and import (IMPORT_PROJECT). Both are
 * limited to 1 per minute and 5 per hour, so neither is ever retried. The import code is a secret
 * bearer credential: callers register it before anything can echo it.
 */

const project = (projectId: string) => `/api/v1/vcaas/projects/${encodeURIComponent(projectId)}`;

export type Json = Record<string, unknown>;

export function exportProject(http: UpstreamClient, projectId: string, includeRecords: boolean, signal?: AbortSignal) {
  return http.request<Json & { importCode?: string; includeRecords?: boolean; message?: string }>({
    method: "POST",
    path: `${project(projectId)}/export`,
    body: { includeRecords },
    signal,
  });
}

export function importProject(http: UpstreamClient, projectId: string, importCode: string, signal?: AbortSignal) {
  return http.request<Json & { projectId?: string; status?: string; message?: string }>({
    method: "POST",
    path: `${project(projectId)}/import`,
    body: { importCode },
    signal,
  });
}
