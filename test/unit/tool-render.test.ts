// A tool's render runs after its work is done: a render that fails must not turn a landed write
// into an "Internal error" to retry, and every hook, render and verify included, gets the calling
// tenant's dependencies as ctx.deps, the same with one account as with many (core/tools/tool.ts).
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Egress } from "../../src/core/base/egress.js";
import { createLogger } from "../../src/core/base/logger.js";
import { type CallContext, runTool, type ToolDef, type ToolHost, toolsWith } from "../../src/core/tools/tool.js";

const egress = new Egress();
const logger = createLogger("error", egress);
type ToyDeps = { key: string };
const defineTool = toolsWith<ToyDeps>();
const tenant = (key: string): ToolHost => ({ egress, advice: new Map(), deps: () => ({ key }) });
const runtime = tenant("key-a");
const ctx = {
  signal: new AbortController().signal,
  progress: async () => undefined,
  logger,
  secret: () => undefined,
  confirm: async () => "unsupported",
  resourcesChanged: () => undefined,
  checkpoint: async () => undefined,
} as unknown as CallContext;

const text = (r: { content: Array<{ type: string; text?: string }> }) => r.content.map((c) => c.text ?? "").join("\n");

function tool(kind: "read" | "write", render: ToolDef<any, any, ToyDeps>["render"]) {
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
    verify: ({ id }, { deps }) => `toy_read { id: "${id}" } with ${deps.key} shows the name`,
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
      'Do not call toy_write again for this. To check it: toy_read { id: "t1" } with key-a shows the name.',
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
  it("render and verify too, not only run, before, resume: one shared definition, each tenant's own deps", async () => {
    const seen: string[] = [];
    const def = defineTool({
      ...tool("write", (r, _input, { deps }) => `${r.name} with ${deps.key}`),
      before: async (_input, { deps }) => void seen.push(`before ${deps.key}`),
      run: async ({ id }, { deps }) => {
        await new Promise((r) => setTimeout(r, deps.key === "key-a" ? 20 : 1));
        seen.push(`run ${deps.key}`);
        return { id, name: "renamed" };
      },
      verify: (_input, { deps }) => `ask with ${deps.key}`,
    });
    const [a, b] = [tenant("key-a"), tenant("key-b")];
    // Interleaved: a starts first and ends last; each keeps its own deps across the awaits.
    const [ra, rb] = await Promise.all([runTool(def, { id: "t1" }, ctx, a), runTool(def, { id: "t2" }, ctx, b)]);
    expect(text(ra)).toBe("renamed with key-a");
    expect(text(rb)).toBe("renamed with key-b");
    expect(seen.sort()).toEqual(["before key-a", "before key-b", "run key-a", "run key-b"]);
    expect(def.verify!({ id: "t2" }, { deps: { key: "key-b" } })).toBe("ask with key-b");
  });

  it("a render reading deps that fails after a write reports it, with verify's advice from the same deps", async () => {
    const def = tool("write", (_r, _input, { deps }) => {
      throw new Error(`no summary for ${deps.key}`);
    });
    const result = await runTool(def, { id: "t9" }, ctx, tenant("key-b"));
    expect(result.isError).toBeFalsy();
    expect(text(result)).toBe(
      "Rename a thing: done, the service confirmed it; its summary could not be written (no summary for key-b); " +
        "the whole answer is in structuredContent. " +
        'Do not call toy_write again for this. To check it: toy_read { id: "t9" } with key-b shows the name.',
    );
  });
});
