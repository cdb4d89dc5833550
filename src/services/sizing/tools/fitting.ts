import { z } from "zod";
import { defineTool } from "../deps.js";
import { viewUri } from "../../../core/service/views.js";
import { catalogText, recommendationText, tryOnText } from "../render.js";
import * as s from "../schemas.js";

const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 200;

const filter = (name: string, example: string) =>
  z
    .string({ error: `${name} must be a string` })
    .trim()
    .min(1, `${name} must not be empty; omit it to list all`)
    .optional()
    .describe(`Upstream filter, e.g. "${example}"`);

export function sizingTools() {
  return [
    defineTool({
      name: "sizing_get_catalog",
      upstream: "GET /api/retailer/catalog",
      title: "Clothing catalog",
      description:
        "List the retailer's clothing items (_id, name, brand, price, category, gender, " +
        "available_sizes, size_chart). Paging (limit, offset) is done here on the whole list (the " +
        "service shows no paging).",
      toolset: "sizing",
      kind: "read",
      input: {
        category: filter("category", "tops"),
        gender: filter("gender", "women"),
        search: z
          .string()
          .trim()
          .min(1, "search must not be empty")
          .optional()
          .describe("Text in name or brand (filtered here)"),
        limit: z
          .number({ error: `limit must be a whole number 1-${MAX_LIMIT}` })
          .int(`limit must be a whole number 1-${MAX_LIMIT}`)
          .min(1, `limit must be a whole number 1-${MAX_LIMIT}`)
          .max(MAX_LIMIT, `limit must be a whole number 1-${MAX_LIMIT}`)
          .optional()
          .describe(`Items per page (default ${DEFAULT_LIMIT})`),
        offset: z
          .number({ error: "offset must be a whole number, 0 or more" })
          .int("offset must be a whole number, 0 or more")
          .min(0, "offset must be a whole number, 0 or more")
          .optional(),
      },
      output: s.catalogPage,
      run: async ({ category, gender, search, limit, offset }, ctx) => {
        let items = (await ctx.deps.client.getCatalog({ category, gender }, ctx.signal)) as s.CatalogItem[];
        if (search) {
          const needle = search.toLowerCase();
          items = items.filter((i) =>
            [i.name, i.brand].some((v) => typeof v === "string" && v.toLowerCase().includes(needle)),
          );
        }
        const from = offset ?? 0;
        const size = limit ?? DEFAULT_LIMIT;
        const page = items.slice(from, from + size);
        const next = from + page.length;
        return {
          items: page,
          total: items.length,
          offset: from,
          count: page.length,
          omitted: items.length - page.length,
          ...(next < items.length ? { nextOffset: next } : {}),
        };
      },
      render: (page) => catalogText(page),
    }),

    defineTool({
      name: "sizing_recommend_size",
      view: viewUri("fit-card"),
      upstream: "POST /api/retailer/recommend",
      title: "Recommend a size",
      description:
        "Recommend a size of one catalog item from body measurements: size, confidence, " +
        "alternative, fit notes. Changes nothing; uses no try-on allowance.",
      toolset: "sizing",
      kind: "read",
      idempotent: true,
      input: {
        clothing_item_id: s.clothingItemId,
        measurements: s.recommendMeasurements,
        preferred_fit: s.preferredFit.optional(),
      },
      output: s.recommendation,
      run: async ({ clothing_item_id, measurements, preferred_fit }, ctx) => {
        const data = await ctx.deps.client.recommend(
          { clothing_item_id, measurements, ...(preferred_fit ? { preferred_fit } : {}) },
          ctx.signal,
        );
        // The measurements asked about travel with the answer (the fit card places them on the chart).
        return { ...data, clothing_item_id, measurements } as s.Recommendation;
      },
      render: (r, input) => recommendationText(r, input.preferred_fit),
    }),

    defineTool({
      name: "sizing_create_try_on",
      upstream: "POST /api/retailer/try-on",
      title: "Create try-on session",
      description:
        "Virtual try-on of one item for a customer: a recommendation, saved as a session for the " +
        "retailer's analytics. Each call counts against the monthly try-on allowance (Free: 100); " +
        "for advice only, use sizing_recommend_size.",
      toolset: "sizing",
      kind: "write",
      idempotent: false,
      input: {
        clothing_item_id: s.clothingItemId,
        user_id: z
          .string({ error: "user_id must be a string (the retailer's customer id)" })
          .trim()
          .min(1, "user_id must be the retailer's customer id, not empty")
          .describe("The retailer's external customer identifier"),
        measurements: s.tryOnMeasurements,
      },
      output: s.tryOnSession,
      verify: () =>
        "try-on sessions cannot be listed through this API; a retry stores another session and uses " +
        "another try-on of the monthly allowance",
      run: async ({ clothing_item_id, user_id, measurements }, ctx) => {
        const data = await ctx.deps.client.tryOn({ clothing_item_id, user_id, measurements }, ctx.signal);
        return data as s.TryOnSession;
      },
      render: (session) => tryOnText(session),
    }),
  ];
}
