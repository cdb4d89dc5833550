import {
  CHART_MEASURES,
  type CatalogItem,
  type ChartMeasure,
  type Measurements,
  type PreferredFit,
  type Range,
} from "./catalog.js";
import { validation } from "./errors.js";

/**
 * The recommendation engine: scores every size of an item against the measurements, picks the
 * best one (moved one size by preferred_fit when the body leans that way) and explains the choice.
 */

export interface Recommendation {
  recommended_size: string;
  confidence_score: number;
  fit_notes: string;
  alternative_size: string;
  size_breakdown: { chest_fit: string; waist_fit: string; overall: string };
}

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
  const subject = `${list.charAt(0).toUpperCase()}${list.slice(1)} ${plural ? "are" : "is"}`;
  return `${subject} not part of this item's size chart, so ${plural ? "they were" : "it was"} not used.`;
}

function describeChoice(chosen: SizeFit, best: SizeFit, alternative: SizeFit, fit: PreferredFit): string | undefined {
  if (chosen !== best) {
    return (
      `You asked for a ${fit} fit, so ${chosen.size} is recommended over ${best.size}, ` +
      "which matches your measurements more closely."
    );
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
