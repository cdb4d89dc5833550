import { h } from "../shared/dom.js";
import type { MapDrone } from "./model.js";
import { recordRows, summaryLine } from "./record.js";

/** The hover/focus tooltip and the pinned details panel of a drone. */

export function tooltipContent(d: MapDrone): HTMLElement {
  return h("div", {}, h("strong", {}, d.name), h("div", { class: "muted small" }, summaryLine(d)));
}

export function detailsContent(d: MapDrone, onClose: () => void): HTMLElement {
  const close = h("button", { type: "button", "aria-label": `Close details of ${d.name}` }, "Close");
  close.addEventListener("click", onClose);
  const list = h("dl", { class: "record" });
  for (const [k, v] of recordRows(d)) list.append(h("dt", {}, k), h("dd", {}, v));
  return h("div", { class: "card" }, h("div", { class: "row spread" }, h("h2", {}, d.name), close), list);
}
