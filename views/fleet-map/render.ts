import { s } from "../shared/dom.js";
import { formatRoundKm } from "../shared/format.js";
import { basemapPaths } from "./basemap.js";
import {
  batteryArcPath,
  boxOf,
  circlePath,
  fitProjection,
  markerRadius,
  PointGrid,
  scaleBar,
  shapePath,
  SHAPES,
  spreadOverlaps,
  unionBox,
  type Box,
} from "./geo.js";
import { isLowBattery, type FleetModel, type MapDrone } from "./model.js";
import { placeContext } from "./place-layer.js";

/**
 * Draws the fleet as SVG. Markers are grouped: one <path> per status (plus one per battery ring
 * kind and one for alert badges), so 5,000 drones cost a handful of elements. Interaction uses the
 * projected coordinates returned in the scene, not per-marker elements.
 */

export interface MapScene {
  svg: SVGSVGElement;
  drones: MapDrone[];
  /** Where each drone's marker is drawn (overlapping markers are fanned out). */
  xs: Float64Array;
  ys: Float64Array;
  /** Markers drawn away from their true position. */
  moved: number;
  grid: PointGrid;
  radius: number;
  cursor: SVGGElement;
  hover: SVGPathElement;
}

/** Above this many markers, battery is shown only as a ring on low-battery drones. */
export const DETAIL_LIMIT = 1000;

function frameOf(model: FleetModel, drones: MapDrone[]): Box | null {
  let box = boxOf(drones);
  if (model.origin) box = unionBox(box, boxOf([model.origin]));
  if (!box && model.box) box = model.box;
  return box;
}

const PADDING = 30;

/**
 * Projects the drones and fans out overlaps. Fanned markers that spill over an edge refit the map
 * with that much more padding, a few times over (a refit changes the fans), so none is clipped.
 */
function layout(model: FleetModel, drones: MapDrone[], width: number, height: number, ringR: number) {
  const frame = frameOf(model, drones);
  const place = (padding: number) => {
    const projection = fitProjection(frame, width, height, padding);
    const trueX = new Float64Array(drones.length);
    const trueY = new Float64Array(drones.length);
    drones.forEach((d, i) => {
      const [x, y] = projection([d.lon, d.lat]) ?? [NaN, NaN];
      trueX[i] = x;
      trueY[i] = y;
    });
    return { projection, trueX, trueY, ...spreadOverlaps(trueX, trueY, 2 * ringR + 1) };
  };
  // The ring, and the alert badge at the upper right, stay inside the edge.
  const margin = ringR + 4;
  let padding = PADDING;
  let placed = place(padding);
  for (let pass = 0; pass < 4 && placed.moved; pass++) {
    let overflow = 0;
    for (let i = 0; i < drones.length; i++) {
      overflow = Math.max(
        overflow,
        margin - placed.x[i],
        placed.x[i] - (width - margin),
        margin - placed.y[i],
        placed.y[i] - (height - margin),
      );
    }
    if (overflow <= 0) break;
    padding += overflow + 2;
    placed = place(padding);
  }
  return placed;
}

export function drawMap(
  model: FleetModel,
  drones: MapDrone[],
  slots: Map<string, number>,
  width: number,
  height: number,
): MapScene {
  const r = markerRadius(drones.length, width);
  const ringR = drones.length > DETAIL_LIMIT ? r + 1.6 : r + 2.8;
  const { projection, trueX, trueY, x: xs, y: ys, moved } = layout(model, drones, width, height, ringR);
  const { land, borders } = basemapPaths(projection, width, height);

  const svg = s("svg", {
    class: "map",
    viewBox: `0 0 ${width} ${height}`,
    width,
    height,
    role: "group",
    "aria-roledescription": "map",
    "aria-label":
      `Map of ${drones.length} drone${drones.length === 1 ? "" : "s"}. ` +
      "Tab to the map, then use the arrow keys to move between drones and Enter to show details.",
  });
  svg.append(
    s("rect", { class: "sea", width, height }),
    s("path", { class: "land", d: land }),
    s("path", { class: "borders", d: borders }),
  );

  if (model.mode === "summary" && model.box) svg.append(boxOutline(projection, model.box));
  if (moved) svg.append(leaderLines(trueX, trueY, xs, ys));
  if (model.mode === "nearest" && model.origin) svg.append(...placeContext(model, drones, projection, width, height));
  if (model.origin) svg.append(nearestLines(model, drones, xs, ys, projection));
  svg.append(...batteryRings(model, drones, xs, ys, r));
  svg.append(...markerGroups(drones, xs, ys, r, slots));
  svg.append(alertBadges(drones, xs, ys, r));
  if (model.mode === "nearest") svg.append(...nearestHighlights(drones, xs, ys, r));
  if (model.origin) svg.append(originMark(projection, model.origin));
  svg.append(scaleAndCredit(projection, width, height));

  const hover = s("path", { class: "hover-ring", d: "" });
  const cursor = s(
    "g",
    { class: "cursor", tabindex: drones.length ? 0 : -1, role: "button", "aria-label": "No drone selected" },
    s("path", { class: "cursor-ring", d: circlePath(0, 0, r + 5) }),
  );
  cursor.setAttribute("visibility", "hidden");
  svg.append(hover, cursor);

  return { svg, drones, xs, ys, moved, grid: new PointGrid(xs, ys), radius: r, cursor, hover };
}

/** Thin lines from a fanned-out marker back to the drone's true position. */
function leaderLines(trueX: Float64Array, trueY: Float64Array, xs: Float64Array, ys: Float64Array): SVGElement {
  let d = "";
  for (let i = 0; i < xs.length; i++) {
    if (Math.abs(xs[i] - trueX[i]) + Math.abs(ys[i] - trueY[i]) < 1) continue;
    d += `M${trueX[i].toFixed(1)},${trueY[i].toFixed(1)}L${xs[i].toFixed(1)},${ys[i].toFixed(1)}`;
  }
  return s("path", { class: "leader", d });
}

function boxOutline(projection: ReturnType<typeof fitProjection>, box: Box): SVGElement {
  const [x0, y0] = projection([box.minLon, box.maxLat]) ?? [0, 0];
  const [x1, y1] = projection([box.maxLon, box.minLat]) ?? [0, 0];
  return s("rect", {
    class: "bbox",
    x: Math.min(x0, x1),
    y: Math.min(y0, y1),
    width: Math.abs(x1 - x0),
    height: Math.abs(y1 - y0),
  });
}

function nearestLines(
  model: FleetModel,
  drones: MapDrone[],
  xs: Float64Array,
  ys: Float64Array,
  projection: ReturnType<typeof fitProjection>,
): SVGElement {
  const [ox, oy] = projection([model.origin!.lon, model.origin!.lat]) ?? [0, 0];
  const d = drones
    .map((dr, i) => (dr.rank ? `M${ox.toFixed(1)},${oy.toFixed(1)}L${xs[i].toFixed(1)},${ys[i].toFixed(1)}` : ""))
    .join("");
  return s("path", { class: "nearest-line", d });
}

function batteryRings(
  model: FleetModel,
  drones: MapDrone[],
  xs: Float64Array,
  ys: Float64Array,
  r: number,
): SVGElement[] {
  const low = model.lowBatteryThreshold;
  if (drones.length > DETAIL_LIMIT) {
    const d = drones.map((dr, i) => (isLowBattery(dr, low) ? circlePath(xs[i], ys[i], r + 1.6) : "")).join("");
    return [s("path", { class: "ring-low dense", d })];
  }
  const ringR = r + 2.8;
  const track: string[] = [];
  const level: string[] = [];
  const lowLevel: string[] = [];
  drones.forEach((dr, i) => {
    if (dr.battery === undefined) return;
    track.push(circlePath(xs[i], ys[i], ringR));
    (isLowBattery(dr, low) ? lowLevel : level).push(batteryArcPath(xs[i], ys[i], ringR, dr.battery));
  });
  return [
    s("path", { class: "ring-track", d: track.join("") }),
    s("path", { class: "ring-level", d: level.join("") }),
    s("path", { class: "ring-low", d: lowLevel.join("") }),
  ];
}

function markerGroups(
  drones: MapDrone[],
  xs: Float64Array,
  ys: Float64Array,
  r: number,
  slots: Map<string, number>,
): SVGElement[] {
  const groups = new Map<string, string[]>();
  drones.forEach((dr, i) => {
    const list = groups.get(dr.status) ?? [];
    const slot = slots.get(dr.status) ?? 0;
    list.push(shapePath(SHAPES[slot % SHAPES.length], xs[i], ys[i], r));
    groups.set(dr.status, list);
  });
  return [...groups].map(([status, parts]) =>
    s("path", {
      class: `marker st-${slots.get(status) ?? 0}`,
      "data-status": status,
      "data-count": parts.length,
      d: parts.join(""),
    }),
  );
}

function alertBadges(drones: MapDrone[], xs: Float64Array, ys: Float64Array, r: number): SVGElement {
  const a = Math.max(3.2, r * 0.8);
  let count = 0;
  const d = drones
    .map((dr, i) => {
      if (dr.openAlerts.length === 0) return "";
      count++;
      const x = xs[i] + r * 0.95;
      const y = ys[i] - r * 0.95;
      return `M${x.toFixed(1)},${(y - a).toFixed(1)}l${a.toFixed(1)},${(1.7 * a).toFixed(1)}h${(-2 * a).toFixed(1)}Z`;
    })
    .join("");
  return s("path", { class: "alert-badge", "data-count": count, d });
}

function nearestHighlights(drones: MapDrone[], xs: Float64Array, ys: Float64Array, r: number): SVGElement[] {
  const rings: string[] = [];
  const labels: SVGElement[] = [];
  drones.forEach((dr, i) => {
    if (!dr.rank) return;
    rings.push(circlePath(xs[i], ys[i], r + 6.5));
    labels.push(
      s(
        "text",
        {
          class: "rank-label",
          x: (xs[i] + r + 8).toFixed(1),
          y: (ys[i] - r - 4).toFixed(1),
          "data-rank": dr.rank,
          "data-drone-id": dr.id,
        },
        String(dr.rank),
      ),
    );
  });
  // Labels last-to-first so rank 1 paints on top where they overlap.
  return [s("path", { class: "nearest-ring", d: rings.join("") }), ...labels.reverse()];
}

function originMark(projection: ReturnType<typeof fitProjection>, origin: { lat: number; lon: number }): SVGElement {
  const [x, y] = projection([origin.lon, origin.lat]) ?? [0, 0];
  return s(
    "g",
    { class: "origin", transform: `translate(${x.toFixed(1)},${y.toFixed(1)})` },
    s("path", { class: "origin-cross", d: "M-11,0h7M4,0h7M0,-11v7M0,4v7" }),
    s("circle", { class: "origin-dot", r: 3.5 }),
    s("title", {}, "Query point"),
  );
}

function scaleAndCredit(projection: ReturnType<typeof fitProjection>, width: number, height: number): SVGElement {
  const g = s("g", { class: "scale" });
  const bar = scaleBar(projection, width, height, Math.min(120, width / 4));
  if (bar) {
    const y = height - 12;
    g.append(
      s("path", { class: "scale-bar", d: `M10,${y - 4}v4h${bar.px.toFixed(1)}v-4` }),
      s("text", { class: "scale-text", x: 10, y: y - 7 }, formatRoundKm(bar.km)),
    );
  }
  g.append(s("text", { class: "credit", x: width - 6, y: height - 6, "text-anchor": "end" }, "Natural Earth"));
  return g;
}
