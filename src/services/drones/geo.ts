/** Pure geography helpers for the drone tools. Coordinates are WGS84 degrees; distances in km. */

/** Mean Earth radius (IUGG), km. */
export const EARTH_RADIUS_KM = 6371.0088;

export interface Point {
  latitude: number;
  longitude: number;
}

export interface BoundingBox {
  minLatitude: number;
  maxLatitude: number;
  minLongitude: number;
  maxLongitude: number;
}

const toRadians = (deg: number) => (deg * Math.PI) / 180;

/** Great-circle distance between two points by the haversine formula, in km. */
export function haversineKm(a: Point, b: Point): number {
  const dLat = toRadians(b.latitude - a.latitude);
  const dLon = toRadians(b.longitude - a.longitude);
  const h =
    Math.sin(dLat / 2) ** 2 +
    Math.cos(toRadians(a.latitude)) * Math.cos(toRadians(b.latitude)) * Math.sin(dLon / 2) ** 2;
  return 2 * EARTH_RADIUS_KM * Math.asin(Math.min(1, Math.sqrt(h)));
}

/** True when the value carries a usable latitude/longitude pair. */
export function hasPosition(value: { latitude?: unknown; longitude?: unknown }): value is Point {
  const { latitude, longitude } = value;
  return (
    typeof latitude === "number" &&
    typeof longitude === "number" &&
    Number.isFinite(latitude) &&
    Number.isFinite(longitude) &&
    Math.abs(latitude) <= 90 &&
    Math.abs(longitude) <= 180
  );
}

/** Smallest latitude/longitude box holding every point (null when there is none). Does not wrap the antimeridian. */
export function boundingBox(points: readonly Point[]): BoundingBox | null {
  if (points.length === 0) return null;
  const box: BoundingBox = { minLatitude: 90, maxLatitude: -90, minLongitude: 180, maxLongitude: -180 };
  for (const p of points) {
    box.minLatitude = Math.min(box.minLatitude, p.latitude);
    box.maxLatitude = Math.max(box.maxLatitude, p.latitude);
    box.minLongitude = Math.min(box.minLongitude, p.longitude);
    box.maxLongitude = Math.max(box.maxLongitude, p.longitude);
  }
  return box;
}

/** Items with a position, nearest first, each with its distance in km (rounded to metres). */
export function nearestTo<T extends { latitude?: unknown; longitude?: unknown }>(
  origin: Point,
  items: readonly T[],
  limit: number,
  maxDistanceKm = Infinity,
): Array<T & { distanceKm: number }> {
  return items
    .filter((item): item is T & Point => hasPosition(item))
    .map((item) => ({ ...item, distanceKm: roundKm(haversineKm(origin, item)) }))
    .filter((item) => item.distanceKm <= maxDistanceKm)
    .sort((a, b) => a.distanceKm - b.distanceKm)
    .slice(0, limit);
}

function roundKm(km: number): number {
  return Math.round(km * 1000) / 1000;
}
