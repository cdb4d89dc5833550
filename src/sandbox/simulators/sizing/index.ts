import { randomUUID } from "node:crypto";
import { Router, bearerToken, type SimRequest, type SimResponse } from "../../router.js";
import type { StartSimulator } from "../../simulator.js";
import { CATALOG, type CatalogItem } from "./catalog.js";
import { ApiError, failure, guarded, success } from "./errors.js";
import { PLAN_LIMITS, SlidingWindow, monthKey, secondsToNextMonth, type Plan } from "./limits.js";
import { recommend } from "./recommend.js";
import { parseFitRequest, requireString } from "./requests.js";

/**
 * In-memory simulator of the Garment Size Recommendation API (docs/openapi/sizing.yaml).
 *
 * Choices where the spec says "not shown" are marked "Not shown in the spec:" in each file:
 * catalog.ts (units, preferred_fit values), errors.ts (failure shape and codes), requests.ts
 * (required fields), recommend.ts (the engine, size_breakdown words), limits.ts (429s), and below.
 */

export {
  CATALOG,
  CHART_MEASURES,
  MEASUREMENT_NAMES,
  PREFERRED_FITS,
  type CatalogItem,
  type ChartMeasure,
  type Measurements,
  type PreferredFit,
  type Range,
  type SizeChart,
} from "./catalog.js";
export { PLAN_LIMITS, type Plan } from "./limits.js";
export { fitWord, recommend, type Recommendation } from "./recommend.js";

export interface TryOnSession {
  session_id: string;
  user_id: string;
  clothing_item_id: string;
  recommended_size: string;
  confidence_score: number;
  fit_notes: string;
  created_at: string;
}

export interface SizingSimulatorOptions {
  apiKey: string;
  plan?: Plan;
  /** Clock in epoch milliseconds; tests inject one to move through rate-limit windows. */
  now?: () => number;
}

export class SizingSimulator {
  readonly router: Router;
  private plan: Plan;
  private readonly now: () => number;
  private readonly apiKey: string;
  private readonly catalog: CatalogItem[] = structuredClone([...CATALOG]);
  private readonly saved: TryOnSession[] = [];
  private readonly window = new SlidingWindow();
  private readonly tryOnsByMonth = new Map<string, number>();

  constructor(options: SizingSimulatorOptions) {
    this.apiKey = options.apiKey;
    this.plan = options.plan ?? "professional";
    this.now = options.now ?? Date.now;
    this.router = new Router({
      authorize: (req) => this.admit(req),
      // The router parses the body before authorizing, so re-check the key to keep 401 first.
      badJson: (req) => this.admit(req) ?? failure(400, "INVALID_JSON", "Request body is not valid JSON"),
      notFound: (req) => failure(404, "NOT_FOUND", `No route ${req.method} ${req.path}`),
    });
    this.router
      .on(
        "GET",
        "/api/retailer/catalog",
        guarded((req) => this.listCatalog(req)),
      )
      .on(
        "POST",
        "/api/retailer/recommend",
        guarded((req) => this.recommend(req)),
      )
      .on(
        "POST",
        "/api/retailer/try-on",
        guarded((req) => this.tryOn(req)),
      );
  }

  /** Saved try-on sessions, oldest first. */
  sessions(): readonly TryOnSession[] {
    return this.saved;
  }

  setPlan(plan: Plan): void {
    this.plan = plan;
  }

  private admit(req: SimRequest): SimResponse | undefined {
    if (bearerToken(req) !== this.apiKey) {
      return failure(401, "UNAUTHORIZED", "Invalid or missing API key");
    }
    const { requestsPerMinute } = PLAN_LIMITS[this.plan];
    const retryAfter = this.window.take(this.now(), requestsPerMinute);
    if (retryAfter === undefined) return undefined;
    return failure(
      429,
      "RATE_LIMITED",
      `Rate limit of ${requestsPerMinute} requests per minute exceeded on the ${this.plan} plan; ` +
        `retry in ${retryAfter} s`,
      { "Retry-After": String(retryAfter) },
    );
  }

  private findItem(id: string): CatalogItem {
    const item = this.catalog.find((i) => i._id === id);
    if (!item) throw new ApiError(404, "NOT_FOUND", `Clothing item ${id} not found`);
    return item;
  }

  /** Not shown in the spec: other filters and paging. Unknown query parameters are ignored. */
  private listCatalog(req: SimRequest): SimResponse {
    const matches = (value: string, filter: string | null) => !filter || value.toLowerCase() === filter.toLowerCase();
    const category = req.query.get("category");
    const gender = req.query.get("gender");
    return success(this.catalog.filter((i) => matches(i.category, category) && matches(i.gender, gender)));
  }

  private recommend(req: SimRequest): SimResponse {
    const input = parseFitRequest(req.body);
    return success(recommend(this.findItem(input.itemId), input.measurements, input.fit));
  }

  /** Accepts preferred_fit like recommend does (the spec lists only the three other fields). */
  private tryOn(req: SimRequest): SimResponse {
    const input = parseFitRequest(req.body);
    const userId = requireString(req.body as Record<string, unknown>, "user_id");
    const item = this.findItem(input.itemId);
    const result = recommend(item, input.measurements, input.fit);
    this.consumeTryOn();
    const session: TryOnSession = {
      session_id: randomUUID(),
      user_id: userId,
      clothing_item_id: item._id,
      recommended_size: result.recommended_size,
      confidence_score: result.confidence_score,
      fit_notes: result.fit_notes,
      created_at: new Date(this.now()).toISOString(),
    };
    this.saved.push(session);
    return success(session);
  }

  private consumeTryOn(): void {
    const now = this.now();
    const key = monthKey(now);
    const used = this.tryOnsByMonth.get(key) ?? 0;
    const { tryOnsPerMonth } = PLAN_LIMITS[this.plan];
    if (used >= tryOnsPerMonth) {
      throw new ApiError(
        429,
        "TRY_ON_LIMIT_REACHED",
        `Monthly limit of ${tryOnsPerMonth} try-ons reached on the ${this.plan} plan`,
        { "Retry-After": String(secondsToNextMonth(now)) },
      );
    }
    this.tryOnsByMonth.set(key, used + 1);
  }
}

/** One account of this simulator, as the sandbox starts it (declaration.ts). */
export const startSizingSimulator: StartSimulator<SizingSimulator, Omit<SizingSimulatorOptions, "apiKey">> = (
  apiKey,
  _timeScale,
  options,
) => new SizingSimulator({ ...options, apiKey });
