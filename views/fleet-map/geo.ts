import { geoDistance, geoMercator, type GeoProjection } from "d3-geo";

/** Map geometry for the fleet view: framing, marker shapes, hit testing. Pure: no DOM. */

export interface Box {
  minLat: number;
  maxLat: number;
  minLon: number;
  maxLon: number;
}

/** Mercator is unusable near the poles; frames are kept inside these latitudes. */
const MAX_LAT = 84;
const WORLD: Box = { minLat: -56, maxLat: 76, minLon: -180, maxLon: 180 };

export function boxOf(points: ReadonlyArray<{ lat: number; lon: number }>): Box | null {
  if (points.length === 0) return null;
  const box = { minLat: 90, maxLat: -90, minLon: 180, maxLon: -180 };
  for (const p of points) {
    if (p.lat < box.minLat) box.minLat = p.lat;
    if (p.lat > box.maxLat) box.maxLat = p.lat;
    if (p.lon < box.minLon) box.minLon = p.lon;
    if (p.lon > box.maxLon) box.maxLon = p.lon;
  }
  return box;
}

export function unionBox(a: Box | null | undefined, b: Box | null | undefined): Box | null {
  if (!a) return b ?? null;
  if (!b) return a;
  return {
    minLat: Math.min(a.minLat, b.minLat),
    maxLat: Math.max(a.maxLat, b.maxLat),
    minLon: Math.min(a.minLon, b.minLon),
    maxLon: Math.max(a.maxLon, b.maxLon),
  };
}

/**
 * Grows a box to at least `minSpan` degrees of latitude (and the matching longitude at that
 * latitude) around its centre, so a single drone or a tight cluster still shows its surroundings.
 */
export function ensureSpan(box: Box, minSpan: number): Box {
  const midLat = (box.minLat + box.maxLat) / 2;
  const midLon = (box.minLon + box.maxLon) / 2;
  const latSpan = Math.max(box.maxLat - box.minLat, minSpan);
  const lonSpan = Math.max(box.maxLon - box.minLon, minSpan / Math.max(0.2, Math.cos((midLat * Math.PI) / 180)));
  return {
    minLat: Math.max(-MAX_LAT, midLat - latSpan / 2),
    maxLat: Math.min(MAX_LAT, midLat + latSpan / 2),
    minLon: Math.max(-180, midLon - lonSpan / 2),
    maxLon: Math.min(180, midLon + lonSpan / 2),
  };
}

/** Smallest frame (degrees of latitude, about 2 km): one drone or a tight group still fills the map. */
export const MIN_SPAN_DEG = 0.02;

/** A Mercator projection fitting the box (or the world) into width × height with `padding` px on every side. */
export function fitProjection(box: Box | null, width: number, height: number, padding: number): GeoProjection {
  const frame = box ? ensureSpan(box, MIN_SPAN_DEG) : WORLD;
  const corners = {
    type: "MultiPoint" as const,
    coordinates: [
      [frame.minLon, clampLat(frame.minLat)],
      [frame.maxLon, clampLat(frame.maxLat)],
      [frame.minLon, clampLat(frame.maxLat)],
      [frame.maxLon, clampLat(frame.minLat)],
    ],
  };
  const pad = Math.min(padding, width / 4, height / 4);
  return geoMercator().fitExtent(
    [
      [pad, pad],
      [width - pad, height - pad],
    ],
    corners,
  );
}

function clampLat(lat: number): number {
  return Math.max(-MAX_LAT, Math.min(MAX_LAT, lat));
}

/** A scale bar: a round distance (km) and its length in px, at most maxPx long, measured at the map centre. */
export function scaleBar(
  projection: GeoProjection,
  width: number,
  height: number,
  maxPx: number,
): { km: number; px: number } | null {
  const a = projection.invert?.([width / 2, height / 2]);
  const b = projection.invert?.([width / 2 + 100, height / 2]);
  if (!a || !b) return null;
  const kmPer100 = geoDistance(a, b) * 6371.0088;
  if (!(kmPer100 > 0)) return null;
  const maxKm = (kmPer100 * maxPx) / 100;
  const exp = 10 ** Math.floor(Math.log10(maxKm));
  const km = [5, 2, 1].map((m) => m * exp).find((k) => k <= maxKm) ?? exp;
  return { km, px: (km / kmPer100) * 100 };
}

// ---- markers (one path string per group of drones) ----

export type Shape = "circle" | "square" | "diamond" | "triangle";
export const SHAPES: readonly Shape[] = ["circle", "square", "diamond", "triangle"];

const f = (n: number) => Math.round(n * 10) / 10;

/** One closed sub-path per marker; the shape is centred on (x, y) with "radius" r. */
export function shapePath(shape: Shape, x: number, y: number, r: number): string {
  switch (shape) {
    case "square": {
      const a = r * 0.85;
      return `M${f(x - a)},${f(y - a)}h${f(2 * a)}v${f(2 * a)}h${f(-2 * a)}Z`;
    }
    case "diamond": {
      const a = r * 1.15;
      return `M${f(x)},${f(y - a)}L${f(x + a)},${f(y)}L${f(x)},${f(y + a)}L${f(x - a)},${f(y)}Z`;
    }
    case "triangle": {
      const a = r * 1.2;
      return `M${f(x)},${f(y - a)}L${f(x + a * 0.95)},${f(y + a * 0.7)}L${f(x - a * 0.95)},${f(y + a * 0.7)}Z`;
    }
    default:
      return circlePath(x, y, r);
  }
}

export function circlePath(x: number, y: number, r: number): string {
  return `M${f(x - r)},${f(y)}a${f(r)},${f(r)} 0 1,0 ${f(2 * r)},0a${f(r)},${f(r)} 0 1,0 ${f(-2 * r)},0Z`;
}

/** An arc around (x, y) from 12 o'clock, clockwise, covering `percent` of the circle ("" for 0). */
export function batteryArcPath(x: number, y: number, r: number, percent: number): string {
  const p = Math.max(0, Math.min(100, percent));
  if (p <= 0) return "";
  if (p >= 99.5) return `M${f(x)},${f(y - r)}a${f(r)},${f(r)} 0 1,1 0,${f(2 * r)}a${f(r)},${f(r)} 0 1,1 0,${f(-2 * r)}`;
  const angle = (p / 100) * 2 * Math.PI;
  const ex = x + r * Math.sin(angle);
  const ey = y - r * Math.cos(angle);
  return `M${f(x)},${f(y - r)}A${f(r)},${f(r)} 0 ${p > 50 ? 1 : 0},1 ${f(ex)},${f(ey)}`;
}

/** Number of sub-paths (markers) in a path built by the functions above. */
export function countSubpaths(d: string): number {
  return (d.match(/M/g) ?? []).length;
}

/**
 * Marker radius by how crowded the map is and how wide it is drawn: a narrow map keeps its
 * markers smaller, or a fanned-out group would cover the country it stands in.
 */
export function markerRadius(count: number, width = 800): number {
  const base = count <= 150 ? 6 : count <= 1000 ? 4.5 : 2.6;
  return Math.round(base * Math.max(0.65, Math.min(1, width / 640)) * 10) / 10;
}

/** Map height for a width: narrow maps are taller, so a frame fitted to a wide fleet is not squeezed flat. */
export function mapHeight(width: number): number {
  return Math.round(Math.max(220, Math.min(480, width * (width < 560 ? 0.8 : 0.62))));
}

// ---- overlapping markers ----

const GOLDEN_ANGLE = Math.PI * (3 - Math.sqrt(5));

/**
 * Display positions for markers: one closer than `minDist` px to a marker already placed moves to
 * the first free spot on a sunflower spiral around its true position (earlier markers keep their
 * place), so stacked drones stay visible and pickable. Above `maxCount` markers nothing is moved:
 * at that density no spreading could separate them.
 */
export function spreadOverlaps(
  xs: Float64Array,
  ys: Float64Array,
  minDist: number,
  maxCount = 800,
): { x: Float64Array; y: Float64Array; moved: number } {
  const x = Float64Array.from(xs);
  const y = Float64Array.from(ys);
  if (xs.length > maxCount || minDist <= 0) return { x, y, moved: 0 };
  const cells = new Map<number, number[]>();
  const cellOf = (v: number) => Math.floor(v / minDist);
  const key = (cx: number, cy: number) => (cx + 4096) * 8192 + (cy + 4096);
  const limit = minDist * minDist;
  const free = (px: number, py: number) => {
    const cx = cellOf(px);
    const cy = cellOf(py);
    for (let gx = cx - 1; gx <= cx + 1; gx++) {
      for (let gy = cy - 1; gy <= cy + 1; gy++) {
        for (const j of cells.get(key(gx, gy)) ?? []) if ((x[j] - px) ** 2 + (y[j] - py) ** 2 < limit) return false;
      }
    }
    return true;
  };
  let moved = 0;
  for (let i = 0; i < xs.length; i++) {
    if (!Number.isFinite(xs[i]) || !Number.isFinite(ys[i])) continue;
    if (!free(xs[i], ys[i])) {
      for (let k = 1; k <= 600; k++) {
        const r = minDist * 0.56 * Math.sqrt(k);
        const px = xs[i] + r * Math.cos(k * GOLDEN_ANGLE);
        const py = ys[i] + r * Math.sin(k * GOLDEN_ANGLE);
        if (free(px, py)) {
          x[i] = px;
          y[i] = py;
          moved++;
          break;
        }
      }
    }
    const k = key(cellOf(x[i]), cellOf(y[i]));
    const list = cells.get(k);
    if (list) list.push(i);
    else cells.set(k, [i]);
  }
  return { x, y, moved };
}

// ---- hit testing and keyboard movement in screen space ----

/** A uniform grid over projected points for nearest-point lookups (hover, click). */
export class PointGrid {
  private readonly cells = new Map<number, number[]>();

  constructor(
    private readonly xs: Float64Array,
    private readonly ys: Float64Array,
    private readonly cell = 24,
  ) {
    for (let i = 0; i < xs.length; i++) {
      const key = this.key(Math.floor(xs[i] / cell), Math.floor(ys[i] / cell));
      const list = this.cells.get(key);
      if (list) list.push(i);
      else this.cells.set(key, [i]);
    }
  }

  private key(cx: number, cy: number): number {
    return (cx + 4096) * 8192 + (cy + 4096);
  }

  /** Index of the nearest point within maxDist px, or -1. */
  nearest(x: number, y: number, maxDist: number): number {
    const reach = Math.ceil(maxDist / this.cell);
    const cx = Math.floor(x / this.cell);
    const cy = Math.floor(y / this.cell);
    let best = -1;
    let bestD = maxDist * maxDist;
    for (let gx = cx - reach; gx <= cx + reach; gx++) {
      for (let gy = cy - reach; gy <= cy + reach; gy++) {
        for (const i of this.cells.get(this.key(gx, gy)) ?? []) {
          const d = (this.xs[i] - x) ** 2 + (this.ys[i] - y) ** 2;
          if (d <= bestD) {
            bestD = d;
            best = i;
          }
        }
      }
    }
    return best;
  }
}

export type Direction = "left" | "right" | "up" | "down";

/**
 * The point an arrow key moves to: the closest one lying in that direction, where being off the
 * axis costs twice as much as distance along it. Points at the same spot are visited in index order.
 */
export function neighborInDirection(
  xs: ArrayLike<number>,
  ys: ArrayLike<number>,
  from: number,
  dir: Direction,
): number {
  const x0 = xs[from];
  const y0 = ys[from];
  let best = -1;
  let bestScore = Infinity;
  for (let i = 0; i < xs.length; i++) {
    if (i === from) continue;
    const dx = xs[i] - x0;
    const dy = ys[i] - y0;
    let along: number;
    let across: number;
    if (dir === "right" || dir === "left") {
      along = dir === "right" ? dx : -dx;
      across = Math.abs(dy);
    } else {
      along = dir === "down" ? dy : -dy;
      across = Math.abs(dx);
    }
    // Same spot: step through the stack in index order (right/down forward, left/up back).
    if (along === 0 && across === 0) {
      const forward = dir === "right" || dir === "down";
      if (forward ? i > from : i < from) along = 1e-6 * Math.abs(i - from);
      else continue;
    }
    if (along <= 0) continue;
    const score = along + 2 * across;
    if (score < bestScore) {
      bestScore = score;
      best = i;
    }
  }
  return best;
}
