import { h, replaceChildren, s } from "../shared/dom.js";
import { formatCoord, formatKm, formatPercent, plural } from "../shared/format.js";
import { shapePath, SHAPES } from "./geo.js";
import { statusCounts, type MapDrone } from "./model.js";
import { placeLine } from "./places.js";
import { summaryLine } from "./record.js";
import type { FleetState, FleetUi } from "./view.js";

/**
 * Everything around the map: title, legend (status toggles), the side lists (nearest first,
 * low battery, all drones) and the footer. Buttons carry data attributes; index.ts handles their
 * clicks by delegation.
 */

const LIST_LIMIT = 200;

export function renderPanels(ui: FleetUi, st: FleetState): void {
  renderHeader(ui, st);
  renderLegend(ui, st);
  renderSide(ui, st);
  renderFooter(ui, st);
}

function renderHeader(ui: FleetUi, { model }: FleetState): void {
  if (!model) return;
  if (model.mode === "nearest") {
    ui.title.textContent = "Nearest drones";
    ui.subtitle.textContent = model.origin
      ? `to ${formatCoord(model.origin.lat, model.origin.lon)} · ${placeLine(model.origin, formatKm)}`
      : "";
  } else if (model.mode === "summary") {
    const sum = model.summary!;
    ui.title.textContent = "Fleet summary";
    const average = sum.averageBatteryPercent === null ? "unknown" : formatPercent(sum.averageBatteryPercent);
    ui.subtitle.textContent = `${plural(sum.totalDrones, "drone")} · average battery ${average}`;
  } else {
    const page = model.page!;
    ui.title.textContent = "Drones";
    ui.subtitle.textContent =
      page.matched === page.total
        ? plural(page.total, "drone")
        : `${plural(page.matched, "drone")} matching, of ${page.total.toLocaleString("en")}`;
  }
}

export function swatch(slot: number): SVGSVGElement {
  return s(
    "svg",
    { class: "swatch", width: 14, height: 14, viewBox: "0 0 14 14", "aria-hidden": "true" },
    s("path", { class: `marker st-${slot}`, d: shapePath(SHAPES[slot % SHAPES.length], 7, 7, 4.6) }),
  );
}

function originKey(): SVGSVGElement {
  return s(
    "svg",
    { class: "swatch key-origin", width: 14, height: 14, viewBox: "-7 -7 14 14", "aria-hidden": "true" },
    s("path", { class: "origin-cross", d: "M-7,0h4M3,0h4M0,-7v4M0,3v4" }),
    s("circle", { class: "origin-dot", r: 2.2 }),
  );
}

function renderLegend(ui: FleetUi, st: FleetState): void {
  if (!st.model) return;
  const items = statusCounts(st.model).map(({ status, count }) =>
    h(
      "button",
      {
        type: "button",
        class: "legend-item",
        "data-status": status,
        "aria-pressed": String(!st.hiddenStatuses.has(status)),
      },
      swatch(st.slots.get(status) ?? 0),
      status,
      h("span", { class: "muted" }, count.toLocaleString("en")),
    ),
  );
  const keyItem = (icon: Element, text: string) => h("span", { class: "key-item" }, icon, text);
  const key = h(
    "span",
    { class: "legend-key muted small" },
    keyItem(h("span", { class: "key-ring", "aria-hidden": "true" }), "battery"),
    keyItem(h("span", { class: "key-ring low", "aria-hidden": "true" }), `below ${st.model.lowBatteryThreshold}%`),
    keyItem(h("span", { class: "key-alert", "aria-hidden": "true" }), "open alert"),
    st.model.origin ? keyItem(originKey(), "query point") : null,
  );
  replaceChildren(ui.legend, ...items, key);
}

function droneButton(d: MapDrone, label: string): HTMLElement {
  return h("li", {}, h("button", { type: "button", class: "drone-link", "data-drone-id": d.id }, label));
}

function stat(label: string, value: string): HTMLElement {
  return h(
    "div",
    { class: "stat" },
    h("div", { class: "stat-value" }, value),
    h("div", { class: "muted small" }, label),
  );
}

function renderSide(ui: FleetUi, { model }: FleetState): void {
  if (!model) return;
  const parts: Node[] = [];
  if (model.mode === "nearest") {
    const ranked = model.drones.filter((d) => d.rank !== undefined);
    parts.push(h("h2", {}, "Nearest first"));
    parts.push(
      ranked.length
        ? h(
            "ol",
            { class: "plain ranked" },
            ...ranked.map((d) =>
              droneButton(
                d,
                `${d.rank}. ${d.name} · ${formatKm(d.distanceKm ?? 0)} · ${d.status} · ${formatPercent(d.battery)}`,
              ),
            ),
          )
        : h("p", { class: "muted" }, "No drone matched."),
    );
  }
  if (model.mode === "summary") {
    const sum = model.summary!;
    parts.push(
      h(
        "div",
        { class: "stats" },
        stat("Drones", sum.totalDrones.toLocaleString("en")),
        stat("Average battery", sum.averageBatteryPercent === null ? "—" : formatPercent(sum.averageBatteryPercent)),
        stat(`Below ${model.lowBatteryThreshold}%`, String(sum.lowBattery.length)),
        // Only a count that says something: a fleet that is all on the map needs no "0" card.
        sum.dronesWithoutPosition ? stat("Without position", String(sum.dronesWithoutPosition)) : null,
      ),
    );
    if (sum.lowBattery.length) {
      const byId = new Map(model.drones.map((d) => [d.id, d]));
      parts.push(
        h("h2", {}, `Low battery (below ${model.lowBatteryThreshold}%)`),
        h(
          "ul",
          { class: "plain" },
          ...sum.lowBattery.slice(0, 12).map((low) => {
            const d = byId.get(low.id);
            const label = `${low.name} · ${formatPercent(low.battery)} · ${low.status}`;
            return d ? droneButton(d, label) : h("li", { class: "muted" }, label);
          }),
        ),
      );
    }
  }
  if (model.mode === "list" && model.page?.nextOffset !== undefined) {
    const more = h(
      "button",
      { type: "button", "data-action": "load-all" },
      `Load all ${model.page.matched.toLocaleString("en")} drones`,
    );
    parts.push(
      h(
        "p",
        { class: "row" },
        `Showing ${model.drones.length.toLocaleString("en")} of ${model.page.matched.toLocaleString("en")}.`,
        more,
      ),
    );
  }
  if (model.drones.length) {
    const list = [...model.drones].sort((a, b) => a.name.localeCompare(b.name)).slice(0, LIST_LIMIT);
    const first = model.drones.length > LIST_LIMIT ? `first ${LIST_LIMIT} of ` : "";
    const shown = `${first}${model.drones.length.toLocaleString("en")}`;
    parts.push(
      h(
        "details",
        { class: "all-drones" },
        h("summary", {}, `All drones as a list (${shown})`),
        h("ul", { class: "plain columns" }, ...list.map((d) => droneButton(d, `${d.name} · ${summaryLine(d)}`))),
      ),
    );
  }
  // Keep an open "all drones" list open across redraws.
  const wasOpen = ui.side.querySelector<HTMLDetailsElement>("details.all-drones")?.open ?? false;
  replaceChildren(ui.side, ...parts);
  const list = ui.side.querySelector<HTMLDetailsElement>("details.all-drones");
  if (list) list.open = wasOpen;
}

function renderFooter(ui: FleetUi, { model, scene, notes }: FleetState): void {
  if (!model) return;
  const withAlerts = model.drones.filter((d) => d.openAlerts.length).length;
  const parts = [`${plural(scene?.drones.length ?? 0, "drone")} on the map`];
  if (withAlerts) parts.push(`${withAlerts} with open alerts`);
  if (model.unpositioned) parts.push(`${model.unpositioned} without a position (not drawn)`);
  if (scene?.moved) parts.push("overlapping drones are fanned out around their position (thin lines lead to it)");
  ui.footer.textContent = [...parts, ...notes].join(" · ");
}
