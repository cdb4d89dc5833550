import { pathId } from "../../../core/base/path-id.js";
import type { UpstreamClient } from "../../../core/upstream/upstream.js";

const project = (projectId: string) => `/api/v1/vcaas/projects/${pathId(projectId)}`;

export type Json = Record<string, unknown>;

export interface FigmaAccount extends Json {
  id?: string;
  handle?: string;
  email?: string;
  imgUrl?: string;
}

interface FigmaStatus extends Json {
  connected?: boolean;
  account?: FigmaAccount | null;
  connectedAt?: string | null;
  /** Only with verify=true. */
  tokenValid?: boolean;
  tokenError?: string;
}

/** Figma operations of the build service (reference §13; all free). The token is a secret: callers register it. */
export class FigmaClient {
  constructor(readonly http: UpstreamClient) {}

  connect(projectId: string, token: string, signal?: AbortSignal) {
    return this.http.request<Json & { connected?: boolean; account?: FigmaAccount }>({
      method: "POST",
      path: `${project(projectId)}/figma/connect`,
      body: { token },
      signal,
    });
  }

  /**
   * verify=true makes a live Figma call that counts against the account's 10 checks per minute
   * (§13): never retried, so one call is one check.
   */
  getStatus(projectId: string, verify: boolean | undefined, signal?: AbortSignal) {
    return this.http.request<FigmaStatus>({
      method: "GET",
      path: `${project(projectId)}/figma/status`,
      query: verify === undefined ? undefined : { verify },
      ...(verify ? { retries: 0 } : {}),
      signal,
    });
  }

  disconnect(projectId: string, signal?: AbortSignal) {
    return this.http.request<Json & { disconnected?: boolean; message?: string }>({
      method: "DELETE",
      path: `${project(projectId)}/figma/connect`,
      signal,
    });
  }

  /** POST /figma/validate: no project; stores nothing; rate-limited per account. */
  validateToken(token: string, signal?: AbortSignal) {
    return this.http.request<Json & { valid?: boolean; account?: FigmaAccount }>({
      method: "POST",
      path: "/api/v1/vcaas/figma/validate",
      body: { token },
      signal,
    });
  }
}
