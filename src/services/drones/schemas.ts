import { z } from "zod";

/**
 * Zod schemas of the drone fleet service, from docs/openapi/drones.yaml. Only the drone's fields are
 * shown in the spec; missions, alerts and API keys pass through as the upstream sends them.
 */

export const recordId = (what: string, tool: string) =>
  z
    .string({ error: `id must be a string: the _id of a ${what} (from ${tool})` })
    .trim()
    .min(1, `id must be the _id of a ${what} (from ${tool})`)
    .refine((s) => s.isWellFormed(), "id must be valid Unicode (no lone surrogates)")
    .describe(`_id of the ${what} (from ${tool})`);

const bounded = (name: string, min: number, max: number, unit: string, int = false) => {
  const message = `${name} must be a ${int ? "whole number" : "number"} from ${min} to ${max}${unit}`;
  const base = z.number({ error: message }).min(min, message).max(max, message);
  return int ? base.int(message) : base;
};

export const percent = (name: string) => bounded(name, 0, 100, " (percent)");
export const latitude = bounded("latitude", -90, 90, " (degrees)");
export const longitude = bounded("longitude", -180, 180, " (degrees)");

export const MAX_LIMIT = 500;
export const DEFAULT_LIMIT = 50;
export const paging = {
  limit: bounded("limit", 1, MAX_LIMIT, "", true).optional().describe(`Default ${DEFAULT_LIMIT}`),
  offset: z
    .number({ error: "offset must be a whole number, 0 or more" })
    .int("offset must be a whole number, 0 or more")
    .min(0, "offset must be a whole number, 0 or more")
    .optional(),
};

export const word = (name: string, example: string) =>
  z
    .string({ error: `${name} must be a string` })
    .trim()
    .min(1, `${name} must not be empty; omit it for all`)
    .optional()
    .describe(`e.g. ${example}; case-insensitive`);

// ---- outputs ----

export const drone = z.looseObject({
  _id: z.string(),
  name: z.string().optional(),
  status: z.string().optional(),
  battery_level: z.number().nullable().optional().describe("units not documented; assumed percent, 0-100"),
  latitude: z.number().nullable().optional().describe("degrees"),
  longitude: z.number().nullable().optional().describe("degrees"),
});
export type Drone = z.infer<typeof drone>;

/** Fields not shown in the spec: the record as the upstream sends it. */
export const record = z.looseObject({ _id: z.string().optional() });

const pageFields = {
  total: z.number().int().describe("items the service returned"),
  matched: z.number().int().describe("items left after the filters"),
  offset: z.number().int(),
  count: z.number().int().describe("items in this page"),
  omitted: z.number().int().describe("matching items not in this page"),
  nextOffset: z.number().int().optional().describe("offset of the next page, when there is one"),
};

export const dronePage = z.object({ drones: z.array(drone), ...pageFields });
export const missionPage = z.object({ missions: z.array(record), ...pageFields });
export const alertPage = z.object({ alerts: z.array(record), ...pageFields });

export const apiKeyList = z.object({
  api_keys: z.array(record).describe("as the service sends them, with every secret-looking value masked"),
  count: z.number().int(),
  maskedValues: z.number().int().describe("how many values were masked"),
});

export const boundingBox = z.object({
  minLatitude: z.number(),
  maxLatitude: z.number(),
  minLongitude: z.number(),
  maxLongitude: z.number(),
});

export const fleetSummary = z.object({
  totalDrones: z.number().int(),
  byStatus: z.record(z.string(), z.number().int()).describe("drone count per status"),
  averageBatteryPercent: z.number().nullable(),
  lowBatteryThresholdPercent: z.number(),
  lowBatteryCount: z.number().int(),
  lowBattery: z
    .array(
      z.object({
        _id: z.string(),
        name: z.string().optional(),
        status: z.string().optional(),
        battery_level: z.number().describe("percent"),
      }),
    )
    .describe("drones below the threshold, lowest battery first"),
  boundingBox: boundingBox.nullable().describe("degrees; null when no drone has a position"),
  dronesWithoutBattery: z.number().int(),
  dronesWithoutPosition: z.number().int(),
});

export const nearestResult = z.object({
  origin: z.object({ latitude: z.number(), longitude: z.number() }),
  drones: z
    .array(drone.extend({ distanceKm: z.number().describe("great-circle distance, km") }))
    .describe("nearest first"),
  count: z.number().int(),
  candidates: z.number().int().describe("drones that passed the filters and have a position"),
});
