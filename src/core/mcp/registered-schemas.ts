import type { StandardSchemaWithJSON } from "@modelcontextprotocol/server";
import type { z } from "zod";
import { inputSchemaOf, type ToolDef } from "../tools/tool.js";

/**
 * The schemas a tool is registered with: Standard Schemas (what the SDK accepts) around the tool's
 * zod schemas, made once per definition and shared by every server instance.
 * - Their JSON Schema is converted once, on first use (tools/list, or a tools/call's header and
 *   result checks), not per instance: a 2026-07-28 request gets a fresh instance, and the SDK
 *   converts a registered tool's schemas again for each one.
 * - The input's `validate` passes the arguments through: `routeToolCall` (tool-call.ts) has
 *   already validated them with the tool's zod schema (with its field-naming message) and hands
 *   the SDK the parsed values, so arguments are validated once per call, not twice.
 * - The output's `validate` is the zod schema's own: the SDK checks every structuredContent.
 */
interface RegisteredSchemas {
  input: StandardSchemaWithJSON;
  output: StandardSchemaWithJSON;
}

// Keyed by the schemas, not the definition: a copy of a definition (scopedToProject's, say) shares them.
const inputs = new WeakMap<object, StandardSchemaWithJSON>();
const outputs = new WeakMap<object, StandardSchemaWithJSON>();

export function registeredSchemas(def: ToolDef<any, any>): RegisteredSchemas {
  let input = inputs.get(def.input);
  if (!input) inputs.set(def.input, (input = convertedOnce(inputSchemaOf(def), passThrough)));
  let output = outputs.get(def.output);
  if (!output) outputs.set(def.output, (output = convertedOnce(def.output)));
  return { input, output };
}

type Validate = StandardSchemaWithJSON["~standard"]["validate"];
const passThrough: Validate = (value) => ({ value });

/** `schema` as a Standard Schema whose JSON Schema is computed once per direction and target. */
function convertedOnce(schema: z.ZodType, validate?: Validate): StandardSchemaWithJSON {
  const std = (schema as unknown as StandardSchemaWithJSON)["~standard"];
  const json = new Map<string, Record<string, unknown>>();
  const convert = (io: "input" | "output") => (options: { target: string }) => {
    const key = `${io} ${options.target}`;
    let converted = json.get(key);
    if (!converted) json.set(key, (converted = std.jsonSchema[io](options as never)));
    return converted;
  };
  return {
    "~standard": {
      version: 1,
      vendor: "switchboard-mcp",
      validate: validate ?? ((value) => std.validate(value)),
      jsonSchema: { input: convert("input"), output: convert("output") },
    },
  };
}
