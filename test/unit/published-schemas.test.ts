// Strict JSON Schema validators (Inspector 2 --strict) flag a `type` array such as
// ["number", "null"]: every published schema writes a nullable field as anyOf instead (issue 19).
import { describe, expect, it } from "vitest";
import { publishedTools } from "../../scripts/manifest.js";

function typeArrays(schema: unknown, path: string, found: string[]): string[] {
  if (Array.isArray(schema)) schema.forEach((s, i) => typeArrays(s, `${path}[${i}]`, found));
  else if (schema && typeof schema === "object") {
    for (const [k, v] of Object.entries(schema)) {
      if (k === "type" && Array.isArray(v)) found.push(`${path}: ${JSON.stringify(v)}`);
      else typeArrays(v, `${path}.${k}`, found);
    }
  }
  return found;
}

describe("published schemas", () => {
  it("no tool's input or output schema has a type array", async () => {
    const { listed } = await publishedTools();
    const found = listed.flatMap((t) => typeArrays({ input: t.inputSchema, output: t.outputSchema }, t.name, []));
    expect(found).toEqual([]);
    // Not vacuous: the nullable fields are still published, as anyOf.
    const summary = listed.find((t) => t.name === "drones_fleet_summary")!;
    expect(summary.outputSchema.properties.boundingBox).toEqual({ anyOf: [{ type: "object" }, { type: "null" }] });
  });
});
