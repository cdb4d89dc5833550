import type { ResourceDef } from "../../core/service/resources.js";
import type { DronesClient, Json } from "./client.js";
import type { DronesDeps } from "./deps.js";

/** Listing and completion fetch a whole list; a short cache keeps typing from hammering the service. */
const CACHE_MS = 10_000;

/** Each tenant's cached lists, by kind: made when the tenant first lists, gone with its deps. */
const caches = new WeakMap<DronesDeps, Map<string, { at: number; items: Promise<Json[]> }>>();

function cachedList(kind: Kind, deps: DronesDeps): Promise<Json[]> {
  let mine = caches.get(deps);
  if (!mine) caches.set(deps, (mine = new Map()));
  let entry = mine.get(kind.name);
  if (!entry || Date.now() - entry.at > CACHE_MS) {
    const items = kind.list(deps.client);
    const made = { at: Date.now(), items };
    entry = made;
    mine.set(kind.name, made);
    items.catch(() => mine.get(kind.name) === made && mine.delete(kind.name));
  }
  return entry.items;
}

interface Kind {
  name: string;
  segment: string;
  title: string;
  description: string;
  list: (client: DronesClient) => Promise<Json[]>;
  get: (client: DronesClient, id: string) => Promise<Json>;
  label: (r: Json) => string;
  detail: (r: Json) => string | undefined;
}

const text = (v: unknown) => (typeof v === "string" && v ? v : undefined);

/** Ids starting with the typed value first, then ids of records whose label starts with it. */
function completer(kind: Kind) {
  const { label } = kind;
  return async (value: string, deps: DronesDeps): Promise<string[]> => {
    const records = (await cachedList(kind, deps)).filter((r) => typeof r._id === "string");
    const byId = records.filter((r) => String(r._id).startsWith(value)).map((r) => String(r._id));
    const needle = value.toLowerCase();
    const byLabel = value
      ? records.filter((r) => label(r).toLowerCase().startsWith(needle)).map((r) => String(r._id))
      : [];
    return [...new Set([...byId, ...byLabel])].slice(0, 100);
  };
}

/** Defined once per process: each read acts with the calling tenant's client (`deps`). */
export function dronesResources(): ResourceDef<DronesDeps>[] {
  const kinds: Kind[] = [
    {
      name: "drones-drone",
      segment: "drones",
      title: "Drone",
      description:
        "One drone: status, battery_level (percent), position (degrees) and every other field the service sends",
      list: (client) => client.listDrones(),
      get: (client, id) => client.getDrone(id),
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
      list: (client) => client.listMissions(),
      get: (client, id) => client.getMission(id),
      label: (m) => text(m.name) ?? text(m.title) ?? String(m._id),
      detail: (m) => [text(m.status), text(m.type)].filter(Boolean).join(", ") || undefined,
    },
    {
      name: "drones-alert",
      segment: "alerts",
      title: "Alert",
      description: "One alert as the service sends it",
      list: (client) => client.listAlerts(),
      get: (client, id) => client.getAlert(id),
      label: (a) => [text(a.severity), text(a.type)].filter(Boolean).join(" ") || String(a._id),
      detail: (a) => [text(a.status), text(a.message)?.slice(0, 200)].filter(Boolean).join(": ") || undefined,
    },
  ];

  return kinds.map((kind) => ({
    name: kind.name,
    uri: `drones://${kind.segment}/{id}`,
    title: kind.title,
    description: kind.description,
    list: async (_signal, deps) =>
      (await cachedList(kind, deps))
        .filter((r) => typeof r._id === "string")
        .map((r) => ({
          uri: `drones://${kind.segment}/${encodeURIComponent(String(r._id))}`,
          name: kind.label(r),
          description: kind.detail(r),
        })),
    complete: { id: completer(kind) },
    read: (_uri, { id }, _signal, { client }) => kind.get(client, id),
  }));
}
