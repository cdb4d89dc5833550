/** Which protocol generation an instance serves: 2025-11-25 and older (`initialize`), or 2026-07-28. */
export type Era = "legacy" | "modern";
export const MODERN_REVISION = "2026-07-28";

/** Tools, prompts and the discovery answer are the same for every caller of a deployment. */
export const CACHE_HINTS = {
  "tools/list": { ttlMs: 300_000, cacheScope: "public" },
  "prompts/list": { ttlMs: 300_000, cacheScope: "public" },
  "resources/templates/list": { ttlMs: 300_000, cacheScope: "public" },
  "server/discover": { ttlMs: 300_000, cacheScope: "public" },
} as const;
