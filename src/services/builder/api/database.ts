import { pathId } from "../../../core/base/path-id.js";
import type { UpstreamClient } from "../../../core/upstream/upstream.js";

const records = (projectId: string) => `/api/v1/vcaas/projects/${pathId(projectId)}/database/records`;
const record = (projectId: string, recordId: string) => `${records(projectId)}/${pathId(recordId)}`;

export type Json = Record<string, unknown>;

/** A record as the service answers it: its fields plus `_id`, `createdAt`, `updatedAt`. */
interface DbRecord extends Json {
  _id: string;
  createdAt?: string;
  updatedAt?: string;
}

interface LinkBody {
  /** The table of the record in the path. */
  tableName: string;
  /** The many-to-many property on that table (its id or name). */
  propertyId: string;
  /** `_id` of the record on the other side. */
  referenceId: string;
}

/** Record writes of a project's database (reference §10; all free). `tableName` is a table's `type`. */
export class DatabaseClient {
  constructor(readonly http: UpstreamClient) {}

  createRecord(projectId: string, body: { tableName: string; data: Json }, signal?: AbortSignal) {
    return this.http.request<DbRecord>({ method: "POST", path: records(projectId), body, signal });
  }

  updateRecord(projectId: string, recordId: string, body: { tableName: string; data: Json }, signal?: AbortSignal) {
    return this.http.request<DbRecord>({ method: "PATCH", path: record(projectId, recordId), body, signal });
  }

  /** tableName goes in the query string, not a body. */
  deleteRecord(projectId: string, recordId: string, tableName: string, signal?: AbortSignal) {
    return this.http.request<Json & { deleted?: boolean; recordId?: string }>({
      method: "DELETE",
      path: record(projectId, recordId),
      query: { tableName },
      signal,
    });
  }

  linkRecords(projectId: string, recordId: string, body: LinkBody, signal?: AbortSignal) {
    return this.http.request<Json & { linked?: boolean }>({
      method: "POST",
      path: `${record(projectId, recordId)}/link`,
      body,
      signal,
    });
  }

  /** A DELETE with a JSON body (the client sends a body on any method). */
  unlinkRecords(projectId: string, recordId: string, body: LinkBody, signal?: AbortSignal) {
    return this.http.request<Json & { unlinked?: boolean }>({
      method: "DELETE",
      path: `${record(projectId, recordId)}/link`,
      body,
      signal,
    });
  }
}
