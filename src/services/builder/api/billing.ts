import { pathId } from "../../../core/base/path-id.js";
import type { UpstreamClient } from "../../../core/upstream/upstream.js";

const project = (projectId: string) => `/api/v1/vcaas/projects/${pathId(projectId)}`;

export type Json = Record<string, unknown>;

export interface CreditLimits extends Json {
  maxDevelopmentCreditsPerMonth?: number | null;
  maxInfrastructureCreditsPerMonth?: number | null;
}

interface SpendingDay extends Json {
  date: string;
  development?: number;
  infrastructure?: number;
  byType?: Record<string, number>;
}

interface SpendingAnalytics extends Json {
  daily?: SpendingDay[];
  totals?: Json & { development?: number; infrastructure?: number; total?: number; byType?: Record<string, number> };
  projects?: string[];
}

/** Per-project credit caps (reference §17) and spending analytics (§18, outside /vcaas); both free. */
export class BillingClient {
  constructor(readonly http: UpstreamClient) {}

  /** Absent keys are left as they are; null removes a cap. */
  setCreditLimits(projectId: string, body: CreditLimits, signal?: AbortSignal) {
    return this.http.request<Json & { creditLimits?: CreditLimits }>({
      method: "PATCH",
      path: `${project(projectId)}/credit-limits`,
      body,
      signal,
    });
  }

  getSpendingAnalytics(query: { from: string; to: string; projectId?: string }, signal?: AbortSignal) {
    return this.http.request<SpendingAnalytics>({
      method: "GET",
      path: "/api/v1/credits/spending-analytics",
      query,
      signal,
    });
  }
}
