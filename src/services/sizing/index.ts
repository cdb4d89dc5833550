import { z } from "zod";
import type { ServiceDeclaration } from "../../core/service/service.js";
import { httpUrl, secret } from "../../core/service/settings.js";

const settings = z.object({
  SIZING_API_BASE_URL: httpUrl,
  SIZING_API_KEY: secret,
});

export type SizingSettings = z.infer<typeof settings>;

/** The declaration; the tools and the client are in implementation.ts, loaded when first needed. */
export const sizing: ServiceDeclaration<SizingSettings> = {
  name: "sizing",
  title: "garment size recommendation API",
  displayName: "Garment Size Recommendation API",
  keyHint: "Find it in the settings of your retailer dashboard. Copy the whole key, on one line.",
  toolsets: [{ id: "sizing", description: "catalog, size recommendation, virtual try-on", default: true }],
  env: [
    {
      name: "SIZING_API_BASE_URL",
      description: "base URL of the garment size recommendation API, with its v1 segment",
    },
    {
      name: "SIZING_API_KEY",
      description: "API key of the garment size recommendation API (sent as Authorization: Bearer)",
      secret: true,
    },
  ],
  baseUrlVar: "SIZING_API_BASE_URL",
  apiKeyVar: "SIZING_API_KEY",
  keyCheck: { tool: "sizing_get_catalog", input: { limit: 1 } },
  settings,
  instructions: "Sizing: get the catalog, then recommend a size from body measurements (assumed to be cm and kg).",
  // The seed shows no error codes, shapes or statuses: these codes and what they mean are assumed
  // (they are what the sandbox answers); the limits are the seed's Limits table.
  hints: {
    RATE_LIMITED:
      "assumed to mean the plan's requests-per-minute limit is used up (Free 60, Professional 600; " +
      "what the service does past it is not shown): wait about a minute, then retry once.",
    TRY_ON_LIMIT_REACHED:
      "assumed to mean the plan's monthly try-on allowance is used up (Free 100, Professional 10,000): " +
      "use sizing_recommend_size until the month ends, or upgrade the plan.",
    NOT_FOUND:
      'assumed to mean no catalog item has that clothing_item_id (or, if the message says "No route", ' +
      "SIZING_API_BASE_URL is wrong): call sizing_get_catalog to find a valid _id.",
    VALIDATION_ERROR:
      "assumed to mean the service rejected an argument (its validation rules are not shown): " +
      "correct the field the message names and call again.",
    INVALID_JSON: "the request body was not valid JSON; this is a bug in switchboard-mcp, please report it.",
    UNEXPECTED_SHAPE:
      "the service answered in a shape this server does not know: check that SIZING_API_BASE_URL points at the v1 API.",
  },
  completions: true,
  load: () => import("./implementation.js").then((m) => m.sizingImplementation),
  samples: () => import("./samples.js").then((m) => m.sizingSamples),
  views: [
    {
      name: "fit-card",
      title: "Fit card",
      description: "The item's size chart with the person's measurements on it, the recommended and alternative sizes",
    },
  ],
};
