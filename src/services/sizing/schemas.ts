import { z } from "zod";

/**
 * Zod schemas of the sizing service, from its description (docs/openapi/sizing.yaml). Inputs use
 * the spec's snake_case names and are checked before any request leaves; outputs are loose so
 * fields the spec does not show pass through untouched.
 */

const MEASUREMENTS = ["chest", "waist", "hips", "height", "weight"] as const;
const BODY_MEASUREMENTS = ["chest", "waist", "hips"] as const;
/** Not listed in the spec; these are the values the service accepts (the sandbox defaults to regular). */
export const PREFERRED_FITS = ["slim", "regular", "relaxed"] as const;

const measure = (name: string, unit: string) =>
  z
    .number({ error: `measurements.${name} must be a number of ${unit}, 0 or more` })
    .min(0, `measurements.${name} must be a number of ${unit}, 0 or more`)
    .optional();

// The spec gives no units: those of the item's size_chart, assumed cm (and kg for weight).
const measureFields = {
  chest: measure("chest", "cm (assumed)"),
  waist: measure("waist", "cm (assumed)"),
  hips: measure("hips", "cm (assumed)"),
  height: measure("height", "cm (assumed)"),
  weight: measure("weight", "kg (assumed)"),
};

function measurementsObject<K extends keyof typeof measureFields>(names: readonly K[]) {
  const shape = Object.fromEntries(names.map((n) => [n, measureFields[n]])) as Pick<typeof measureFields, K>;
  const list = names.join(", ");
  // Members the spec does not list are passed on as numbers: the service decides what they mean.
  return z
    .object(shape, { error: () => `measurements must be an object of numbers, e.g. {"chest": 96, "waist": 82}` })
    .catchall(z.number({ error: "every measurement must be a number" }))
    .refine(
      (m) => names.some((n) => (m as Record<string, unknown>)[n] !== undefined),
      `measurements needs at least one of ${list}`,
    );
}

export const recommendMeasurements = measurementsObject(MEASUREMENTS).describe(
  "Body measurements in the size_chart's units (assumed cm, weight kg); at least one",
);
export const tryOnMeasurements = measurementsObject(BODY_MEASUREMENTS).describe(
  "Body measurements in the size_chart's units (assumed cm); at least one",
);

export const clothingItemId = z
  .string({ error: "clothing_item_id must be a string (an _id from sizing_get_catalog)" })
  .trim()
  .min(1, "clothing_item_id must be an _id from sizing_get_catalog")
  .describe("_id of a catalog item (from sizing_get_catalog)");

// The spec does not list the values: passed on as given.
export const preferredFit = z
  .string()
  .trim()
  .min(1, "preferred_fit must not be empty")
  .describe(`Values not documented; e.g. ${PREFERRED_FITS.join(", ")}`);

// ---- outputs ----

const catalogItem = z.looseObject({
  _id: z.string(),
  name: z.string().optional(),
  brand: z.string().optional(),
  price: z.number().optional(),
  category: z.string().optional(),
  gender: z.string().optional(),
  available_sizes: z.string().optional().describe("comma-separated size labels"),
  size_chart: z.record(z.string(), z.unknown()).optional().describe("size label -> {measurement: [lower, upper]}"),
});
export type CatalogItem = z.infer<typeof catalogItem>;

export const catalogPage = z.object({
  items: z.array(catalogItem),
  total: z.number().int().describe("items matching the filters"),
  offset: z.number().int(),
  count: z.number().int().describe("items in this page"),
  omitted: z.number().int().describe("matching items not in this page"),
  nextOffset: z.number().int().optional().describe("offset of the next page, when there is one"),
});
export type CatalogPage = z.infer<typeof catalogPage>;

const sizeBreakdown = z.looseObject({
  chest_fit: z.string().optional(),
  waist_fit: z.string().optional(),
  overall: z.string().optional(),
});

export const recommendation = z.looseObject({
  clothing_item_id: z.string(),
  recommended_size: z.string(),
  confidence_score: z.number().optional().describe("as the service sends it (0-1 in the sandbox)"),
  fit_notes: z.string().optional().describe("the service's explanation"),
  alternative_size: z.string().nullable().optional(),
  size_breakdown: sizeBreakdown.optional(),
  measurements: z.record(z.string(), z.number()).optional().describe("the measurements asked about"),
});
export type Recommendation = z.infer<typeof recommendation>;

export const tryOnSession = z.looseObject({
  session_id: z.string(),
  recommended_size: z.string().optional(),
  confidence_score: z.number().optional(),
  fit_notes: z.string().optional(),
  created_at: z.string().optional().describe("ISO 8601"),
});
export type TryOnSession = z.infer<typeof tryOnSession>;
