import type { ResourceDef } from "../../core/service/resources.js";
import type { DronesClient, Json } from "./client.js";

/** Listing and completion fetch a whole list; a short cache keeps typing from hammering the service. */
const CACHE_MS = 10_000;

function cached(load: () => Promise<Json[]>): () => Promise<Json[]> {
  let entry: { at: number; items: Promise<Json[]> } | undefined;
  return () => {
    if (!entry || Date.now() - entry.at > CACHE_MS) {
      const items = load();
      entry = { at: Date.now(), items };
      items.catch(() => (entry = undefined));
    }
    return entry.items;
  };
}

interface Kind {
  name: string;
  segment: string;
  title: string;
  description: string;
  list: () => Promise<Json[]>;
  get: (id: string) => Promise<Json>;
  label: (r: Json) => string;
  detail: (r: Json) => string | undefined;
}

const text = (v: unknown) => (typeof v === "string" && v ? v : undefined);

/** Ids starting with the typed value first, then ids of records whose label starts with it. */
function completer(list: () => Promise<Json[]>, label: (r: Json) => string) {
  return async (value: string): Promise<string[]> => {
    const records = (await list()).filter((r) => typeof r._id === "string");
    const byId = records.filter((r) => String(r._id).startsWith(value)).map((r) => String(r._id));
    const needle = value.toLowerCase();
    const byLabel = value
      ? records.filter((r) => label(r).toLowerCase().startsWith(needle)).map((r) => String(r._id))
      : [];
    return [...new Set([...byId, ...byLabel])].slice(0, 100);
  };
}

export function dronesResources(client: DronesClient): ResourceDef[] {
  const kinds: Kind[] = [
    {
      name: "drones-drone",
      segment: "drones",
      title: "Drone",
      description:
        "One drone: status, battery_level (percent), position (degrees) and every other field the service sends",
      list: cached(() => client.listDrones()),
      get: (id) => client.getDrone(id),
      label: (d) => text(d.name) ?? String(d._id),
      detail: (d) =>
        [text(d.status), typeof d.battery_level === "number" ? `battery ${d.battery_level}%` : undefined]
          .filter(Boolean)
          .join(", ") || undefined,
    },
    {
      name: "drones-mission",
      segment: "missions",
      title: "Mission",
      description: "One mission as the service sends it",
      list: cached(() => client.listMissions()),
      get: (id) => client.getMission(id),
      label: (m) => text(m.name) ?? text(m.title) ?? String(m._id),
      detail: (m) => [text(m.status), text(m.type)].filter(Boolean).join(", ") || undefined,
    },
    {
      name: "drones-alert",
      segment: "alerts",
      title: "Alert",
      description: "One alert as the service sends it",
      list: cached(() => client.listAlerts()),
      get: (id) => client.getAlert(id),
      label: (a) => [text(a.severity), text(a.type)].filter(Boolean).join(" ") || String(a._id),
      detail: (a) => [text(a.status), text(a.message)?.slice(0, 200)].filter(Boolean).join(": ") || undefined,
    },
  ];

  return kinds.map((kind) => ({
    name: kind.name,
    uri: `drones://${kind.segment}/{id}`,
    title: kind.title,
    description: kind.description,
    list: async () =>
      (await kind.list())
        .filter((r) => typeof r._id === "string")
        .map((r) => ({
          uri: `drones://${kind.segment}/${encodeURIComponent(String(r._id))}`,
          name: kind.label(r),
          description: kind.detail(r),
        })),
    complete: { id: completer(kind.list, kind.label) },
    read: (_uri, { id }) => kind.get(id),
  }));
}
