/** A JSON object as the upstreams send it: fields the specs do not show pass through. */
export type Json = Record<string, unknown>;

export function isObject(v: unknown): v is Json {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
