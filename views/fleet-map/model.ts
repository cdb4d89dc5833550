import { isObject, num, str, type Json } from "../shared/format.js";
import type { Box } from "./geo.js";

/**
 * What the fleet map draws, normalised from the structured content of drones_list_drones,
 * drones_find_nearest or drones_fleet_summary. Pure: no DOM.
 */

export type FleetMode = "list" | "nearest" | "summary";

export interface AlertInfo {
  id?: string;
  severity?: string;
  type?: string;
  message?: string;
}

export interface MapDrone {
  id: string;
  name: string;
  status: string;
  battery?: number;
  lat: number;
  lon: number;
  /** find_nearest only: distance from the query point and 1-based rank. */
  distanceKm?: number;
  rank?: number;
  /** The record as the tool returned it (pass-through fields included). */
  record: Json;
  openAlerts: AlertInfo[];
}

export interface SummaryInfo {
  totalDrones: number;
  byStatus: Record<string, number>;
  averageBatteryPercent: number | null;
  lowBattery: Array<{ id: string; name: string; status: string; battery: number }>;
  dronesWithoutPosition: number;
}

export interface FleetModel {
  mode: FleetMode;
  drones: MapDrone[];
  /** Records that came without a usable position (not drawn). */
  unpositioned: number;
  origin?: { lat: number; lon: number };
  summary?: SummaryInfo;
  /** The summary's bounding box: lets the map frame the fleet before positions arrive. */
  box?: Box;
  page?: { total: number; matched: number; nextOffset?: number };
  lowBatteryThreshold: number;
}

export const DEFAULT_LOW_BATTERY = 20;

export function normalizeStatus(value: unknown): string {
  const s = typeof value === "string" ? value.trim().toLowerCase() : "";
  return s || "unknown";
}

export function toMapDrone(raw: unknown): MapDrone | null {
  if (!isObject(raw)) return null;
  const lat = num(raw.latitude);
  const lon = num(raw.longitude);
  if (lat === undefined || lon === undefined || Math.abs(lat) > 90 || Math.abs(lon) > 180) return null;
  const id = str(raw._id) ?? str(raw.id) ?? "";
  const battery = num(raw.battery_level);
  return {
    id,
    name: str(raw.name)?.trim() || id || "unnamed drone",
    status: normalizeStatus(raw.status),
    battery: battery === undefined ? undefined : Math.min(100, Math.max(0, battery)),
    lat,
    lon,
    distanceKm: num(raw.distanceKm),
    record: raw,
    openAlerts: embeddedAlerts(raw),
  };
}

function dronesFrom(list: unknown): { drones: MapDrone[]; unpositioned: number } {
  const drones: MapDrone[] = [];
  let unpositioned = 0;
  for (const raw of Array.isArray(list) ? list : []) {
    const d = toMapDrone(raw);
    if (d) drones.push(d);
    else if (isObject(raw)) unpositioned++;
  }
  return { drones, unpositioned };
}

function boxFrom(value: unknown): Box | undefined {
  if (!isObject(value)) return undefined;
  const minLat = num(value.minLatitude);
  const maxLat = num(value.maxLatitude);
  const minLon = num(value.minLongitude);
  const maxLon = num(value.maxLongitude);
  if (minLat === undefined || maxLat === undefined || minLon === undefined || maxLon === undefined) return undefined;
  return { minLat, maxLat, minLon, maxLon };
}

function summaryFrom(sc: Json): SummaryInfo {
  const byStatus: Record<string, number> = {};
  if (isObject(sc.byStatus))
    for (const [k, v] of Object.entries(sc.byStatus))
      if (num(v) !== undefined) byStatus[normalizeStatus(k)] = (byStatus[normalizeStatus(k)] ?? 0) + (v as number);
  const lowBattery = (Array.isArray(sc.lowBattery) ? sc.lowBattery : []).filter(isObject).map((d) => ({
    id: str(d._id) ?? "",
    name: str(d.name) ?? str(d._id) ?? "unnamed drone",
    status: normalizeStatus(d.status),
    battery: num(d.battery_level) ?? 0,
  }));
  return {
    totalDrones: num(sc.totalDrones) ?? 0,
    byStatus,
    averageBatteryPercent: num(sc.averageBatteryPercent) ?? null,
    lowBattery,
    dronesWithoutPosition: num(sc.dronesWithoutPosition) ?? 0,
  };
}

/** The model for a tool's structured content, or null when it is none of the three shapes. */
export function modelFrom(sc: Json): FleetModel | null {
  if (isObject(sc.origin) && Array.isArray(sc.drones)) {
    const lat = num(sc.origin.latitude);
    const lon = num(sc.origin.longitude);
    const { drones, unpositioned } = dronesFrom(sc.drones);
    drones.forEach((d, i) => (d.rank = i + 1));
    return {
      mode: "nearest",
      drones,
      unpositioned,
      origin: lat !== undefined && lon !== undefined ? { lat, lon } : undefined,
      lowBatteryThreshold: DEFAULT_LOW_BATTERY,
    };
  }
  if (isObject(sc.byStatus) && num(sc.totalDrones) !== undefined) {
    return {
      mode: "summary",
      drones: [],
      unpositioned: 0,
      summary: summaryFrom(sc),
      box: boxFrom(sc.boundingBox),
      lowBatteryThreshold: num(sc.lowBatteryThresholdPercent) ?? DEFAULT_LOW_BATTERY,
    };
  }
  if (Array.isArray(sc.drones)) {
    const { drones, unpositioned } = dronesFrom(sc.drones);
    const total = num(sc.total) ?? drones.length + unpositioned;
    return {
      mode: "list",
      drones,
      unpositioned,
      page: { total, matched: num(sc.matched) ?? total, nextOffset: num(sc.nextOffset) },
      lowBatteryThreshold: DEFAULT_LOW_BATTERY,
    };
  }
  return null;
}

/** Adds a page of drone records (from drones_list_drones), skipping ids already drawn. */
export function addDrones(model: FleetModel, records: unknown): number {
  const seen = new Set(model.drones.map((d) => d.id));
  const { drones, unpositioned } = dronesFrom(records);
  let added = 0;
  for (const d of drones) {
    if (d.id && seen.has(d.id)) continue;
    seen.add(d.id);
    model.drones.push(d);
    added++;
  }
  model.unpositioned += unpositioned;
  return added;
}

const OPEN = new Set(["open", "new", "active", "triggered", "unacknowledged"]);

function alertInfo(a: Json): AlertInfo {
  return { id: str(a._id) ?? str(a.id), severity: str(a.severity), type: str(a.type), message: str(a.message) };
}

/** Alerts the record itself carries (a pass-through field), when the upstream sends them. */
export function embeddedAlerts(record: Json): AlertInfo[] {
  for (const key of ["open_alerts", "openAlerts", "alerts"]) {
    const value = record[key];
    if (Array.isArray(value)) {
      return value
        .filter(isObject)
        .filter((a) => key !== "alerts" || a.status === undefined || OPEN.has(normalizeStatus(a.status)))
        .map(alertInfo);
    }
    const count = num(value);
    if (count !== undefined && count > 0) return Array.from({ length: Math.min(count, 99) }, () => ({}));
  }
  return [];
}

/** Marks drones with the open alerts of a drones_list_alerts page; returns how many drones have one. */
export function applyAlerts(model: FleetModel, alerts: unknown): number {
  const byDrone = new Map<string, AlertInfo[]>();
  for (const a of Array.isArray(alerts) ? alerts : []) {
    if (!isObject(a) || !OPEN.has(normalizeStatus(a.status))) continue;
    const droneId = str(a.drone_id) ?? str(a.droneId);
    if (!droneId) continue;
    const list = byDrone.get(droneId) ?? [];
    list.push(alertInfo(a));
    byDrone.set(droneId, list);
  }
  for (const d of model.drones) {
    const found = byDrone.get(d.id);
    if (found) d.openAlerts = found;
  }
  return model.drones.filter((d) => d.openAlerts.length > 0).length;
}

export function isLowBattery(d: MapDrone, threshold: number): boolean {
  return d.battery !== undefined && d.battery < threshold;
}

// ---- status styling ----

/** Fixed slots for the statuses the service uses, so colours mean the same thing in every view. */
export const KNOWN_STATUSES = ["active", "idle", "charging", "maintenance", "offline"] as const;
export const STATUS_SLOTS = 8;

/** Palette slot per status: known statuses first, others in order of appearance (wrapping). */
export function statusSlots(statuses: Iterable<string>): Map<string, number> {
  const slots = new Map<string, number>();
  KNOWN_STATUSES.forEach((s, i) => slots.set(s, i));
  let next = KNOWN_STATUSES.length;
  for (const s of statuses) {
    if (slots.has(s)) continue;
    slots.set(s, next % STATUS_SLOTS);
    next++;
  }
  return slots;
}

/** Statuses present (drawn drones, or the summary's counts before positions arrive), largest first. */
export function statusCounts(model: FleetModel): Array<{ status: string; count: number }> {
  const counts = new Map<string, number>();
  if (model.drones.length === 0 && model.summary) {
    for (const [s, n] of Object.entries(model.summary.byStatus)) counts.set(s, n);
  } else {
    for (const d of model.drones) counts.set(d.status, (counts.get(d.status) ?? 0) + 1);
  }
  return [...counts]
    .map(([status, count]) => ({ status, count }))
    .sort((a, b) => b.count - a.count || a.status.localeCompare(b.status));
}
