import { geoPath, type GeoProjection } from "d3-geo";
import { feature, mesh } from "topojson-client";
import type { GeometryCollection, Topology } from "topojson-specification";
import atlas from "./countries-110m.json";

/**
 * The base map: Natural Earth 1:110m land and country borders, bundled into the view at build time
 * (scripts/build-views.mjs strips the country names). Nothing is fetched. countries-110m.json is
 * world-atlas 2.0.2's file (ISC, Mike Bostock; Natural Earth data, public domain), kept here rather
 * than installing the 8 MB package for its 108 KB.
 */

type Shapes = { land: GeoJSON.FeatureCollection | GeoJSON.Feature; borders: GeoJSON.MultiLineString };
let shapes: Shapes | undefined;

function load(): Shapes {
  if (shapes) return shapes;
  const topology = atlas as unknown as Topology<{ land: GeometryCollection; countries: GeometryCollection }>;
  shapes = {
    land: feature(topology, topology.objects.land),
    borders: mesh(topology, topology.objects.countries, (a, b) => a !== b),
  };
  return shapes;
}

/** SVG path data of land and inner borders, clipped to the viewport so zoomed-in maps stay small. */
export function basemapPaths(
  projection: GeoProjection,
  width: number,
  height: number,
): { land: string; borders: string } {
  const { land, borders } = load();
  const clipped = projection.clipExtent([
    [-4, -4],
    [width + 4, height + 4],
  ]);
  const path = geoPath(clipped).digits(1);
  const result = { land: path(land) ?? "", borders: path(borders) ?? "" };
  projection.clipExtent(null);
  return result;
}
