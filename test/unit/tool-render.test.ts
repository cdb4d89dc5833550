// A tool's render runs after its work is done: a render that fails must not turn a landed write
// into an "Internal error" to retry, and a render that reads the tenant's dependencies must see
// them in per-user mode as it does with one account (core/tools/tool.ts, core/tenancy/tenant-scope.ts).
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Egress } from "../../src/core/base/egress.js";
import { createLogger } from "../../src/core/base/logger.js";
import { TenantScopes } from "../../src/core/tenancy/tenant-scope.js";
import { defineTool, runTool, type ToolContext, type ToolDef } from "../../src/core/tools/tool.js";

const egress = new Egress();
const logger = createLogger("error", egress);
const runtime = { egress, advice: new Map() };
const ctx = {
  signal: new AbortController().signal,
  progress: async () => undefined,
  logger,
  secret: () => undefined,
  confirm: async () => "unsupported",
  resourcesChanged: () => undefined,
  checkpoint: async () => undefined,
} as unknown as ToolContext;

const text = (r: { content: Array<{ type: string; text?: string }> }) => r.content.map((c) => c.text ?? "").join("\n");

function tool(kind: "read" | "write", render: ToolDef<any, any>["render"]) {
  return defineTool({
    name: `toy_${kind}`,
    title: kind === "read" ? "Read a thing" : "Rename a thing",
    description: "A toy tool.",
    toolset: "toy",
    kind,
    input: { id: z.string() },
    output: z.looseObject({ id: z.string(), name: z.string() }),
    run: async ({ id }) => ({ id, name: "renamed" }),
    render,
    verify: ({ id }) => `toy_read { id: "${id}" } shows the name`,
  });
}

const broken = () => {
  throw new TypeError("Cannot read properties of undefined (reading 'length')");
};

describe("a render that fails after the work is done", () => {
  it("reports a write as done, with the structured answer and how to check it, not as an error to retry", async () => {
    const result = await runTool(tool("write", broken), { id: "t1" }, ctx, runtime);
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toEqual({ id: "t1", name: "renamed" });
    expect(text(result)).toContain("Rename a thing: done, the service confirmed it");
    expect(text(result)).toContain("reading 'length'");
    expect(text(result)).toContain(
      'Do not call toy_write again for this. To check it: toy_read { id: "t1" } shows the name.',
    );
  });

  it("reports a read's answer as there, in structuredContent", async () => {
    const result = await runTool(tool("read", broken), { id: "t1" }, ctx, runtime);
    expect(result.isError).toBeFalsy();
    expect(text(result)).toMatch(/^Read a thing: the service answered, but its summary could not be written/);
    expect(text(result)).not.toContain("Do not call");
  });

  it("a render that works is the text", async () => {
    const result = await runTool(
      tool("write", (r) => `Renamed ${r.id} to ${r.name}.`),
      { id: "t1" },
      ctx,
      runtime,
    );
    expect(text(result)).toBe("Renamed t1 to renamed.");
  });
});

describe("every hook sees the calling tenant's dependencies", () => {
  it("render and verify too, not only run, before and resume", async () => {
    const scopes = new TenantScopes();
    const deps = scopes.deps<{ key: string }>("toy");
    const def = defineTool({
      ...tool("write", (r) => `${r.name} with ${deps.key}`),
      verify: () => `ask with ${deps.key}`,
    });
    const tenant = (key: string) => scopes.forTenant(def, new Map([["toy", { key }]]));
    const [a, b] = [tenant("key-a"), tenant("key-b")];
    const [ra, rb] = await Promise.all([
      runTool(a, { id: "t1" }, ctx, runtime),
      runTool(b, { id: "t2" }, ctx, runtime),
    ]);
    expect(text(ra)).toBe("renamed with key-a");
    expect(text(rb)).toBe("renamed with key-b");
    expect(b.verify!({ id: "t2" })).toBe("ask with key-b");
  });
});
