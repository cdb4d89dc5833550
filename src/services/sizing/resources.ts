import { notFound, type ResourceDef } from "../../core/service/resources.js";
import type { Json } from "./client.js";
import type { SizingDeps } from "./deps.js";
/**
 * Listing and completion ask for the whole catalog; a short cache spares the per-minute rate limit
 * while someone types.
 */
const CACHE_MS = 10_000;

/** Each tenant's cached catalog: made when the tenant first lists, gone with its deps. */
const caches = new WeakMap<SizingDeps, { at: number; items: Promise<Json[]> }>();

function catalog(deps: SizingDeps): Promise<Json[]> {
  let cache = caches.get(deps);
  if (!cache || Date.now() - cache.at > CACHE_MS) {
    const made = { at: Date.now(), items: deps.client.getCatalog({}) };
    cache = made;
    caches.set(deps, made);
    made.items.catch(() => caches.get(deps) === made && caches.delete(deps));
  }
  return cache.items;
}

/** Defined once per process: each read acts with the calling tenant's client (`deps`). */
export function sizingResources(): ResourceDef<SizingDeps>[] {
  return [
    {
      name: "sizing-catalog-item",
      uri: "sizing://catalog/{id}",
      title: "Catalog item",
      description: "One clothing item of the retailer's catalog, with its size chart",
      list: async (_signal, deps) =>
        (await catalog(deps))
          .filter((i) => typeof i._id === "string")
          .map((i) => ({
            uri: `sizing://catalog/${encodeURIComponent(String(i._id))}`,
            name: String(i.name ?? i._id),
            description:
              [i.brand, i.category, i.gender, typeof i.price === "number" ? String(i.price) : undefined]
                .filter(Boolean)
                .join(" · ") || undefined,
          })),
      complete: {
        id: async (value, deps) => {
          const items = await catalog(deps);
          const ids = items.map((i) => i._id).filter((id): id is string => typeof id === "string");
          const byId = ids.filter((id) => id.startsWith(value));
          const needle = value.toLowerCase();
          const byName = value
            ? items
                .filter((i) => typeof i.name === "string" && i.name.toLowerCase().startsWith(needle))
                .map((i) => String(i._id))
            : [];
          return [...new Set([...byId, ...byName])];
        },
      },
      read: async (uri, { id }, _signal, { client }) => {
        const item = (await client.getCatalog({})).find((i) => i._id === id);
        if (!item) throw notFound(uri, `no catalog item has _id ${id}`);
        return item;
      },
    },
  ];
}
