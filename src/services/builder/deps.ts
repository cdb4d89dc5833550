import type { ServiceHost } from "../../core/service/service.js";
import { toolsWith } from "../../core/tools/tool.js";
import type { CreditGuard } from "./credits.js";
import type { WaitDeps } from "./waits.js";

/** What the build tools act with, one per tenant (index.ts's `create`): every hook's `ctx.deps`. */
export interface BuildDeps extends WaitDeps {
  guard: CreditGuard;
  /** Seals what must open on another replica or after a restart (a transferId). */
  sealing: Pick<ServiceHost, "seal" | "open">;
}

/** `defineTool` for the build tools: `ctx.deps` is the calling tenant's BuildDeps. */
export const defineTool = toolsWith<BuildDeps>();
