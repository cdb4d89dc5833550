import { h, s } from "../shared/dom.js";
import { humanize } from "../shared/format.js";
import { describeRow, scale, type ChartRow, type SizeChart } from "./bands.js";

/** SVG strips (one per measurement) and the size chart table of the fit card. */

const ROW_HEIGHT = 62;
const STRIP_TOP = 22;
const STRIP_HEIGHT = 22;

export function rowFigure(row: ChartRow, width: number): HTMLElement {
  const margin = 12;
  const x = scale(row.domain, margin, width - margin);
  const svg = s("svg", {
    class: "strip",
    width,
    height: ROW_HEIGHT,
    viewBox: `0 0 ${width} ${ROW_HEIGHT}`,
    role: "img",
    "aria-label": describeRow(row),
  });
  const y0 = STRIP_TOP;
  const y1 = STRIP_TOP + STRIP_HEIGHT;

  const labels: SVGElement[] = [];
  for (const band of row.bands) {
    const bx = x(band.lo);
    const bw = Math.max(1, x(band.hi) - bx);
    svg.append(
      s(
        "rect",
        {
          class: `band band-${band.role}`,
          x: bx.toFixed(1),
          y: y0,
          width: bw.toFixed(1),
          height: STRIP_HEIGHT,
          rx: 3,
          "data-size": band.size,
          "data-lo": band.lo,
          "data-hi": band.hi,
        },
        s("title", {}, `${band.size}: ${band.lo}–${band.hi} cm`),
      ),
    );
    if (bw >= 18)
      labels.push(
        s(
          "text",
          {
            class: `band-label band-label-${band.role}`,
            x: (bx + bw / 2).toFixed(1),
            y: y0 + 15,
            "text-anchor": "middle",
          },
          band.size,
        ),
      );
  }

  // Boundary values under the strip, skipping those that would collide.
  let lastX = -Infinity;
  const bounds = [...new Set(row.bands.flatMap((b) => [b.lo, b.hi]))].sort((a, b) => a - b);
  for (const v of bounds) {
    const bx = x(v);
    if (bx - lastX < 24) continue;
    lastX = bx;
    svg.append(s("text", { class: "tick", x: bx.toFixed(1), y: y1 + 13, "text-anchor": "middle" }, String(v)));
  }

  // The value line goes under the size labels (which carry a halo), the marker and value on top.
  if (row.value !== undefined)
    svg.append(
      s("line", {
        class: "value-line",
        x1: x(row.value).toFixed(1),
        x2: x(row.value).toFixed(1),
        y1: y0 - 6,
        y2: y1 + 4,
        "data-value": row.value,
      }),
    );
  svg.append(...labels);
  if (row.value !== undefined) {
    const vx = x(row.value);
    const labelX = Math.min(width - 26, Math.max(26, vx));
    svg.append(
      s("path", { class: "value-mark", d: `M${(vx - 5).toFixed(1)},${y0 - 10}h10l-5,6Z` }),
      s("text", { class: "value-label", x: labelX.toFixed(1), y: y0 - 12, "text-anchor": "middle" }, `${row.value} cm`),
    );
  }
  return h("figure", { class: "row-figure", "data-measure": row.measure }, svg);
}

export function rowHeader(row: ChartRow): HTMLElement {
  const p = row.placement;
  const where = !p
    ? "not measured"
    : p.position === "inside"
      ? `in ${p.size}`
      : p.position === "below"
        ? "below the smallest size"
        : p.position === "above"
          ? "above the largest size"
          : "between sizes";
  return h(
    "div",
    { class: "row-head row" },
    h("strong", {}, humanize(row.measure)),
    row.value !== undefined ? h("span", {}, `${row.value} cm`) : null,
    h("span", { class: "muted small" }, where),
    row.fitWord ? h("span", { class: `fit-word fit-${row.fitWord.replace(/[^a-z]/gi, "")}` }, row.fitWord) : null,
  );
}

export function chartTable(chart: SizeChart, order: string[], recommended?: string, alternative?: string): HTMLElement {
  const measures = [...new Set(order.flatMap((size) => Object.keys(chart[size])))];
  const head = h(
    "tr",
    {},
    h("th", { scope: "col" }, "Size"),
    ...measures.map((m) => h("th", { scope: "col" }, `${humanize(m)} (cm)`)),
  );
  const rows = order.map((size) =>
    h(
      "tr",
      { class: size === recommended ? "is-recommended" : size === alternative ? "is-alternative" : undefined },
      h(
        "th",
        { scope: "row" },
        size,
        size === recommended ? " (recommended)" : size === alternative ? " (alternative)" : "",
      ),
      ...measures.map((m) => h("td", {}, chart[size][m] ? `${chart[size][m][0]}–${chart[size][m][1]}` : "—")),
    ),
  );
  return h(
    "details",
    { class: "chart-table" },
    h("summary", {}, "Size chart as a table"),
    h("table", {}, h("thead", {}, head), h("tbody", {}, ...rows)),
  );
}
