import { isObject, num, str, type Json } from "../shared/format.js";

/**
 * The fit card's chart model: a size chart (size -> measurement -> [lower, upper] cm) turned into
 * one row per measurement, with the person's value placed on it. Pure: no DOM.
 */

export type BandRole = "recommended" | "alternative" | "other";

export interface Band {
  size: string;
  lo: number;
  hi: number;
  role: BandRole;
}

export interface Placement {
  /** The size whose band holds the value (the first one when bands touch). */
  size?: string;
  /** -1 at the band's lower edge, 0 in the middle, +1 at the upper edge. */
  offset?: number;
  position: "inside" | "below" | "above" | "between";
}

export interface ChartRow {
  measure: string;
  bands: Band[];
  domain: [number, number];
  value?: number;
  placement?: Placement;
  fitWord?: string;
}

export type SizeChart = Record<string, Record<string, [number, number]>>;

const MEASURE_ORDER = ["chest", "bust", "waist", "hips", "inseam"];

/** The chart with every malformed entry dropped (bands must be [lower, upper] numbers, lower ≤ upper). */
export function readSizeChart(value: unknown): SizeChart | null {
  if (!isObject(value)) return null;
  const chart: SizeChart = {};
  for (const [size, entry] of Object.entries(value)) {
    if (!isObject(entry)) continue;
    const bands: Record<string, [number, number]> = {};
    for (const [measure, range] of Object.entries(entry)) {
      if (!Array.isArray(range) || range.length !== 2) continue;
      const lo = num(range[0]);
      const hi = num(range[1]);
      if (lo !== undefined && hi !== undefined && lo <= hi) bands[measure] = [lo, hi];
    }
    if (Object.keys(bands).length) chart[size] = bands;
  }
  return Object.keys(chart).length ? chart : null;
}

/** Sizes in the item's own order (available_sizes), else by the lower bound of their first band. */
export function sizeOrder(chart: SizeChart, availableSizes?: string): string[] {
  const listed = (availableSizes ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s in chart);
  const rest = Object.keys(chart).filter((s) => !listed.includes(s));
  const firstLower = (s: string) => Object.values(chart[s])[0]?.[0] ?? 0;
  rest.sort((a, b) => firstLower(a) - firstLower(b));
  return [...listed, ...rest];
}

export function placeValue(bands: readonly Band[], value: number): Placement {
  const inside = bands.find((b) => value >= b.lo && value <= b.hi);
  if (inside) {
    const half = (inside.hi - inside.lo) / 2 || 1;
    return { size: inside.size, offset: (value - (inside.lo + inside.hi) / 2) / half, position: "inside" };
  }
  const lowest = Math.min(...bands.map((b) => b.lo));
  const highest = Math.max(...bands.map((b) => b.hi));
  if (value < lowest) return { position: "below" };
  if (value > highest) return { position: "above" };
  return { position: "between" };
}

function measures(chart: SizeChart): string[] {
  const all = new Set(Object.values(chart).flatMap((entry) => Object.keys(entry)));
  return [...all].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
}

function rank(measure: string): number {
  const i = MEASURE_ORDER.indexOf(measure);
  return i < 0 ? MEASURE_ORDER.length : i;
}

export function chartRows(
  chart: SizeChart,
  measurements: Record<string, number>,
  pick: { recommended?: string; alternative?: string; availableSizes?: string; fitWords?: Record<string, string> },
): ChartRow[] {
  const order = sizeOrder(chart, pick.availableSizes);
  return measures(chart).map((measure) => {
    const bands: Band[] = order
      .filter((size) => chart[size][measure])
      .map((size) => {
        const [lo, hi] = chart[size][measure];
        const role: BandRole =
          size === pick.recommended ? "recommended" : size === pick.alternative ? "alternative" : "other";
        return { size, lo, hi, role };
      });
    const value = num(measurements[measure]);
    const points = [...bands.flatMap((b) => [b.lo, b.hi]), ...(value === undefined ? [] : [value])];
    const min = Math.min(...points);
    const max = Math.max(...points);
    const pad = Math.max(1, (max - min) * 0.04);
    return {
      measure,
      bands,
      domain: [min - pad, max + pad],
      value,
      placement: value === undefined ? undefined : placeValue(bands, value),
      fitWord: pick.fitWords?.[measure],
    };
  });
}

/** Maps a value of the domain onto [x0, x1]. */
export function scale(domain: [number, number], x0: number, x1: number): (v: number) => number {
  const span = domain[1] - domain[0] || 1;
  return (v) => x0 + ((v - domain[0]) / span) * (x1 - x0);
}

/** confidence_score as a percentage: the sandbox sends 0-1; a service sending 0-100 is accepted. */
export function confidencePercent(score: unknown): number | undefined {
  const n = num(score);
  if (n === undefined || n < 0) return undefined;
  return Math.round(Math.min(100, n <= 1 ? n * 100 : n));
}

/** Fit words by measurement from size_breakdown ({chest_fit: "fitted", ...}), plus "overall". */
export function fitWordsOf(breakdown: unknown): Record<string, string> {
  const words: Record<string, string> = {};
  if (!isObject(breakdown)) return words;
  for (const [key, value] of Object.entries(breakdown)) {
    const word = str(value);
    if (!word || word === "n/a") continue;
    words[key.replace(/_fit$/, "")] = word;
  }
  return words;
}

/** Measurements (numbers only) from the tool's structured output or, failing that, its input. */
export function measurementsOf(...sources: unknown[]): Record<string, number> {
  for (const source of sources) {
    if (!isObject(source)) continue;
    const out: Record<string, number> = {};
    for (const [k, v] of Object.entries(source)) if (num(v) !== undefined) out[k] = v as number;
    if (Object.keys(out).length) return out;
  }
  return {};
}

export interface FitItem {
  name?: string;
  brand?: string;
  availableSizes?: string;
  chart: SizeChart | null;
}

/** The item's name and size chart from the result itself (size_chart or item.size_chart), when present. */
export function itemFromResult(sc: Json): FitItem {
  const item = isObject(sc.item) ? sc.item : sc;
  return {
    name: str(item.name),
    brand: str(item.brand),
    availableSizes: str(item.available_sizes),
    chart: readSizeChart(item.size_chart),
  };
}

export function describeRow(row: ChartRow): string {
  const sizes = row.bands.map((b) => `${b.size} ${b.lo}–${b.hi}`).join(", ");
  if (row.value === undefined) return `${row.measure}: not measured. Sizes: ${sizes} cm.`;
  const p = row.placement!;
  const where =
    p.position === "inside"
      ? `inside ${p.size}`
      : p.position === "below"
        ? "below the smallest size"
        : p.position === "above"
          ? "above the largest size"
          : "between two sizes";
  return `${row.measure} ${row.value} cm, ${where}${row.fitWord ? ` (${row.fitWord})` : ""}. Sizes: ${sizes} cm.`;
}
