import { ViewBridge, type ToolResult } from "../shared/bridge.js";
import { perFrame, replaceChildren } from "../shared/dom.js";
import { num, type Json } from "../shared/format.js";
import { mapHeight } from "./geo.js";
import { isErrorResult, structuredOf, textOf } from "../shared/result.js";
import { followTheme } from "../shared/theme.js";
import { MapInteraction } from "./interaction.js";
import { addDrones, applyAlerts, modelFrom, statusSlots } from "./model.js";
import { renderPanels } from "./panels.js";
import { drawMap } from "./render.js";
import { createState, createUi, showError } from "./view.js";

/**
 * Fleet map view for drones_list_drones, drones_find_nearest and drones_fleet_summary. Draws what
 * the tool returned; fetches more only through the host, with read-only tools: the positions a
 * summary lacks (or the other pages of a list) and the open alerts.
 */

const PAGE_SIZE = 500;
const MAX_PAGES = 20;
const MAX_ALERT_PAGES = 4;

const bridge = new ViewBridge({ name: "switchboard-fleet-map", version: "1.0.0" });
followTheme(bridge);
const ui = createUi();
const st = createState();
const interaction = new MapInteraction(ui, st);
let toolArgs: Json = {};
let closed = false;
let lastWidth = 0;

bridge.on("toolinput", (p) => (toolArgs = p.arguments ?? {}));
bridge.on("toolresult", (r) => void onResult(r));
bridge.on("toolcancelled", () => showError(ui, "The tool call was cancelled."));
bridge.on("teardown", () => {
  closed = true;
});
bridge
  .connect()
  .catch((err: unknown) =>
    showError(ui, `Could not connect to the host: ${err instanceof Error ? err.message : String(err)}`),
  );

async function onResult(result: ToolResult): Promise<void> {
  if (isErrorResult(result)) return showError(ui, textOf(result) || "The tool returned an error.");
  const sc = structuredOf(result);
  const model = sc ? modelFrom(sc) : null;
  if (!model) return showError(ui, "This tool result holds no drone data to draw.");
  ui.error.hidden = true;
  st.model = model;
  refreshSlots();
  redraw();
  if (!bridge.canCallTools) return;
  if (model.mode === "summary") await loadDrones({});
  await loadAlerts();
}

function refreshSlots(): void {
  st.slots = statusSlots([
    ...Object.keys(st.model?.summary?.byStatus ?? {}),
    ...(st.model?.drones ?? []).map((d) => d.status),
  ]);
}

function redraw(): void {
  const model = st.model;
  if (!model) return;
  const width = Math.max(280, Math.floor(ui.mapBox.clientWidth || 600));
  const height = mapHeight(width);
  lastWidth = width;
  const visible = model.drones.filter((d) => !st.hiddenStatuses.has(d.status));
  const started = performance.now();
  st.scene = drawMap(model, visible, st.slots, width, height);
  replaceChildren(ui.mapBox, st.scene.svg, ui.tooltip);
  ui.mapBox.dataset.renderMs = String(Math.round(performance.now() - started));
  ui.mapBox.dataset.drones = String(visible.length);
  interaction.restore();
  renderPanels(ui, st);
}

const redrawSoon = perFrame(redraw);

new ResizeObserver(() => {
  if (st.model && Math.abs(Math.floor(ui.mapBox.clientWidth) - lastWidth) >= 1) redrawSoon();
}).observe(ui.mapBox);

ui.legend.addEventListener("click", (e) => {
  const status = (e.target as Element).closest<HTMLButtonElement>("button[data-status]")?.dataset.status;
  if (!status) return;
  if (!st.hiddenStatuses.delete(status)) st.hiddenStatuses.add(status);
  redraw();
  ui.legend.querySelector<HTMLButtonElement>(`button[data-status="${CSS.escape(status)}"]`)?.focus();
});

ui.side.addEventListener("click", (e) => {
  const target = e.target as Element;
  const id = target.closest<HTMLElement>("[data-drone-id]")?.dataset.droneId;
  if (id) return interaction.select(interaction.indexOf(id), { pin: true, focus: true });
  const loadAll = target.closest<HTMLButtonElement>('button[data-action="load-all"]');
  if (loadAll) {
    loadAll.disabled = true;
    void loadDrones(filtersFromArgs(), st.model?.page?.nextOffset ?? 0);
  }
});

function filtersFromArgs(): Json {
  const filters: Json = {};
  for (const key of ["status", "minBattery", "maxBattery"])
    if (toolArgs[key] !== undefined) filters[key] = toolArgs[key];
  return filters;
}

/** Pages through drones_list_drones (a summary has no positions; a list may have more pages). */
async function loadDrones(filters: Json, offset = 0): Promise<void> {
  let next: number | undefined = offset;
  for (let page = 0; page < MAX_PAGES && next !== undefined && st.model && !closed; page++) {
    ui.footer.textContent = `Loading drone positions… ${st.model.drones.length.toLocaleString("en")} so far`;
    const sc = structuredOf(await safeCall("drones_list_drones", { ...filters, limit: PAGE_SIZE, offset: next }));
    if (!sc || !st.model) break;
    addDrones(st.model, sc.drones);
    next = num(sc.nextOffset);
    if (st.model.page) st.model.page = { ...st.model.page, nextOffset: next };
    refreshSlots();
    redrawSoon();
  }
  if (next !== undefined && st.model && !closed) st.notes.push(`stopped loading after ${MAX_PAGES} pages`);
  redrawSoon();
}

/** Marks the drones that have open alerts (drones_list_alerts, status open). */
async function loadAlerts(): Promise<void> {
  const alerts: unknown[] = [];
  let next: number | undefined = 0;
  for (let page = 0; page < MAX_ALERT_PAGES && next !== undefined && !closed; page++) {
    const sc = structuredOf(await safeCall("drones_list_alerts", { status: "open", limit: PAGE_SIZE, offset: next }));
    if (!sc || !Array.isArray(sc.alerts)) return;
    alerts.push(...sc.alerts);
    next = num(sc.nextOffset);
  }
  if (!st.model || closed) return;
  applyAlerts(st.model, alerts);
  redrawSoon();
}

async function safeCall(name: string, args: Json): Promise<ToolResult | undefined> {
  try {
    const result = await bridge.callServerTool({ name, arguments: args });
    if (!result.isError) return result;
    st.notes.push(`${name} failed: ${textOf(result, 160) || "error"}`);
  } catch (err) {
    st.notes.push(`${name} failed: ${err instanceof Error ? err.message : String(err)}`);
  }
  return undefined;
}
