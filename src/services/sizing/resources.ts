import { notFound, type ResourceDef } from "../../core/service/resources.js";
import type { Json, SizingClient } from "./client.js";
/**
 * Listing and completion ask for the whole catalog; a short cache spares the per-minute rate limit
 * while someone types.
 */
const CACHE_MS = 10_000;

export function sizingResources(client: SizingClient): ResourceDef[] {
  let cache: { at: number; items: Promise<Json[]> } | undefined;
  const catalog = (): Promise<Json[]> => {
    if (!cache || Date.now() - cache.at > CACHE_MS) {
      const items = client.getCatalog({});
      cache = { at: Date.now(), items };
      items.catch(() => (cache = undefined));
    }
    return cache.items;
  };

  return [
    {
      name: "sizing-catalog-item",
      uri: "sizing://catalog/{id}",
      title: "Catalog item",
      description: "One clothing item of the retailer's catalog, with its size chart",
      list: async () =>
        (await catalog())
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
        id: async (value) => {
          const items = await catalog();
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
      read: async (uri, { id }) => {
        const item = (await client.getCatalog({})).find((i) => i._id === id);
        if (!item) throw notFound(uri, `no catalog item has _id ${id}`);
        return item;
      },
    },
  ];
}
