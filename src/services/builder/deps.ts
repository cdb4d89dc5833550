import { toolsWith } from "../../core/tools/tool.js";
import type { CreditGuard } from "./credits.js";
import type { WaitDeps } from "./waits.js";

/** What the build tools act with, one per tenant (index.ts's `create`): every hook's `ctx.deps`. */
export interface BuildDeps extends WaitDeps {
  guard: CreditGuard;
}

/** `defineTool` for the build tools: `ctx.deps` is the calling tenant's BuildDeps. */
export const defineTool = toolsWith<BuildDeps>();
