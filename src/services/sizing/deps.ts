import { toolsWith } from "../../core/tools/tool.js";
import type { SizingClient } from "./client.js";

/** What the sizing tools act with, one per tenant (index.ts's `create`): every hook's `ctx.deps`. */
export interface SizingDeps {
  client: SizingClient;
}

/** `defineTool` for the sizing tools: `ctx.deps` is the calling tenant's SizingDeps. */
export const defineTool = toolsWith<SizingDeps>();
