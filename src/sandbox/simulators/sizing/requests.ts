import { MEASUREMENT_NAMES, PREFERRED_FITS, type Measurements, type PreferredFit } from "./catalog.js";
import { validation } from "./errors.js";

/**
 * Request validation. Not shown in the spec: which fields are required and how invalid input is
 * handled. We require clothing_item_id and measurements (and user_id for try-on), reject unknown
 * measurement names, and reject present-but-invalid values (null included) with VALIDATION_ERROR.
 */

interface FitRequest {
  itemId: string;
  measurements: Measurements;
  fit: PreferredFit;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function requireString(body: Record<string, unknown>, field: string): string {
  const value = body[field];
  if (typeof value !== "string" || value.trim() === "") {
    throw validation(`${field} is required and must be a non-empty string`);
  }
  return value;
}

function parseMeasurements(value: unknown): Measurements {
  if (!isPlainObject(value)) throw validation("measurements is required and must be an object");
  const result: Measurements = {};
  for (const [name, raw] of Object.entries(value)) {
    if (!(MEASUREMENT_NAMES as readonly string[]).includes(name)) {
      throw validation(`measurements.${name} is not a supported measurement (${MEASUREMENT_NAMES.join(", ")})`);
    }
    if (typeof raw !== "number" || !Number.isFinite(raw) || raw < 0) {
      throw validation(`measurements.${name} must be a non-negative number`);
    }
    result[name as keyof Measurements] = raw;
  }
  return result;
}

function parsePreferredFit(value: unknown): PreferredFit {
  if (value === undefined) return "regular";
  if (typeof value !== "string" || !(PREFERRED_FITS as readonly string[]).includes(value)) {
    throw validation(`preferred_fit must be one of ${PREFERRED_FITS.join(", ")}`);
  }
  return value as PreferredFit;
}

export function parseFitRequest(body: unknown): FitRequest {
  if (!isPlainObject(body)) throw validation("Request body must be a JSON object");
  return {
    itemId: requireString(body, "clothing_item_id"),
    measurements: parseMeasurements(body.measurements),
    fit: parsePreferredFit(body.preferred_fit),
  };
}
