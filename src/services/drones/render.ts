import type { FleetSummary } from "./fleet.js";

/** Short text for people and models. Upstream free text (names, messages) is quoted as data. */

export function trimLine(text: string, max = 160): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** A JSON-quoted, one-line, trimmed copy of upstream text. */
export function quote(value: unknown, max = 160): string {
  return JSON.stringify(trimLine(typeof value === "string" ? value : String(value ?? ""), max));
}

/** A scalar for a text line: strings quoted, numbers as is, objects and arrays summarised. */
export function show(value: unknown, max = 120): string {
  if (typeof value === "string") return quote(value, max);
  if (value === null || value === undefined) return "none";
  if (Array.isArray(value)) return `${value.length} item(s)`;
  if (typeof value === "object") return trimLine(JSON.stringify(value), max);
  return String(value);
}

const str = (v: unknown) => (typeof v === "string" && v ? v : undefined);
const num = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : undefined);

export function percentText(v: unknown): string {
  const n = num(v);
  return n === undefined ? "battery unknown" : `battery ${n}%`;
}

export function kmText(km: number): string {
  return `${km < 10 ? km.toFixed(2) : km.toFixed(1)} km`;
}

function coord(v: unknown): string {
  const n = num(v);
  return n === undefined ? "?" : String(Math.round(n * 1e5) / 1e5);
}

export function droneLine(d: Record<string, unknown>): string {
  const position =
    num(d.latitude) !== undefined && num(d.longitude) !== undefined
      ? `, at ${coord(d.latitude)}, ${coord(d.longitude)}`
      : "";
  return (
    `- ${String(d._id)} ${quote(d.name ?? "(no name)", 60)}: ${str(d.status) ?? "status unknown"}, ` +
    `${percentText(d.battery_level)}${position}`
  );
}

export function missionLine(m: Record<string, unknown>): string {
  const parts = [
    str(m.status),
    str(m.type),
    str(m.drone_id) ? `drone ${m.drone_id}` : undefined,
    str(m.started_at) ? `started ${m.started_at}` : str(m.scheduled_for) ? `scheduled ${m.scheduled_for}` : undefined,
  ];
  const title = m.name ?? m.title;
  const named = title !== undefined ? ` ${quote(title, 80)}` : "";
  const details = parts.some(Boolean) ? `: ${parts.filter(Boolean).join(", ")}` : "";
  return `- ${String(m._id ?? "(no _id)")}${named}${details}`;
}

export function alertLine(a: Record<string, unknown>): string {
  const head = [
    str(a.severity) ? `[${a.severity}]` : undefined,
    str(a.status),
    str(a.type),
    str(a.drone_id) ? `drone ${a.drone_id}` : undefined,
  ]
    .filter(Boolean)
    .join(" ");
  const when = str(a.created_at) ? ` (${a.created_at})` : "";
  const message = a.message !== undefined ? `: ${quote(a.message, 120)}` : "";
  return `- ${String(a._id ?? "(no _id)")}${head ? ` ${head}` : ""}${message}${when}`;
}

/** The fields of one record, one per line, for the get tools. */
export function recordText(title: string, r: Record<string, unknown>, maxFields = 16): string {
  const entries = Object.entries(r).filter(([k]) => k !== "_id");
  const lines = [`${title} ${String(r._id ?? "(no _id)")} (text values quoted as sent by the service):`];
  for (const [k, v] of entries.slice(0, maxFields)) lines.push(`- ${k}: ${show(v)}`);
  if (entries.length > maxFields)
    lines.push(`- … ${entries.length - maxFields} more field(s) in the structured result`);
  return lines.join("\n");
}

export function pageFooter(
  p: { offset: number; count: number; matched: number; total: number; omitted: number; nextOffset?: number },
  noun: string,
): string {
  const filtered = p.matched !== p.total ? ` (of ${p.total})` : "";
  const range = p.count ? `showing ${p.offset + 1}-${p.offset + p.count}` : "none in this page";
  const more = p.omitted
    ? `; ${p.omitted} omitted${p.nextOffset !== undefined ? `, next page: offset ${p.nextOffset}` : ""}`
    : "";
  return `${p.matched} ${noun}${filtered}, ${range}${more}.`;
}

export function summaryText(s: FleetSummary): string {
  if (s.totalDrones === 0) return "The fleet has no drones.";
  const statuses = Object.entries(s.byStatus)
    .sort((a, b) => b[1] - a[1])
    .map(([status, n]) => `${n} ${status}`)
    .join(", ");
  const lines = [`${s.totalDrones} drones: ${statuses}.`];
  if (s.averageBatteryPercent !== null) lines.push(`Average battery ${s.averageBatteryPercent}%.`);
  if (s.lowBatteryCount === 0) lines.push(`No drone is below ${s.lowBatteryThresholdPercent}% battery.`);
  else {
    const list = s.lowBattery
      .map((d) => `${quote(d.name ?? d._id, 40)} ${d.battery_level}%${d.status ? ` (${d.status})` : ""}`)
      .join(", ");
    lines.push(`${s.lowBatteryCount} below ${s.lowBatteryThresholdPercent}% battery, lowest first: ${list}.`);
  }
  const b = s.boundingBox;
  if (b)
    lines.push(
      `Area covered: latitude ${coord(b.minLatitude)} to ${coord(b.maxLatitude)}, ` +
        `longitude ${coord(b.minLongitude)} to ${coord(b.maxLongitude)} (degrees).`,
    );
  const missing = [
    s.dronesWithoutBattery ? `${s.dronesWithoutBattery} without a battery level` : "",
    s.dronesWithoutPosition ? `${s.dronesWithoutPosition} without a position` : "",
  ].filter(Boolean);
  if (missing.length) lines.push(`Not counted: ${missing.join(", ")}.`);
  return lines.join("\n");
}
