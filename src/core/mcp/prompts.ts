import type { McpServer } from "@modelcontextprotocol/server";
import { z } from "zod";
import type { PromptDef } from "../service/prompts.js";
import type { TenantRuntime } from "./runtime.js";

export function registerPrompt(server: McpServer, rt: TenantRuntime, def: PromptDef<any>): void {
  server.registerPrompt(
    def.name,
    { title: def.title, description: def.description, argsSchema: argsSchemaOf(def) },
    (args: Record<string, unknown>) => ({
      messages: [
        { role: "user" as const, content: { type: "text" as const, text: rt.egress.text(def.text(args as never)) } },
      ],
    }),
  );
}

const argsSchemas = new WeakMap<PromptDef<any>, z.ZodObject>();
/** Built once per prompt, not per (2026 per-request) server instance. */
function argsSchemaOf(def: PromptDef<any>): z.ZodObject {
  let schema = argsSchemas.get(def);
  if (!schema) argsSchemas.set(def, (schema = z.object(def.args)));
  return schema;
}
