import { z } from "zod";
import type { HookOutcome } from "../../core/service/service.js";

/**
 * A webhook delivery as §14 documents it: `{event, timestamp, data: {projectId, status, prompt}}`
 * for agent.prompt.finished; project.credit_limit.reached's payload is not stated beyond the
 * envelope, so only `data.projectId` is read from it, when present.
 */
export const delivery = z.object({
  event: z.enum(["agent.prompt.finished", "project.credit_limit.reached"]),
  timestamp: z.string().refine((t) => Number.isFinite(Date.parse(t)), "an ISO timestamp"),
  data: z.object({ projectId: z.string().min(1).max(200) }).passthrough(),
});
export type Delivery = z.infer<typeof delivery>;

/** Older than this, a delivery is a replay (the window the core remembers deliveries in is shorter). */
const STALE_MS = 60 * 60_000;

/** What the delivery route makes of a body (ServiceImplementation.acceptsDelivery). */
export function acceptsDelivery(body: unknown, now: number): HookOutcome {
  const parsed = delivery.safeParse(body);
  if (!parsed.success) return "unknown";
  return Date.parse(parsed.data.timestamp) < now - STALE_MS ? "stale" : "ok";
}
