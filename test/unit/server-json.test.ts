// server.json is what the MCP registry lists: it must pass the registry's published schema (vendored
// in scripts/registry/, since CI cannot reach the internet) and agree with package.json, or the
// release workflow's `mcp-publisher publish` is refused after the npm package is already out.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Ajv } from "ajv";
import addFormatsModule from "ajv-formats";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const SCHEMA_PATH = join(ROOT, "scripts", "registry", "server.schema.json");
/**
 * sha256 of https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json
 * (scripts/registry/README.md).
 */
const SCHEMA_SHA256 = "3fba09590c99f61735d234822279f4223fab9e300c0a81e81c91ab62a4114de0";

const schemaBytes = readFileSync(SCHEMA_PATH);
const schema = JSON.parse(schemaBytes.toString("utf8")) as Record<string, unknown>;
const serverJson = JSON.parse(readFileSync(join(ROOT, "server.json"), "utf8")) as Record<string, any>;
const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as Record<string, any>;

// ajv-formats is CommonJS: its default export arrives wrapped or not depending on the loader.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv,
) => Ajv;
const ajv = new Ajv({ strict: false, allErrors: true });
addFormats(ajv);
const validate = ajv.compile(schema);

/** The schema's complaints about a document, one line each ("/packages/0/version must NOT be valid"). */
function problems(doc: unknown): string[] {
  return validate(doc) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath || "/"} ${e.message}`);
}

describe("server.json for the MCP registry", () => {
  it("the vendored schema is the published 2025-12-11 one, and server.json names it", () => {
    expect(createHash("sha256").update(schemaBytes).digest("hex")).toBe(SCHEMA_SHA256);
    expect(serverJson.$schema).toBe(schema.$id);
  });

  it("passes the registry's schema", () => {
    expect(problems(serverJson)).toEqual([]);
  });

  it("the schema check has teeth: a version range, a long description and a missing transport are refused", () => {
    const broken = structuredClone(serverJson);
    broken.description = "x".repeat(101);
    broken.packages[0].version = "latest";
    delete broken.packages[0].transport;
    const found = problems(broken).join("\n");
    expect(found).toMatch(/\/description must NOT have more than 100 characters/);
    expect(found).toMatch(/\/packages\/0\/version must NOT be valid/);
    expect(found).toMatch(/\/packages\/0 must have required property 'transport'/);
  });

  it("agrees with package.json: name (mcpName), version, npm identifier, repository", () => {
    expect(serverJson.name).toBe(pkg.mcpName);
    expect(serverJson.version).toBe(pkg.version);
    const npm = serverJson.packages.filter((p: Record<string, unknown>) => p.registryType === "npm");
    expect(npm).toHaveLength(1);
    expect(npm[0]).toMatchObject({
      identifier: pkg.name,
      version: pkg.version,
      registryBaseUrl: "https://registry.npmjs.org",
      transport: { type: "stdio" },
    });
    expect(serverJson.repository.url).toBe(
      String(pkg.repository.url)
        .replace(/^git\+/, "")
        .replace(/\.git$/, ""),
    );
  });
});
