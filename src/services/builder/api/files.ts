import { pathId } from "../../../core/base/path-id.js";
import type { UpstreamClient } from "../../../core/upstream/upstream.js";

const project = (projectId: string) => `/api/v1/vcaas/projects/${pathId(projectId)}`;

export type Json = Record<string, unknown>;

interface SourceCode extends Json {
  filesCount?: number;
  lastCommitSha?: string;
  downloadUrl?: string | null;
}

interface FileEntry extends Json {
  path: string;
  name?: string;
  type: string;
  size?: number;
  depth?: number;
}

interface FileTree extends Json {
  entries: FileEntry[];
  totalEntries?: number;
  offset?: number;
  limit?: number;
  hasMore?: boolean;
  commitSha?: string | null;
  filesCount?: number;
}

interface FileContent extends Json {
  path: string;
  name?: string;
  size?: number;
  encoding?: string;
  content: string;
  commitSha?: string | null;
}

interface WrittenFile extends Json {
  path: string;
  bytesWritten?: number;
  created?: boolean;
  commitSha?: string;
  filesCount?: number;
  rebuildRequired?: boolean;
}

/** `idle` (never rebuilt through the API), `rebuilding`, `success`, `error` (a failure in a 200). */
export interface RebuildStatus extends Json {
  status: string;
  startedAt?: string | null;
  finishedAt?: string | null;
  elapsedSeconds?: number | null;
  livePreviewUrl?: string;
  errorCode?: string;
  errorMessage?: string;
}

/** Files, source code and rebuild operations of the build service (reference §11). */
export class FilesClient {
  constructor(readonly http: UpstreamClient) {}

  /** Charged (GET_SOURCE_CODE): never retried, though it is a GET. */
  getSourceCode(projectId: string, signal?: AbortSignal) {
    return this.http.request<SourceCode>({
      method: "GET",
      path: `${project(projectId)}/source-code`,
      idempotent: false,
      signal,
    });
  }

  /** multipart/form-data, field `file`. */
  uploadFile(projectId: string, file: { name: string; bytes: Uint8Array; mimeType?: string }, signal?: AbortSignal) {
    const form = new FormData();
    form.append("file", new Blob([file.bytes], { type: file.mimeType ?? "application/octet-stream" }), file.name);
    return this.http.request<{ fileNameId?: string; url?: string } & Json>({
      method: "POST",
      path: `${project(projectId)}/files/upload`,
      form,
      signal,
    });
  }

  getFileTree(projectId: string, query: { path?: string; limit?: number; offset?: number }, signal?: AbortSignal) {
    return this.http.request<FileTree>({ method: "GET", path: `${project(projectId)}/files/tree`, query, signal });
  }

  readFile(projectId: string, path: string, signal?: AbortSignal) {
    return this.http.request<FileContent>({
      method: "GET",
      path: `${project(projectId)}/files/content`,
      query: { path },
      signal,
    });
  }

  /** Always base64: the service sanitizes utf8 bodies as HTML (reference §11). */
  writeFile(projectId: string, body: { path: string; content: string; encoding: "base64" }, signal?: AbortSignal) {
    return this.http.request<WrittenFile>({ method: "PUT", path: `${project(projectId)}/files/content`, body, signal });
  }

  rebuild(projectId: string, signal?: AbortSignal) {
    return this.http.request<Json & { status?: string; startedAt?: string; message?: string }>({
      method: "POST",
      path: `${project(projectId)}/rebuild`,
      body: {},
      signal,
    });
  }

  getRebuildStatus(projectId: string, signal?: AbortSignal) {
    return this.http.request<RebuildStatus>({ method: "GET", path: `${project(projectId)}/rebuild/status`, signal });
  }
}
