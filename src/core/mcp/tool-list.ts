/**
 * The tools/list answer, shaped for the protocol revision that asked and trimmed of what carries
 * no meaning for a model (every conversation pays for it in tokens):
 * - `$schema` lines and empty `additionalProperties: {}` the schema generator adds;
 * - zod's safe-integer bounds, true of every JSON number a client sends anyway;
 * - output schemas deeper than their top level: the full zod schema still validates every
 *   structuredContent; the published copy names the top-level fields and their types;
 * - MCP Apps view links, for hosts that did not declare the UI extension;
 * - `type` arrays (a nullable field), written as anyOf, which strict validators accept;
 * - fields the revision does not define: `title` and `outputSchema` before 2025-06-18, `execution`
 *   (task support) before 2025-11-25 and after it (2026-07-28 tasks are an extension).
 */
type JsonSchema = { type?: unknown; properties?: Record<string, JsonSchema>; [k: string]: unknown };
type Tool = Record<string, unknown>;

export function shapeTool(tool: Tool, revision: string, taskCapable: boolean, views = false): Tool {
  const out: Tool = { ...tool, inputSchema: clean(tool.inputSchema) };
  // A view is announced only to hosts that render MCP Apps; the others get the tool as it was.
  if (!views && out._meta && typeof out._meta === "object") {
    const { ui: _ui, "ui/resourceUri": _legacy, ...meta } = out._meta as Record<string, unknown>;
    out._meta = Object.keys(meta).length ? meta : undefined;
  }
  delete out.execution;
  if (tool.outputSchema) out.outputSchema = shallow(clean(tool.outputSchema) as JsonSchema);
  if (revision < "2025-06-18") {
    delete out.title;
    delete out.outputSchema;
  }
  if (revision === "2025-11-25" && taskCapable) out.execution = { taskSupport: "optional" };
  if (out._meta === undefined) delete out._meta;
  if (out.icons === undefined) delete out.icons;
  return out;
}

function clean(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(clean);
  if (!schema || typeof schema !== "object") return schema;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) {
    if (k === "$schema") continue;
    if (k === "additionalProperties" && v && typeof v === "object" && Object.keys(v).length === 0) continue;
    if ((k === "maximum" && v === Number.MAX_SAFE_INTEGER) || (k === "minimum" && v === Number.MIN_SAFE_INTEGER))
      continue;
    // zod writes a plain nullable field as ["string", "null"]; strict validators want anyOf.
    if (k === "type" && Array.isArray(v)) out.anyOf = v.map((type) => ({ type }));
    else out[k] = clean(v);
  }
  return out;
}

function shallow(schema: JsonSchema): JsonSchema {
  const properties = Object.fromEntries(
    Object.entries(schema.properties ?? {}).map(([name, prop]) => {
      const anyOf = Array.isArray(prop.anyOf) ? (prop.anyOf as JsonSchema[]).map((p) => p.type) : [];
      const alternatives = prop.type !== undefined ? [prop.type] : anyOf;
      const types = [...new Set(alternatives.flat().filter((t): t is string => typeof t === "string"))];
      // A nullable field as anyOf, never a `type` array: strict validators (Inspector --strict) flag those.
      if (types.length > 1) return [name, { anyOf: types.map((type) => ({ type })) }];
      return [name, types.length === 1 ? { type: types[0] } : {}];
    }),
  );
  return { type: "object", properties };
}
