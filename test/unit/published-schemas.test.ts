// Strict JSON Schema validators (Inspector 2 --strict) flag a `type` array such as
// ["number", "null"]: every published schema writes a nullable field as anyOf instead (issue 19).
import { describe, expect, it } from "vitest";
import { publishedTools } from "../../scripts/manifest.js";
import { shapeTool } from "../../src/core/mcp/tool-list.js";
import { parseInput } from "../../src/core/tools/tool.js";

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

  it("publishes the specs' bounds but not zod's noise, and the server still enforces what it leaves out", async () => {
    const { listed, defs } = await publishedTools();
    const noise: string[] = [];
    const scan = (schema: unknown, path: string): void => {
      if (Array.isArray(schema)) schema.forEach((s, i) => scan(s, `${path}[${i}]`));
      else if (schema && typeof schema === "object") {
        const s = schema as Record<string, unknown>;
        if (s.minLength === 1) noise.push(`${path}: minLength 1`);
        if (JSON.stringify(s.propertyNames) === '{"type":"string"}') noise.push(`${path}: propertyNames`);
        if ("$schema" in s) noise.push(`${path}: $schema`);
        for (const [k, v] of Object.entries(s)) if (k !== "propertyNames") scan(v, `${path}.${k}`);
      }
    };
    for (const t of listed) scan(t.inputSchema, t.name);
    expect(noise).toEqual([]);

    const input = (name: string) => listed.find((t) => t.name === name)!.inputSchema.properties;
    const launch = input("build_launch_project");
    expect(launch.projectId).toEqual({ type: "string", minLength: 4, maxLength: 35, pattern: "^[a-z][a-z0-9-]*$" });
    expect(launch.description).toMatchObject({ maxLength: 500 });
    expect(launch.label).toMatchObject({ maxLength: 80 });
    expect(launch.secrets).toMatchObject({ maxItems: 50 });
    expect(input("build_list_projects").limit).toMatchObject({ minimum: 1, maximum: 100 });
    expect(input("build_list_projects").sortField).toMatchObject({ enum: ["date", "lastModified"] });
    expect(input("drones_find_nearest").latitude).toMatchObject({ minimum: -90, maximum: 90 });
    expect(input("build_get_project").projectId).toEqual({ type: "string" });

    // What is not published is still refused before any request, naming the field.
    const getProject = defs.find((d) => d.name === "build_get_project")!;
    const refused = (projectId: string) => {
      const r = parseInput(getProject, { projectId });
      return r.ok ? "accepted" : (r.result.content[0] as { text: string }).text;
    };
    expect(refused("")).toMatch(/projectId: projectId is required/);
    expect(refused("a".repeat(201))).toMatch(/projectId: projectId is too long/);
    expect(refused("a".repeat(200))).toBe("accepted");
    const alert = defs.find((d) => d.name === "drones_get_alert")!;
    expect(parseInput(alert, { id: "" }).ok).toBe(false);
  });

  it("trims keywords, never a field that bears a keyword's name", () => {
    const properties = {
      minLength: { type: "string" },
      propertyNames: { type: "string" },
      name: { type: "string", minLength: 1 },
    };
    const shaped = shapeTool({ name: "t", inputSchema: { type: "object", properties } }, "2025-11-25", false);
    expect((shaped.inputSchema as { properties: unknown }).properties).toEqual({
      minLength: { type: "string" },
      propertyNames: { type: "string" },
      name: { type: "string" },
    });
  });
});
