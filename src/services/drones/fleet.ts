import { boundingBox, hasPosition, type BoundingBox, type Point } from "./geo.js";

/** Pure fleet computations over the drone list (GET /api/drones). battery_level is a percentage. */

export interface DroneLike {
  _id: string;
  name?: string;
  status?: string;
  battery_level?: number;
  latitude?: number;
  longitude?: number;
  [field: string]: unknown;
}

/** Case-, space- and hyphen-insensitive form of a status word: "In progress" -> "in_progress". */
function normalizeWord(value: unknown): string {
  return String(value ?? "")
    .trim()
    .toLowerCase()
    .replace(/[\s-]+/g, "_");
}

export function battery(d: { battery_level?: unknown }): number | undefined {
  return typeof d.battery_level === "number" && Number.isFinite(d.battery_level) ? d.battery_level : undefined;
}

export interface DroneFilter {
  status?: string;
  minBattery?: number;
  maxBattery?: number;
}

/** A battery bound excludes drones whose battery level is unknown. */
export function matchesDrone(d: DroneLike, f: DroneFilter): boolean {
  if (f.status !== undefined && normalizeWord(d.status) !== normalizeWord(f.status)) return false;
  if (f.minBattery !== undefined || f.maxBattery !== undefined) {
    const level = battery(d);
    if (level === undefined) return false;
    if (f.minBattery !== undefined && level < f.minBattery) return false;
    if (f.maxBattery !== undefined && level > f.maxBattery) return false;
  }
  return true;
}

/** Keeps records whose field equals the wanted value (status words compared loosely); undefined = no filter. */
export function matchesFields(record: Record<string, unknown>, wanted: Record<string, string | undefined>): boolean {
  return Object.entries(wanted).every(
    ([field, value]) => value === undefined || normalizeWord(record[field]) === normalizeWord(value),
  );
}

interface LowBatteryDrone {
  _id: string;
  name?: string;
  status?: string;
  battery_level: number;
}

export interface FleetSummary {
  totalDrones: number;
  byStatus: Record<string, number>;
  averageBatteryPercent: number | null;
  lowBatteryThresholdPercent: number;
  lowBatteryCount: number;
  lowBattery: LowBatteryDrone[];
  boundingBox: BoundingBox | null;
  dronesWithoutBattery: number;
  dronesWithoutPosition: number;
}

/**
 * Counts by status ("unknown" when missing), drones strictly below the threshold (lowest first),
 * the average battery, and the box around every drone with a position.
 */
export function fleetSummary(drones: readonly DroneLike[], lowBatteryThreshold = 20): FleetSummary {
  const byStatus: Record<string, number> = {};
  const levels: number[] = [];
  const low: LowBatteryDrone[] = [];
  const positions: Point[] = [];
  for (const d of drones) {
    const status = typeof d.status === "string" && d.status ? d.status : "unknown";
    byStatus[status] = (byStatus[status] ?? 0) + 1;
    const level = battery(d);
    if (level !== undefined) {
      levels.push(level);
      if (level < lowBatteryThreshold) {
        low.push({
          _id: d._id,
          ...(d.name !== undefined ? { name: d.name } : {}),
          ...(d.status !== undefined ? { status: d.status } : {}),
          battery_level: level,
        });
      }
    }
    if (hasPosition(d)) positions.push({ latitude: d.latitude, longitude: d.longitude });
  }
  low.sort((a, b) => a.battery_level - b.battery_level);
  const average = levels.length ? Math.round((levels.reduce((a, b) => a + b, 0) / levels.length) * 10) / 10 : null;
  return {
    totalDrones: drones.length,
    byStatus,
    averageBatteryPercent: average,
    lowBatteryThresholdPercent: lowBatteryThreshold,
    lowBatteryCount: low.length,
    lowBattery: low,
    boundingBox: boundingBox(positions),
    dronesWithoutBattery: drones.length - levels.length,
    dronesWithoutPosition: drones.length - positions.length,
  };
}

export interface Page<T> {
  items: T[];
  matched: number;
  offset: number;
  count: number;
  omitted: number;
  nextOffset?: number;
}

export function paginate<T>(items: readonly T[], offset: number, limit: number): Page<T> {
  const shown = items.slice(offset, offset + limit);
  const next = offset + shown.length;
  return {
    items: shown,
    matched: items.length,
    offset,
    count: shown.length,
    omitted: items.length - shown.length,
    ...(next < items.length ? { nextOffset: next } : {}),
  };
}
