import { toolsWith } from "../../core/tools/tool.js";
import type { DronesClient } from "./client.js";

/** What the drones tools act with, one per tenant (index.ts's `create`): every hook's `ctx.deps`. */
export interface DronesDeps {
  client: DronesClient;
}

/** `defineTool` for the drones tools: `ctx.deps` is the calling tenant's DronesDeps. */
export const defineTool = toolsWith<DronesDeps>();
