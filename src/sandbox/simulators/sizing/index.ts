import { randomUUID } from "node:crypto";
import { Router, bearerToken, type SimRequest, type SimResponse } from "../../router.js";

/**
 * In-memory simulator of the Garment Size Recommendation API (specs/sizing-api.md).
 *
 * Choices where the spec says "not shown" are marked "Not shown in the spec:" below.
 */

export type Plan = "free" | "professional";
export type ChartMeasure = "chest" | "waist" | "hips";
export type Range = [number, number];
export type SizeChart = Record<string, Partial<Record<ChartMeasure, Range>>>;
export type PreferredFit = (typeof PREFERRED_FITS)[number];
export type Measurements = Partial<Record<(typeof MEASUREMENT_NAMES)[number], number>>;

export interface CatalogItem {
  _id: string;
  name: string;
  brand: string;
  price: number;
  category: string;
  gender: string;
  material: string;
  available_sizes: string;
  size_chart: SizeChart;
}

export interface Recommendation {
  recommended_size: string;
  confidence_score: number;
  fit_notes: string;
  alternative_size: string;
  size_breakdown: { chest_fit: string; waist_fit: string; overall: string };
}

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

export const PLAN_LIMITS: Record<Plan, { requestsPerMinute: number; tryOnsPerMonth: number }> = {
  free: { requestsPerMinute: 60, tryOnsPerMonth: 100 },
  professional: { requestsPerMinute: 600, tryOnsPerMonth: 10_000 },
};

/** Not shown in the spec: units. Chart measurements are body measurements in cm; height cm, weight kg. */
export const MEASUREMENT_NAMES = ["chest", "waist", "hips", "height", "weight"] as const;
export const CHART_MEASURES: readonly ChartMeasure[] = ["chest", "waist", "hips"];
/** Not shown in the spec: allowed values of preferred_fit. */
export const PREFERRED_FITS = ["slim", "regular", "relaxed"] as const;

// ---------------------------------------------------------------------------------------------
// Seed catalog
// ---------------------------------------------------------------------------------------------

const LETTER_SIZES = ["XS", "S", "M", "L", "XL"];
const MEN_LETTER_SIZES = ["S", "M", "L", "XL", "XXL"];
const MEN_WAIST_SIZES = ["28", "30", "32", "34", "36", "38"];
const WOMEN_EU_SIZES = ["34", "36", "38", "40", "42", "44"];

/** Boundaries (cm) between consecutive sizes: n sizes need n + 1 boundaries, so ranges are contiguous. */
type Boundaries = Partial<Record<ChartMeasure, number[]>>;

const WOMEN_BOUNDS: Boundaries = {
  chest: [78, 82, 87, 92, 98, 104],
  waist: [60, 64, 69, 74, 80, 86],
  hips: [86, 90, 95, 100, 106, 112],
};
const MEN_BOUNDS: Boundaries = {
  chest: [88, 96, 104, 112, 120, 128],
  waist: [74, 82, 90, 98, 106, 114],
  hips: [90, 98, 106, 114, 122, 130],
};
const UNISEX_BOUNDS: Boundaries = {
  chest: [80, 86, 92, 100, 108, 116],
  waist: [66, 72, 78, 86, 94, 102],
  hips: [84, 90, 96, 104, 112, 120],
};
const MEN_PANTS_BOUNDS: Boundaries = {
  waist: [70, 75, 80, 85, 90, 95, 100],
  hips: [86, 91, 96, 101, 106, 111, 116],
};
const WOMEN_PANTS_BOUNDS: Boundaries = {
  waist: [62, 66, 70, 74, 78, 82, 86],
  hips: [88, 92, 96, 100, 104, 108, 112],
};

function sized(sizes: string[], bounds: Boundaries): Pick<CatalogItem, "available_sizes" | "size_chart"> {
  const size_chart: SizeChart = {};
  sizes.forEach((size, i) => {
    const entry: Partial<Record<ChartMeasure, Range>> = {};
    for (const measure of CHART_MEASURES) {
      const b = bounds[measure];
      if (b) entry[measure] = [b[i], b[i + 1]];
    }
    size_chart[size] = entry;
  });
  return { available_sizes: sizes.join(","), size_chart };
}

export const CATALOG: readonly CatalogItem[] = [
  { _id: "6650c1a2f3b4d5e6a7b80101", name: "Ribbed Cotton Tank", brand: "Linea", price: 24, category: "tops", gender: "women", material: "95% cotton, 5% elastane", ...sized(LETTER_SIZES, WOMEN_BOUNDS) },
  { _id: "6650c1a2f3b4d5e6a7b80102", name: "Relaxed Linen Blouse", brand: "Moss Atelier", price: 59.9, category: "tops", gender: "women", material: "100% linen", ...sized(LETTER_SIZES, WOMEN_BOUNDS) },
  { _id: "6650c1a2f3b4d5e6a7b80103", name: "Heavyweight Crew Tee", brand: "Harbor Supply", price: 32, category: "tops", gender: "unisex", material: "100% organic cotton", ...sized(LETTER_SIZES, UNISEX_BOUNDS) },
  { _id: "6650c1a2f3b4d5e6a7b80104", name: "Merino Henley", brand: "Fieldnorth", price: 79, category: "tops", gender: "men", material: "100% merino wool", ...sized(MEN_LETTER_SIZES, MEN_BOUNDS) },
  { _id: "6650c1a2f3b4d5e6a7b80105", name: "Oxford Button-Down Shirt", brand: "Cobalt & Pine", price: 69.5, category: "shirts", gender: "men", material: "100% cotton oxford", ...sized(MEN_LETTER_SIZES, MEN_BOUNDS) },
  { _id: "6650c1a2f3b4d5e6a7b80106", name: "Silk Poplin Shirt", brand: "Aurelia", price: 129, category: "shirts", gender: "women", material: "100% mulberry silk", ...sized(LETTER_SIZES, WOMEN_BOUNDS) },
  { _id: "6650c1a2f3b4d5e6a7b80107", name: "Flannel Overshirt", brand: "Harbor Supply", price: 74, category: "shirts", gender: "unisex", material: "100% brushed cotton", ...sized(LETTER_SIZES, UNISEX_BOUNDS) },
  { _id: "6650c1a2f3b4d5e6a7b80108", name: "Wrap Midi Dress", brand: "Aurelia", price: 149, category: "dresses", gender: "women", material: "100% viscose", ...sized(LETTER_SIZES, WOMEN_BOUNDS) },
  { _id: "6650c1a2f3b4d5e6a7b80109", name: "Knit Slip Dress", brand: "Linea", price: 89, category: "dresses", gender: "women", material: "80% cotton, 20% polyamide", ...sized(LETTER_SIZES, WOMEN_BOUNDS) },
  { _id: "6650c1a2f3b4d5e6a7b8010a", name: "Slim Stretch Chino", brand: "Cobalt & Pine", price: 79.9, category: "pants", gender: "men", material: "98% cotton, 2% elastane", ...sized(MEN_WAIST_SIZES, MEN_PANTS_BOUNDS) },
  { _id: "6650c1a2f3b4d5e6a7b8010b", name: "Straight Selvedge Jeans", brand: "Vantage Denim", price: 128, category: "pants", gender: "men", material: "100% cotton selvedge denim", ...sized(MEN_WAIST_SIZES, MEN_PANTS_BOUNDS) },
  { _id: "6650c1a2f3b4d5e6a7b8010c", name: "High-Rise Wide-Leg Trouser", brand: "Moss Atelier", price: 98, category: "pants", gender: "women", material: "64% polyester, 34% viscose, 2% elastane", ...sized(WOMEN_EU_SIZES, WOMEN_PANTS_BOUNDS) },
  { _id: "6650c1a2f3b4d5e6a7b8010d", name: "Waxed Field Jacket", brand: "Fieldnorth", price: 249, category: "outerwear", gender: "unisex", material: "100% waxed cotton", ...sized(LETTER_SIZES, UNISEX_BOUNDS) },
  { _id: "6650c1a2f3b4d5e6a7b8010e", name: "Wool Wrap Coat", brand: "Aurelia", price: 329, category: "outerwear", gender: "women", material: "80% wool, 20% cashmere", ...sized(LETTER_SIZES, WOMEN_BOUNDS) },
  { _id: "6650c1a2f3b4d5e6a7b8010f", name: "Down Puffer Jacket", brand: "Harbor Supply", price: 219, category: "outerwear", gender: "men", material: "Recycled nylon shell, 90/10 down fill", ...sized(MEN_LETTER_SIZES, MEN_BOUNDS) },
];

// ---------------------------------------------------------------------------------------------
// Errors. Not shown in the spec: failure shape and codes. We answer
// `{ ok: false, error: { code, message } }`, the same shape as the drone fleet simulator.
// ---------------------------------------------------------------------------------------------

class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
  }
}

function failure(status: number, code: string, message: string, headers?: Record<string, string>): SimResponse {
  return { status, body: { ok: false, error: { code, message } }, headers };
}

function success(data: unknown, status = 200): SimResponse {
  return { status, body: { ok: true, data } };
}

function validation(message: string): ApiError {
  return new ApiError(400, "VALIDATION_ERROR", message);
}

/** Turns ApiErrors thrown by a route into failure responses. */
function guarded(route: (req: SimRequest) => SimResponse): (req: SimRequest) => SimResponse {
  return (req) => {
    try {
      return route(req);
    } catch (err) {
      if (err instanceof ApiError) return failure(err.status, err.code, err.message, err.headers);
      throw err;
    }
  };
}

// ---------------------------------------------------------------------------------------------
// Request validation. Not shown in the spec: which fields are required and how invalid input is
// handled. We require clothing_item_id and measurements (and user_id for try-on), reject unknown
// measurement names, and reject present-but-invalid values (null included) with VALIDATION_ERROR.
// ---------------------------------------------------------------------------------------------

interface FitRequest {
  itemId: string;
  measurements: Measurements;
  fit: PreferredFit;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function requireString(body: Record<string, unknown>, field: string): string {
  const value = body[field];
  if (typeof value !== "string" || value.trim() === "") {
    throw validation(`${field} is required and must be a non-empty string`);
  }
  return value;
}

function parseMeasurements(value: unknown): Measurements {
  if (!isPlainObject(value)) throw validation("measurements is required and must be an object");
  const result: Measurements = {};
  for (const [name, raw] of Object.entries(value)) {
    if (!(MEASUREMENT_NAMES as readonly string[]).includes(name)) {
      throw validation(`measurements.${name} is not a supported measurement (${MEASUREMENT_NAMES.join(", ")})`);
    }
    if (typeof raw !== "number" || !Number.isFinite(raw) || raw < 0) {
      throw validation(`measurements.${name} must be a non-negative number`);
    }
    result[name as keyof Measurements] = raw;
  }
  return result;
}

function parsePreferredFit(value: unknown): PreferredFit {
  if (value === undefined) return "regular";
  if (typeof value !== "string" || !(PREFERRED_FITS as readonly string[]).includes(value)) {
    throw validation(`preferred_fit must be one of ${PREFERRED_FITS.join(", ")}`);
  }
  return value as PreferredFit;
}

function parseFitRequest(body: unknown): FitRequest {
  if (!isPlainObject(body)) throw validation("Request body must be a JSON object");
  return {
    itemId: requireString(body, "clothing_item_id"),
    measurements: parseMeasurements(body.measurements),
    fit: parsePreferredFit(body.preferred_fit),
  };
}

// ---------------------------------------------------------------------------------------------
// Recommendation engine
// ---------------------------------------------------------------------------------------------

interface DimensionFit {
  measure: ChartMeasure;
  value: number;
  range: Range;
  /** (value - centre) / half-width: 0 at the centre, ±1 at the edges, beyond ±1 outside. */
  offset: number;
}

interface SizeFit {
  size: string;
  index: number;
  dims: DimensionFit[];
  outside: number;
  /** Mean closeness: 1 when centred, 0 at the edges, negative (twice as steep) outside. */
  score: number;
  /** Mean offset: which way the measurements lean inside this size. */
  lean: number;
}

/** When the best size's measurements sit in its outer quarter, slim/relaxed move one size over. */
const NUDGE_LEAN = 0.5;
const NUDGE_CONFIDENCE_COST = 0.1;

function sizesOf(item: CatalogItem): string[] {
  return item.available_sizes.split(",").map((s) => s.trim());
}

function chartMeasuresOf(item: CatalogItem): ChartMeasure[] {
  return CHART_MEASURES.filter((m) => Object.values(item.size_chart).some((entry) => entry[m]));
}

function closeness(offset: number): number {
  const distance = Math.abs(offset);
  return distance <= 1 ? 1 - distance : -2 * (distance - 1);
}

function mean(values: number[]): number {
  return values.reduce((a, b) => a + b, 0) / values.length;
}

function fitSize(item: CatalogItem, size: string, index: number, m: Measurements): SizeFit {
  const dims: DimensionFit[] = [];
  for (const measure of CHART_MEASURES) {
    const range = item.size_chart[size]?.[measure];
    const value = m[measure];
    if (!range || value === undefined) continue;
    const [lo, hi] = range;
    const half = (hi - lo) / 2 || 1;
    dims.push({ measure, value, range, offset: (value - (lo + hi) / 2) / half });
  }
  const offsets = dims.map((d) => d.offset);
  return {
    size,
    index,
    dims,
    outside: offsets.filter((o) => Math.abs(o) > 1).length,
    score: dims.length ? mean(offsets.map(closeness)) : -Infinity,
    lean: dims.length ? mean(offsets) : 0,
  };
}

/** A size containing every measurement beats one that does not; ties go to the larger size. */
function compareFits(a: SizeFit, b: SizeFit): number {
  return a.outside - b.outside || b.score - a.score || b.index - a.index;
}

function nudgeFor(fits: SizeFit[], best: SizeFit, fit: PreferredFit): SizeFit | undefined {
  if (fit === "slim" && best.lean <= -NUDGE_LEAN) return fits[best.index - 1];
  if (fit === "relaxed" && best.lean >= NUDGE_LEAN) return fits[best.index + 1];
  return undefined;
}

function alternativeFor(fits: SizeFit[], ranked: SizeFit[], best: SizeFit): SizeFit {
  const direction = Math.sign(best.lean);
  const neighbour = direction === 0 ? undefined : fits[best.index + direction];
  return neighbour ?? ranked[1] ?? best;
}

function confidenceOf(fit: SizeFit): number {
  const raw = fit.outside === 0 ? 0.55 + 0.4 * fit.score : 0.5 + 0.25 * fit.score;
  return Math.min(0.99, Math.max(0.05, raw));
}

function round2(n: number): number {
  return Math.round(n * 100) / 100;
}

/** Not shown in the spec: the size_breakdown vocabulary. Body above the range reads as tight. */
export function fitWord(offset: number | undefined): string {
  if (offset === undefined) return "n/a";
  if (offset > 1) return "tight";
  if (offset > 0.5) return "snug";
  if (offset > 0.15) return "fitted";
  if (offset >= -0.5) return "comfortable";
  if (offset >= -1) return "relaxed";
  return "loose";
}

function breakdown(chosen: SizeFit): Recommendation["size_breakdown"] {
  const offsetOf = (m: ChartMeasure) => chosen.dims.find((d) => d.measure === m)?.offset;
  return {
    chest_fit: fitWord(offsetOf("chest")),
    waist_fit: fitWord(offsetOf("waist")),
    overall: fitWord(chosen.dims.length ? chosen.lean : undefined),
  };
}

function position(offset: number): string {
  if (offset > 1) return "is above the range of";
  if (offset < -1) return "is below the range of";
  if (offset > 1 / 3) return "is near the top of";
  if (offset < -1 / 3) return "is near the bottom of";
  return "sits in the middle of";
}

function describeDimensions(chosen: SizeFit): string {
  const parts = chosen.dims.map(
    (d) => `${d.measure} ${d.value} cm ${position(d.offset)} ${chosen.size} (${d.range[0]}–${d.range[1]} cm)`,
  );
  const text = parts.join("; ");
  return `${text.charAt(0).toUpperCase()}${text.slice(1)}.`;
}

function describeUnused(item: CatalogItem, m: Measurements): string | undefined {
  const charted = chartMeasuresOf(item) as string[];
  const unused = Object.keys(m).filter((name) => !charted.includes(name));
  if (unused.length === 0) return undefined;
  const list = unused.join(" and ");
  const plural = unused.length > 1;
  return `${list.charAt(0).toUpperCase()}${list.slice(1)} ${plural ? "are" : "is"} not part of this item's size chart, so ${plural ? "they were" : "it was"} not used.`;
}

function describeChoice(chosen: SizeFit, best: SizeFit, alternative: SizeFit, fit: PreferredFit): string | undefined {
  if (chosen !== best) {
    return `You asked for a ${fit} fit, so ${chosen.size} is recommended over ${best.size}, which matches your measurements more closely.`;
  }
  if (alternative === chosen) return undefined;
  const roomier = alternative.index > chosen.index;
  return `${alternative.size} is the alternative if you prefer ${roomier ? "room" : "a closer fit"}.`;
}

export function recommend(item: CatalogItem, m: Measurements, fit: PreferredFit = "regular"): Recommendation {
  const charted = chartMeasuresOf(item);
  if (!charted.some((name) => m[name] !== undefined)) {
    throw validation(`measurements must include at least one of ${charted.join(", ")} for this item`);
  }
  const fits = sizesOf(item).map((size, i) => fitSize(item, size, i, m));
  const ranked = [...fits].sort(compareFits);
  const best = ranked[0];
  const nudged = nudgeFor(fits, best, fit);
  const chosen = nudged ?? best;
  // When preference moved us, the size that matches the body best is the natural alternative.
  const alternative = nudged ? best : alternativeFor(fits, ranked, best);
  const confidence = confidenceOf(best) - (nudged ? NUDGE_CONFIDENCE_COST : 0);
  const notes = [describeDimensions(chosen), describeChoice(chosen, best, alternative, fit), describeUnused(item, m)];
  return {
    recommended_size: chosen.size,
    confidence_score: round2(confidence),
    fit_notes: notes.filter(Boolean).join(" "),
    alternative_size: alternative.size,
    size_breakdown: breakdown(chosen),
  };
}

// ---------------------------------------------------------------------------------------------
// Limits. Not shown in the spec: behaviour when exceeded. We answer 429 RATE_LIMITED (sliding
// 60-second window over all authenticated requests) or 429 TRY_ON_LIMIT_REACHED (UTC calendar
// month), both with Retry-After in seconds.
// ---------------------------------------------------------------------------------------------

const MINUTE_MS = 60_000;

class SlidingWindow {
  private stamps: number[] = [];

  /** Records a request at `now`, or returns the seconds to wait when `limit` is reached. */
  take(now: number, limit: number): number | undefined {
    while (this.stamps.length > 0 && this.stamps[0] <= now - MINUTE_MS) this.stamps.shift();
    if (this.stamps.length >= limit) {
      return Math.max(1, Math.ceil((this.stamps[0] + MINUTE_MS - now) / 1000));
    }
    this.stamps.push(now);
    return undefined;
  }
}

function monthKey(ms: number): string {
  return new Date(ms).toISOString().slice(0, 7);
}

function secondsToNextMonth(ms: number): number {
  const d = new Date(ms);
  const next = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  return Math.max(1, Math.ceil((next - ms) / 1000));
}

// ---------------------------------------------------------------------------------------------
// Simulator
// ---------------------------------------------------------------------------------------------

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
      .on("GET", "/api/retailer/catalog", guarded((req) => this.listCatalog(req)))
      .on("POST", "/api/retailer/recommend", guarded((req) => this.recommend(req)))
      .on("POST", "/api/retailer/try-on", guarded((req) => this.tryOn(req)));
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
      `Rate limit of ${requestsPerMinute} requests per minute exceeded on the ${this.plan} plan; retry in ${retryAfter} s`,
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
