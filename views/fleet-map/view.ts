import { h } from "../shared/dom.js";
import type { FleetModel } from "./model.js";
import type { MapScene } from "./render.js";

/** The fleet map's DOM skeleton and the state its modules share. */

export interface FleetUi {
  title: HTMLElement;
  subtitle: HTMLElement;
  error: HTMLElement;
  legend: HTMLElement;
  mapBox: HTMLElement;
  tooltip: HTMLElement;
  details: HTMLElement;
  side: HTMLElement;
  footer: HTMLElement;
  live: HTMLElement;
}

export interface FleetState {
  model: FleetModel | null;
  scene: MapScene | null;
  slots: Map<string, number>;
  hiddenStatuses: Set<string>;
  /** Where the keyboard cursor is (a drone id), and whose record is pinned open. */
  selectedId: string | null;
  pinnedId: string | null;
  hoverIndex: number;
  /** Problems worth a word in the footer (a fetch that failed, a cap reached). */
  notes: string[];
}

export function createState(): FleetState {
  return {
    model: null,
    scene: null,
    slots: new Map(),
    hiddenStatuses: new Set(),
    selectedId: null,
    pinnedId: null,
    hoverIndex: -1,
    notes: [],
  };
}

export function createUi(): FleetUi {
  const ui: FleetUi = {
    title: h("h1", {}, "Fleet map"),
    subtitle: h("p", { class: "muted small" }, "Waiting for the tool result…"),
    error: h("div", { class: "error-box", role: "alert", hidden: true }),
    legend: h("div", { class: "legend", role: "group", "aria-label": "Drone statuses: press to show or hide" }),
    mapBox: h("div", { class: "map-box" }),
    tooltip: h("div", { class: "tooltip", hidden: true }),
    details: h("section", { class: "details", "aria-label": "Selected drone" }),
    side: h("section", { class: "side" }),
    footer: h("p", { class: "muted small footer", "aria-live": "polite" }),
    live: h("div", { class: "sr-only", "aria-live": "polite" }),
  };
  const hint = h(
    "p",
    { class: "muted small" },
    "Tab to the map, move between drones with the arrow keys, Enter shows details, Esc closes them.",
  );
  document.body.append(
    h(
      "main",
      { class: "fleet" },
      h("header", {}, ui.title, ui.subtitle),
      ui.error,
      ui.legend,
      ui.mapBox,
      hint,
      ui.details,
      ui.side,
      ui.footer,
      ui.live,
    ),
  );
  return ui;
}

export function showError(ui: FleetUi, text: string): void {
  ui.error.textContent = text;
  ui.error.hidden = false;
}
