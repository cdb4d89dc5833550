import type { CatalogItem, CatalogPage, Recommendation, TryOnSession } from "./schemas.js";

/** Short text for people and models. Upstream free text (names, fit notes) is quoted as data. */

export function trimLine(text: string | undefined, max = 160): string {
  const flat = (text ?? "").replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** A JSON-quoted, one-line, trimmed copy of upstream text. */
export function quote(text: unknown, max = 160): string {
  return JSON.stringify(trimLine(typeof text === "string" ? text : String(text ?? ""), max));
}

/**
 * The spec does not give the range of confidence_score; the service sends 0-1. A value above 1 is
 * read as a percentage already.
 */
export function confidencePercent(score: number | undefined): number | undefined {
  if (typeof score !== "number" || !Number.isFinite(score)) return undefined;
  const pct = score <= 1 ? score * 100 : score;
  return Math.round(Math.min(100, Math.max(0, pct)));
}

export function sizesOf(item: CatalogItem): string {
  if (typeof item.available_sizes === "string" && item.available_sizes.trim()) {
    return item.available_sizes
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean)
      .join(", ");
  }
  return item.size_chart ? Object.keys(item.size_chart).join(", ") : "?";
}

function price(value: unknown): string {
  return typeof value === "number" ? value.toFixed(2) : "?";
}

function catalogLine(item: CatalogItem): string {
  const who = [item.category, item.gender].filter((v) => typeof v === "string" && v).join(", ");
  return (
    `- ${item._id}: ${quote(item.name ?? "(no name)", 80)} by ${quote(item.brand ?? "?", 40)}, ` +
    `${price(item.price)}${who ? ` (${who})` : ""}; sizes ${sizesOf(item)}`
  );
}

export function catalogText(page: CatalogPage): string {
  if (page.total === 0) return "No catalog items match. Try without category/gender/search, or another category.";
  const range = page.count === 0 ? "none in this page" : `${page.offset + 1}-${page.offset + page.count}`;
  const lines = [
    `${page.total} item(s) match; showing ${range} (names and brands quoted as sent by the shop):`,
    ...page.items.map(catalogLine),
  ];
  if (page.omitted > 0) {
    const more = page.nextOffset !== undefined ? `: call again with offset ${page.nextOffset} for more` : "";
    lines.push(`${page.omitted} matching item(s) omitted${more}.`);
  }
  return lines.join("\n");
}

function fitWords(r: { size_breakdown?: Recommendation["size_breakdown"] }): string | undefined {
  const b = r.size_breakdown;
  if (!b) return undefined;
  const parts = [
    b.chest_fit && b.chest_fit !== "n/a" ? `chest ${b.chest_fit}` : undefined,
    b.waist_fit && b.waist_fit !== "n/a" ? `waist ${b.waist_fit}` : undefined,
    b.overall && b.overall !== "n/a" ? `overall ${b.overall}` : undefined,
  ].filter(Boolean);
  return parts.length ? parts.join(", ") : undefined;
}

function confidenceWords(pct: number | undefined): string {
  if (pct === undefined) return "no confidence given";
  const feel = pct >= 80 ? "a confident match" : pct >= 60 ? "a fair match" : "a borderline match";
  return `${pct}% confidence, ${feel}`;
}

export function recommendationText(r: Recommendation, fit?: string): string {
  const pct = confidencePercent(r.confidence_score);
  const lines = [`I'd go with size ${r.recommended_size} (${confidenceWords(pct)})${fit ? ` for a ${fit} fit` : ""}.`];
  if (r.alternative_size && r.alternative_size !== r.recommended_size)
    lines.push(`If it doesn't feel right, the alternative is size ${r.alternative_size}.`);
  const words = fitWords(r);
  if (words) lines.push(`How it should fit: ${words}.`);
  if (r.fit_notes) lines.push(`Why, in the sizing service's words: ${quote(r.fit_notes, 600)}`);
  return lines.join("\n");
}

export function tryOnText(s: TryOnSession): string {
  const pct = confidencePercent(s.confidence_score);
  const lines = [
    `Try-on session ${s.session_id} saved${s.created_at ? ` at ${s.created_at}` : ""}: ` +
      `size ${s.recommended_size ?? "?"} (${confidenceWords(pct)}).`,
  ];
  if (s.fit_notes) lines.push(`Why, in the sizing service's words: ${quote(s.fit_notes, 600)}`);
  lines.push("This used one try-on of the plan's monthly allowance.");
  return lines.join("\n");
}
