import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { wrapRequestHandler } from "./sdk-hooks.js";

/**
 * Every conversation pays for the tools/list answer in tokens, so it is trimmed of what carries
 * no meaning for a model:
 * - `$schema` lines and empty `additionalProperties: {}` the schema generator adds;
 * - an annotation title that repeats the tool's title;
 * - `execution: {taskSupport: "forbidden"}` (the default) and zod's safe-integer bounds;
 * - output schemas deeper than their top level. The full zod output schema still validates every
 *   structuredContent (the SDK checks it before answering); the published copy names the
 *   top-level fields and their types, which is what a model plans with.
 */
export function compactToolList(server: McpServer): void {
  // test/stdio-cli.e2e.test.ts fails if this stops taking effect.
  wrapRequestHandler(server, "tools/list", (original) => async (req, extra) => {
    const answer = (await original(req, extra)) as { tools: Array<Record<string, unknown>> };
    return { ...answer, tools: answer.tools.map(compactTool) };
  });
}

function compactTool(tool: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...tool, inputSchema: clean(tool.inputSchema) };
  // "forbidden" is what a missing taskSupport means.
  if ((tool.execution as { taskSupport?: string } | undefined)?.taskSupport === "forbidden") delete out.execution;
  if (tool.outputSchema) out.outputSchema = shallow(clean(tool.outputSchema) as JsonSchema);
  const annotations = tool.annotations as Record<string, unknown> | undefined;
  if (annotations && annotations.title === tool.title) {
    const { title: _dropped, ...rest } = annotations;
    out.annotations = rest;
  }
  return out;
}

type JsonSchema = { type?: unknown; properties?: Record<string, JsonSchema>; required?: string[]; description?: string; [k: string]: unknown };

function clean(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(clean);
  if (!schema || typeof schema !== "object") return schema;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) {
    if (k === "$schema") continue;
    if (k === "additionalProperties" && v && typeof v === "object" && Object.keys(v).length === 0) continue;
    // zod's .int() adds the safe-integer bounds: true of every JSON number a client sends anyway.
    if ((k === "maximum" && v === Number.MAX_SAFE_INTEGER) || (k === "minimum" && v === Number.MIN_SAFE_INTEGER)) continue;
    out[k] = clean(v);
  }
  return out;
}

function shallow(schema: JsonSchema): JsonSchema {
  const properties = Object.fromEntries(
    Object.entries(schema.properties ?? {}).map(([name, prop]) => {
      const type = prop.type ?? (Array.isArray(prop.anyOf) ? (prop.anyOf as JsonSchema[]).map((p) => p.type).filter(Boolean) : undefined);
      return [name, type ? { type } : {}];
    }),
  );
  return { type: "object", properties };
}
