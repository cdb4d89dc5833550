import { pathId } from "../../../core/base/path-id.js";
import type { UpstreamClient } from "../../../core/upstream/upstream.js";

const WEBHOOKS = "/api/v1/vcaas/webhooks";

export type Json = Record<string, unknown>;

export const WEBHOOK_EVENTS = ["agent.prompt.finished", "project.credit_limit.reached"] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

export interface Webhook extends Json {
  id: string;
  url?: string;
  event?: string;
  headers?: Record<string, unknown>;
  createdAt?: string;
  updatedAt?: string;
}

/** Account webhooks of the build service (reference §14; all free). Header values may be secrets. */
export class WebhooksClient {
  constructor(readonly http: UpstreamClient) {}

  subscribe(body: { url: string; event: WebhookEvent; headers?: Record<string, string> }, signal?: AbortSignal) {
    return this.http.request<Webhook>({ method: "PUT", path: WEBHOOKS, body, signal });
  }

  list(signal?: AbortSignal) {
    return this.http.request<Json & { webhooks?: Webhook[] }>({ method: "GET", path: WEBHOOKS, signal });
  }

  /** The answer is `{success: true}` per [L] or `{deleted: boolean}` per [RC]: callers read either. */
  remove(webhookId: string, signal?: AbortSignal) {
    return this.http.request<Json & { success?: boolean; deleted?: boolean }>({
      method: "DELETE",
      path: `${WEBHOOKS}/${pathId(webhookId)}`,
      signal,
    });
  }
}
