import { geoCircle, geoPath } from "d3-geo";
import { s } from "../shared/dom.js";
import { formatRoundKm } from "../shared/format.js";
import { type fitProjection, scaleBar } from "./geo.js";
import type { FleetModel, MapDrone } from "./model.js";
import { distanceKm, PLACES, ringDistances } from "./places.js";

const KM_PER_DEGREE = 111.195;

/**
 * What a zoomed-in map lacks (at 1 km, land is a blank): range rings around the query point at the
 * scale bar's distance, and the names of the cities in the frame.
 */
export function placeContext(
  model: FleetModel,
  drones: MapDrone[],
  projection: ReturnType<typeof fitProjection>,
  width: number,
  height: number,
): SVGElement[] {
  const origin = model.origin!;
  const bar = scaleBar(projection, width, height, Math.min(120, width / 4));
  const farthest = Math.max(0, ...drones.map((d) => distanceKm(origin, d)));
  const rings = bar ? ringDistances(bar.km, farthest) : [];
  const path = geoPath(projection);
  const out: SVGElement[] = [];
  if (rings.length) {
    const d = rings.map(
      (km) =>
        path(
          geoCircle()
            .center([origin.lon, origin.lat])
            .radius(km / KM_PER_DEGREE)(),
        ) ?? "",
    );
    out.push(s("path", { class: "range-ring", d: d.join("") }));
    for (const km of rings) {
      // On the ring's top, or its bottom when the top is off the map (the scale bar keeps the bottom-left).
      const [x, top] = projection([origin.lon, origin.lat + km / KM_PER_DEGREE]) ?? [NaN, NaN];
      const [, bottom] = projection([origin.lon, origin.lat - km / KM_PER_DEGREE]) ?? [NaN, NaN];
      const y = top > 10 ? top - 3 : bottom + 12 < height - 22 ? bottom + 12 : NaN;
      if (Number.isFinite(y) && x < width - 30)
        out.push(s("text", { class: "range-label", x: (x + 3).toFixed(1), y: y.toFixed(1) }, formatRoundKm(km)));
    }
  }
  for (const place of PLACES) {
    const [x, y] = projection([place.lon, place.lat]) ?? [NaN, NaN];
    if (!(x > 6 && x < width - 6 && y > 14 && y < height - 24)) continue;
    const left = x > width - 90;
    out.push(
      s(
        "g",
        { class: "place", "data-place": place.name },
        s("circle", { class: "place-dot", cx: x.toFixed(1), cy: y.toFixed(1), r: 2.5 }),
        s(
          "text",
          {
            class: "place-label",
            x: (left ? x - 6 : x + 6).toFixed(1),
            y: (y + 12).toFixed(1),
            "text-anchor": left ? "end" : "start",
          },
          place.name,
        ),
      ),
    );
  }
  return out;
}
