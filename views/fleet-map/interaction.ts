import { replaceChildren } from "../shared/dom.js";
import { detailsContent, tooltipContent } from "./details.js";
import { circlePath, neighborInDirection, type Direction } from "./geo.js";
import type { MapDrone } from "./model.js";
import { summaryLine } from "./record.js";
import type { FleetState, FleetUi } from "./view.js";

/**
 * Pointer and keyboard on the map, all by delegation on the map box (no listener per marker):
 * hover shows a drone's record in a tooltip, click pins it; the one focusable cursor moves between
 * drones with the arrow keys (roving focus: Tab enters and leaves the map), Enter pins, Esc unpins.
 */

const ARROWS: Record<string, Direction> = { ArrowLeft: "left", ArrowRight: "right", ArrowUp: "up", ArrowDown: "down" };

export class MapInteraction {
  constructor(
    private readonly ui: FleetUi,
    private readonly st: FleetState,
  ) {
    const box = ui.mapBox;
    box.addEventListener("pointermove", (e) => this.onPointerMove(e));
    box.addEventListener("pointerleave", () => this.onPointerLeave());
    box.addEventListener("click", (e) => this.select(this.pointIndex(e), { pin: true }));
    box.addEventListener("focusin", () => this.showTooltip(this.indexOf(st.selectedId)));
    box.addEventListener("focusout", () => {
      if (st.hoverIndex < 0) this.hideTooltip();
    });
    box.addEventListener("keydown", (e) => this.onKey(e));
  }

  indexOf(id: string | null): number {
    return this.st.scene && id !== null ? this.st.scene.drones.findIndex((d) => d.id === id) : -1;
  }

  /** After a redraw: put the cursor back on the selected drone, keep or drop the pinned record. */
  restore(): void {
    this.st.hoverIndex = -1;
    this.placeCursor(false);
    const pinned = this.indexOf(this.st.pinnedId);
    if (this.st.pinnedId && pinned < 0) this.unpin(false);
    else if (pinned >= 0) this.pin(this.st.scene!.drones[pinned]);
  }

  select(i: number, opts: { pin?: boolean; focus?: boolean }): void {
    const scene = this.st.scene;
    if (!scene || i < 0) return;
    const d = scene.drones[i];
    this.st.selectedId = d.id;
    if (opts.pin) this.pin(d);
    this.placeCursor(opts.focus ?? false);
    this.showTooltip(i);
    this.ui.live.textContent = `${d.name}, ${summaryLine(d)}`;
  }

  private placeCursor(focus: boolean): void {
    const scene = this.st.scene;
    if (!scene) return;
    let i = this.indexOf(this.st.selectedId);
    if (i < 0 && scene.drones.length) {
      i = 0;
      this.st.selectedId = scene.drones[0].id;
    }
    const { cursor } = scene;
    if (i < 0) {
      cursor.setAttribute("visibility", "hidden");
      return;
    }
    const d = scene.drones[i];
    cursor.setAttribute("visibility", "visible");
    cursor.setAttribute("transform", `translate(${scene.xs[i].toFixed(1)},${scene.ys[i].toFixed(1)})`);
    cursor.setAttribute("aria-label", `${d.name}: ${summaryLine(d)}. Drone ${i + 1} of ${scene.drones.length}.`);
    cursor.classList.toggle("pinned", this.st.pinnedId === d.id);
    if (focus) cursor.focus();
  }

  private pin(d: MapDrone): void {
    this.st.pinnedId = d.id;
    replaceChildren(
      this.ui.details,
      detailsContent(d, () => this.unpin(true)),
    );
    this.st.scene?.cursor.classList.toggle("pinned", this.st.selectedId === d.id);
  }

  private unpin(refocus: boolean): void {
    this.st.pinnedId = null;
    replaceChildren(this.ui.details);
    this.st.scene?.cursor.classList.remove("pinned");
    if (refocus) this.st.scene?.cursor.focus();
  }

  private showTooltip(i: number): void {
    const scene = this.st.scene;
    if (!scene || i < 0) return;
    const { tooltip, mapBox } = this.ui;
    replaceChildren(tooltip, tooltipContent(scene.drones[i]));
    tooltip.hidden = false;
    const x = scene.xs[i];
    const y = scene.ys[i];
    const width = mapBox.clientWidth;
    const left = x > width * 0.6 ? x - tooltip.offsetWidth - 14 : Math.min(x + 14, width - tooltip.offsetWidth - 4);
    const top = y > 70 ? y - tooltip.offsetHeight - 10 : y + 14;
    tooltip.style.left = `${Math.max(4, left)}px`;
    tooltip.style.top = `${Math.max(4, top)}px`;
  }

  private hideTooltip(): void {
    this.ui.tooltip.hidden = true;
  }

  private pointIndex(e: MouseEvent): number {
    const scene = this.st.scene;
    if (!scene) return -1;
    const rect = scene.svg.getBoundingClientRect();
    const scale = scene.svg.viewBox.baseVal.width / (rect.width || 1);
    return scene.grid.nearest((e.clientX - rect.left) * scale, (e.clientY - rect.top) * scale, scene.radius + 8);
  }

  private onPointerMove(e: PointerEvent): void {
    const scene = this.st.scene;
    if (!scene) return;
    const i = this.pointIndex(e);
    if (i === this.st.hoverIndex) return;
    this.st.hoverIndex = i;
    scene.hover.setAttribute("d", i >= 0 ? circlePath(scene.xs[i], scene.ys[i], scene.radius + 3.5) : "");
    this.ui.mapBox.classList.toggle("pointing", i >= 0);
    if (i >= 0) this.showTooltip(i);
    else if (document.activeElement === scene.cursor) this.showTooltip(this.indexOf(this.st.selectedId));
    else this.hideTooltip();
  }

  private onPointerLeave(): void {
    this.st.hoverIndex = -1;
    this.st.scene?.hover.setAttribute("d", "");
    if (document.activeElement !== this.st.scene?.cursor) this.hideTooltip();
  }

  private onKey(e: KeyboardEvent): void {
    const scene = this.st.scene;
    if (!scene || e.target !== scene.cursor) return;
    const i = this.indexOf(this.st.selectedId);
    const last = scene.drones.length - 1;
    let next = -1;
    if (ARROWS[e.key]) next = neighborInDirection(scene.xs, scene.ys, i, ARROWS[e.key]);
    else if (e.key === "Home") next = 0;
    else if (e.key === "End") next = last;
    else if (e.key === "PageDown" || e.key === "n") next = i < last ? i + 1 : 0;
    else if (e.key === "PageUp" || e.key === "p") next = i > 0 ? i - 1 : last;
    else if (e.key === "Enter" || e.key === " ") {
      e.preventDefault();
      if (i >= 0) this.pin(scene.drones[i]);
      return;
    } else if (e.key === "Escape") {
      if (this.st.pinnedId) this.unpin(true);
      return;
    } else return;
    e.preventDefault();
    if (next >= 0) this.select(next, { focus: true, pin: this.st.pinnedId !== null });
  }
}
