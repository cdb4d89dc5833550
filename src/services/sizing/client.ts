import { isObject, type Json } from "../../core/base/json.js";
import { UpstreamError, type UpstreamClient } from "../../core/upstream/upstream.js";

export type { Json };

interface RecommendBody {
  clothing_item_id: string;
  measurements: Record<string, number | undefined>;
  preferred_fit?: string;
}

interface TryOnBody {
  clothing_item_id: string;
  user_id: string;
  measurements: Record<string, number | undefined>;
}

/** One typed function per sizing operation. Paths per docs/openapi/sizing.yaml. */
export class SizingClient {
  constructor(readonly http: UpstreamClient) {}

  async getCatalog(query: { category?: string; gender?: string }, signal?: AbortSignal): Promise<Json[]> {
    const data = await this.http.request<unknown>({
      method: "GET",
      path: "/api/retailer/catalog",
      query: { ...query },
      signal,
    });
    if (!Array.isArray(data)) throw shapeError("GET", "/api/retailer/catalog", "a list of catalog items");
    return data.filter(isObject);
  }

  async recommend(body: RecommendBody, signal?: AbortSignal): Promise<Json> {
    // Recommending stores nothing upstream: safe to retry like a GET.
    const data = await this.http.request<unknown>({
      method: "POST",
      path: "/api/retailer/recommend",
      body,
      signal,
      idempotent: true,
    });
    if (!isObject(data)) throw shapeError("POST", "/api/retailer/recommend", "a recommendation object");
    return data;
  }

  async tryOn(body: TryOnBody, signal?: AbortSignal): Promise<Json> {
    const data = await this.http.request<unknown>({ method: "POST", path: "/api/retailer/try-on", body, signal });
    if (!isObject(data)) throw shapeError("POST", "/api/retailer/try-on", "a try-on session object");
    return data;
  }
}

function shapeError(method: string, path: string, expected: string): UpstreamError {
  return new UpstreamError("sizing", 200, "UNEXPECTED_SHAPE", `The sizing service answered without ${expected}.`, {
    method,
    path,
    idempotent: method === "GET",
  });
}
