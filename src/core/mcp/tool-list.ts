import type { McpServer } from "@modelcontextprotocol/server";
import { supportsViews } from "./envelope.js";
import { CACHE_HINTS, MODERN_REVISION } from "./era.js";
import type { TenantRuntime } from "./runtime.js";
import { wrapRequestHandler } from "./sdk-internals.js";

/**
 * The tools/list answer, shaped for the protocol revision that asked and trimmed of what carries
 * no meaning for a model (every conversation pays for it in tokens):
 * - `$schema` lines and empty `additionalProperties: {}` the schema generator adds;
 * - zod's safe-integer bounds, true of every JSON number a client sends anyway;
 * - `minLength: 1`: the zod schema still refuses an empty string, naming the field; as a published
 *   bound it tells no model anything, in ~5 tokens on a hundred fields (the specs' bounds stay);
 * - `propertyNames: {type: "string"}` (a record's keys), true of every JSON object;
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
    if ((k === "minLength" && v === 1) || (k === "propertyNames" && isJust(v, { type: "string" }))) continue;
    // zod writes a plain nullable field as ["string", "null"]; strict validators want anyOf.
    if (k === "type" && Array.isArray(v)) out.anyOf = v.map((type) => ({ type }));
    else if (k === "properties" && v && typeof v === "object") out[k] = cleanEach(v as Record<string, unknown>);
    else out[k] = clean(v);
  }
  return out;
}

/** A `properties` map: its keys are field names (a field may be called `minLength`), its values schemas. */
function cleanEach(properties: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(properties).map(([name, schema]) => [name, clean(schema)]));
}

function isJust(value: unknown, expected: Record<string, unknown>): boolean {
  return JSON.stringify(value) === JSON.stringify(expected);
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

/**
 * Shaped tools/list answers per server definition (every tenant's), keyed by revision and MCP Apps
 * support. Kept beside the definition, not the server instance: a 2026-07-28 HTTP request gets a
 * fresh instance, and building the answer (JSON Schemas of every tool) costs several times more
 * than serving it.
 */
const toolLists = new WeakMap<object, Map<string, Record<string, unknown>[]>>();

/** tools/list shaped per revision (and per MCP Apps support) and trimmed; computed once for each. */
export function shapeToolList(server: McpServer, rt: TenantRuntime): void {
  const taskCapable = new Set(rt.definition.tools.filter((t) => t.longRunning).map((t) => t.name));
  const key = rt.definition;
  const cache = toolLists.get(key) ?? new Map<string, Record<string, unknown>[]>();
  toolLists.set(key, cache);
  wrapRequestHandler(server, "tools/list", (original) => async (request, ctx) => {
    const modern = ctx.mcpReq.envelope !== undefined;
    const revision = modern ? MODERN_REVISION : (server.server.getNegotiatedProtocolVersion() ?? "2025-11-25");
    const views = supportsViews(server, ctx);
    const key = `${revision}|${views}`;
    let tools = cache.get(key);
    if (!tools) {
      const answer = (await original(request, ctx)) as { tools: Record<string, unknown>[] };
      tools = answer.tools.map((t) => shapeTool(t, revision, taskCapable.has(String(t.name)), views));
      cache.set(key, tools);
    }
    return modern ? { tools, ...CACHE_HINTS["tools/list"] } : { tools };
  });
}
