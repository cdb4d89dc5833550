import { ViewBridge, type ToolResult } from "../shared/bridge.js";
import { h, perFrame, replaceChildren } from "../shared/dom.js";
import { humanize, isObject, num, str, type Json } from "../shared/format.js";
import { isErrorResult, structuredOf, textOf } from "../shared/result.js";
import { followTheme } from "../shared/theme.js";
import {
  chartRows,
  confidencePercent,
  fitWordsOf,
  itemFromResult,
  measurementsOf,
  sizeOrder,
  type FitItem,
} from "./bands.js";
import { chartTable, rowFigure, rowHeader } from "./render.js";

/**
 * Fit card for sizing_recommend_size: the item's size chart with the person's measurements on
 * it. The chart comes from the result (size_chart / item.size_chart) or, when the result lacks
 * it, from sizing_get_catalog through the host.
 */

const CATALOG_PAGE = 200;
const CATALOG_PAGES = 10;

const bridge = new ViewBridge({ name: "switchboard-fit-card", version: "1.0.0" });
followTheme(bridge);

const ui = {
  root: h("main", { class: "fit" }),
  summary: h("section", { class: "summary" }, h("p", { class: "muted" }, "Waiting for the recommendation…")),
  chart: h("section", { class: "chart", "aria-label": "Size chart with your measurements" }),
  notes: h("section", { class: "notes" }),
  error: h("div", { class: "error-box", role: "alert", hidden: true }),
};
ui.root.append(ui.error, ui.summary, ui.chart, ui.notes);
document.body.append(ui.root);

let toolArgs: Json = {};
let rec: Json | null = null;
let item: FitItem | null = null;
let chartNote = "";
let lastWidth = 0;

bridge.on("toolinput", (p) => {
  toolArgs = p.arguments ?? {};
  if (rec) render();
});
bridge.on("toolresult", (r) => void open(r));
bridge.on("toolcancelled", () => showError("The recommendation was cancelled."));
bridge
  .connect()
  .catch((err: unknown) =>
    showError(`Could not connect to the host: ${err instanceof Error ? err.message : String(err)}`),
  );

function showError(text: string): void {
  ui.error.textContent = text;
  ui.error.hidden = false;
}

async function open(result: ToolResult): Promise<void> {
  if (isErrorResult(result)) return showError(textOf(result) || "The recommendation failed.");
  const sc = structuredOf(result);
  if (!sc || !str(sc.recommended_size)) return showError("This result holds no size recommendation.");
  rec = sc;
  item = itemFromResult(sc);
  chartNote = "";
  render();
  if (!item.chart) {
    const id = str(sc.clothing_item_id) ?? str(toolArgs.clothing_item_id);
    const found = id && bridge.canCallTools ? await findInCatalog(id) : null;
    chartNote = "";
    if (found?.chart) item = found;
    else chartNote = "The size chart of this item is not available here, so only the recommendation is shown.";
    render();
  }
}

/** Pages through sizing_get_catalog for the item's size chart. */
async function findInCatalog(id: string): Promise<FitItem | null> {
  let offset: number | undefined = 0;
  for (let page = 0; page < CATALOG_PAGES && offset !== undefined; page++) {
    chartNote = "Loading the size chart…";
    let result: ToolResult;
    try {
      result = await bridge.callServerTool({ name: "sizing_get_catalog", arguments: { limit: CATALOG_PAGE, offset } });
    } catch {
      return null;
    }
    const sc = structuredOf(result);
    if (result.isError || !sc || !Array.isArray(sc.items)) return null;
    const found = sc.items.find((i) => isObject(i) && i._id === id);
    if (isObject(found)) return itemFromResult(found);
    offset = num(sc.nextOffset);
  }
  return null;
}

function render(): void {
  if (!rec || !item) return;
  ui.error.hidden = true;
  const recommended = str(rec.recommended_size)!;
  const alternative = str(rec.alternative_size);
  const fitWords = fitWordsOf(rec.size_breakdown);
  const confidence = confidencePercent(rec.confidence_score);
  const preferred = str(toolArgs.preferred_fit) ?? str(rec.preferred_fit);

  const title = item.name
    ? [h("h1", {}, item.name), item.brand ? h("p", { class: "muted small" }, item.brand) : null]
    : [h("h1", {}, "Size recommendation")];
  const meter = h(
    "div",
    {
      class: "meter",
      role: "meter",
      "aria-valuemin": 0,
      "aria-valuemax": 100,
      "aria-valuenow": confidence ?? 0,
      "aria-label": "Confidence",
    },
    h("div", { class: "meter-fill" }),
  );
  (meter.firstChild as HTMLElement).style.width = `${confidence ?? 0}%`;
  replaceChildren(
    ui.summary,
    ...title,
    h(
      "div",
      { class: "pick row" },
      h(
        "div",
        { class: "size-badge recommended", "data-size": recommended },
        h("span", { class: "small muted" }, "Recommended"),
        h("strong", {}, recommended),
      ),
      alternative && alternative !== recommended
        ? h(
            "div",
            { class: "size-badge alternative", "data-size": alternative },
            h("span", { class: "small muted" }, "Alternative"),
            h("strong", {}, alternative),
          )
        : null,
      confidence !== undefined
        ? h("div", { class: "confidence" }, h("span", { class: "small muted" }, `Confidence ${confidence}%`), meter)
        : null,
    ),
    h(
      "p",
      { class: "fit-line" },
      fitWords.overall ? h("span", {}, "Overall fit: ", h("strong", {}, fitWords.overall)) : null,
      preferred ? h("span", { class: "muted" }, ` · you prefer a ${preferred} fit`) : null,
    ),
  );
  renderChart(recommended, alternative, fitWords);
  const notes = str(rec.fit_notes);
  replaceChildren(
    ui.notes,
    ...(notes ? [h("h2", {}, "Why this size"), h("p", {}, notes)] : []),
    ...(chartNote ? [h("p", { class: "muted small" }, chartNote)] : []),
  );
}

function renderChart(recommended: string, alternative: string | undefined, fitWords: Record<string, string>): void {
  const chart = item?.chart;
  if (!chart) {
    replaceChildren(ui.chart);
    return;
  }
  const measurements = measurementsOf(rec?.measurements, toolArgs.measurements);
  const rows = chartRows(chart, measurements, {
    recommended,
    alternative,
    availableSizes: item?.availableSizes,
    fitWords,
  });
  const width = Math.max(260, Math.floor(ui.chart.clientWidth || ui.root.clientWidth - 24 || 480));
  lastWidth = width;
  const charted = new Set(rows.map((r) => r.measure));
  const unused = Object.keys(measurements).filter((m) => !charted.has(m));
  replaceChildren(
    ui.chart,
    h("h2", {}, "Your measurements on the size chart"),
    h(
      "p",
      { class: "legend small muted row" },
      h("span", { class: "key key-recommended", "aria-hidden": "true" }),
      "recommended",
      h("span", { class: "key key-alternative", "aria-hidden": "true" }),
      "alternative",
      h("span", { class: "key key-you", "aria-hidden": "true" }),
      "you",
    ),
    ...rows.flatMap((row) => [rowHeader(row), rowFigure(row, width)]),
    unused.length
      ? h(
          "p",
          { class: "muted small" },
          `${unused.map(humanize).join(" and ")} ${unused.length > 1 ? "are" : "is"} ` +
            "not part of this item's size chart.",
        )
      : null,
    chartTable(chart, sizeOrder(chart, item?.availableSizes), recommended, alternative),
  );
}

const rerender = perFrame(() => render());
new ResizeObserver(() => {
  if (rec && Math.abs(Math.floor(ui.chart.clientWidth) - lastWidth) >= 1) rerender();
}).observe(ui.chart);
