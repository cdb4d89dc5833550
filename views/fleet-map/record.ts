import { displayValue, formatCoord, formatKm, formatPercent, humanize } from "../shared/format.js";
import type { MapDrone } from "./model.js";

/** A drone's record as display text (pure): the one-line summary and the rows of the details panel. */

const SHOWN_FIRST = new Set(["_id", "id", "name", "status", "battery_level", "latitude", "longitude", "distanceKm"]);
const MAX_ROWS = 40;

export function summaryLine(d: MapDrone): string {
  const parts = [d.status, formatPercent(d.battery)];
  if (d.distanceKm !== undefined) parts.push(formatKm(d.distanceKm));
  if (d.openAlerts.length) parts.push(`${d.openAlerts.length} open alert${d.openAlerts.length === 1 ? "" : "s"}`);
  return parts.join(" · ");
}

/** Every field of the record, the known ones first; values are plain text. */
export function recordRows(d: MapDrone): Array<[string, string]> {
  const rows: Array<[string, string]> = [
    ["Status", d.status],
    ["Battery", formatPercent(d.battery)],
    ["Position", formatCoord(d.lat, d.lon)],
  ];
  if (d.rank !== undefined && d.distanceKm !== undefined)
    rows.push(["Distance", `${formatKm(d.distanceKm)} (nearest #${d.rank})`]);
  if (d.id) rows.push(["ID", d.id]);
  for (const a of d.openAlerts.slice(0, 5)) {
    rows.push([
      `Open alert${a.severity ? ` (${a.severity})` : ""}`,
      displayValue(a.message ?? a.type ?? "open alert", 160),
    ]);
  }
  if (d.openAlerts.length > 5) rows.push(["", `${d.openAlerts.length - 5} more open alerts`]);
  for (const [key, value] of Object.entries(d.record)) {
    if (SHOWN_FIRST.has(key) || rows.length >= MAX_ROWS) continue;
    rows.push([humanize(key), displayValue(value)]);
  }
  return rows;
}
