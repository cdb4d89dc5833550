// The published build is code split (scripts/build.mjs): what a start does not need (the sandbox,
// the HTTP transport, the hosted-mode modules with ioredis, OAuth) lives in chunks that are read
// only when used, and dist/cli.js is a small entry that turns the compile cache on first. A stdio
// start answers `initialize` from the services' declarations: their tools, clients and undici are
// chunks it loads after that answer (core/stdio/serve.ts), and so are Ajv (the SDK's validator)
// and, under --sandbox, the simulators' code and their listener: a --sandbox start reads only the
// simulators' declarations before it answers.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
// @ts-expect-error: a plain .mjs build script without types
import { bundleServer, startupBytes } from "../../scripts/build.mjs";
import { relativeImports } from "../layering.js";

type Metafile = {
  inputs: Record<string, unknown>;
  outputs: Record<
    string,
    { bytes: number; inputs: Record<string, unknown>; imports: { path: string; kind: string; external?: boolean }[] }
  >;
};

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** A registry (`<folder>/registry.ts`) and the declarations it lists: its imports inside the folder. */
function registryFiles(folder: string): string[] {
  const registry = join(ROOT, folder, "registry.ts");
  const declarations = relativeImports(registry).filter((f) => f.startsWith(join(ROOT, folder, "/")));
  return [registry, ...declarations].map((f) => relative(ROOT, f)).sort();
}

const dir = mkdtempSync(join(tmpdir(), "switchboard-split-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("the published build", () => {
  it("loads at start only what the first answer needs", { timeout: 60_000 }, async () => {
    const { metafile } = (await bundleServer({ outdir: dir })) as { metafile: Metafile };
    const entry = Object.keys(metafile.outputs).find((f) => f.endsWith("/cli.js"))!;
    const entryText = readFileSync(join(dir, "cli.js"), "utf8");
    expect(entryText.startsWith("#!/usr/bin/env node\n")).toBe(true);
    expect(entryText).toContain("enableCompileCache");
    expect(metafile.outputs[entry].bytes).toBeLessThan(2000);
    // The start set: the entry, the server chunk it imports, and their static imports.
    const start = new Set<string>();
    const visit = (file: string) => {
      if (start.has(file)) return;
      start.add(file);
      for (const i of metafile.outputs[file].imports)
        if (i.kind === "import-statement" && metafile.outputs[i.path]) visit(i.path);
    };
    visit(entry);
    for (const i of metafile.outputs[entry].imports) if (i.kind === "dynamic-import") visit(i.path);
    const loaded = [...start].flatMap((f) => Object.keys(metafile.outputs[f].inputs));
    expect(startupBytes(metafile, entry)).toBe([...start].reduce((sum, f) => sum + metafile.outputs[f].bytes, 0));
    // The declarations are read at start (config, --help, the instructions); nothing else of a service.
    expect(loaded.filter((i) => i.startsWith("src/services/")).sort()).toEqual(registryFiles("src/services"));
    // What answering stdio's first message adds: the chunk of core/stdio/serve.ts and its static imports.
    const stdioEntry = Object.keys(metafile.outputs).find((f) =>
      Object.keys(metafile.outputs[f].inputs).includes("src/core/stdio/serve.ts"),
    )!;
    visit(stdioEntry);
    const answering = [...start].flatMap((f) => Object.keys(metafile.outputs[f].inputs));
    expect(answering).toContain("src/core/mcp/shell.ts");
    // Nothing of telemetry is in the chunks a stdio start loads before or with its tools (launch.ts
    // imports it only when wanted), and it is a chunk of its own: still one package, no dependency.
    const withTools = new Set<string>();
    const visitAll = (file: string) => {
      if (withTools.has(file)) return;
      withTools.add(file);
      for (const i of metafile.outputs[file].imports) if (metafile.outputs[i.path]) visitAll(i.path);
    };
    const telemetryLoader = Object.keys(metafile.outputs).find((f) =>
      Object.keys(metafile.outputs[f].inputs).includes("src/launch.ts"),
    )!;
    // Everything a stdio start can reach, launch.ts's dynamic import of the telemetry aside.
    visitAll(stdioEntry);
    const telemetryChunk = Object.keys(metafile.outputs).find((f) =>
      Object.keys(metafile.outputs[f].inputs).includes("src/core/telemetry/otel.ts"),
    )!;
    expect(telemetryChunk).toBeDefined();
    expect(withTools.has(telemetryChunk)).toBe(false);
    expect(start.has(telemetryLoader)).toBe(true);
    const external = Object.values(metafile.outputs).flatMap((o) => o.imports.filter((i) => i.external));
    expect(external.filter((i) => i.path.startsWith("@opentelemetry/"))).toEqual([]);
    for (const later of [
      /^src\/services\/[^/]+\/(implementation|client|tools\/)/,
      /^src\/server\.ts$/,
      /^src\/core\/mcp\/server\.ts$/,
      /^src\/core\/tools\//,
      /^src\/core\/upstream\//,
      /node_modules\/undici\//,
      // Ajv (the SDK's JSON Schema validator, for answers to elicitInput): with the tools (core/mcp/form-validator.ts).
      /node_modules\/@modelcontextprotocol\/server\/dist\/ajvProvider-/,
      /^src\/core\/mcp\/form-validator\.ts$/,
    ]) {
      expect(
        answering.filter((i) => later.test(i)),
        `${later} is loaded before the first answer`,
      ).toEqual([]);
      expect(
        Object.keys(metafile.inputs).some((i) => later.test(i)),
        `${later} is bundled`,
      ).toBe(true);
    }
    // node:crypto (17 of node's modules) is for HTTP, tokens and confirmations, all after the answer.
    const builtins = [...start].flatMap((f) =>
      metafile.outputs[f].imports.filter((i) => i.external).map((i) => i.path),
    );
    expect(builtins).toContain("node:fs");
    expect(builtins.filter((b) => /^(node:)?crypto$/.test(b))).toEqual([]);
    // --sandbox adds the simulators' declarations (which services the sandbox configures); their
    // code and the sandbox's listener load after the answer.
    const registryChunk = Object.keys(metafile.outputs).find((f) =>
      Object.keys(metafile.outputs[f].inputs).includes("src/sandbox/registry.ts"),
    )!;
    const sandboxStart = new Set(start);
    const visitSandbox = (file: string) => {
      if (sandboxStart.has(file)) return;
      sandboxStart.add(file);
      for (const i of metafile.outputs[file].imports)
        if (i.kind === "import-statement" && metafile.outputs[i.path]) visitSandbox(i.path);
    };
    visitSandbox(registryChunk);
    const sandboxAnswering = [...sandboxStart].flatMap((f) => Object.keys(metafile.outputs[f].inputs));
    expect(sandboxAnswering.filter((i) => i.startsWith("src/sandbox/")).sort()).toEqual(registryFiles("src/sandbox"));
    for (const later of [/^src\/sandbox\/index\.ts$/, /^src\/sandbox\/simulators\/[^/]+\/index\.ts$/]) {
      expect(
        Object.keys(metafile.inputs).some((i) => later.test(i)),
        `${later} is bundled`,
      ).toBe(true);
    }
    for (const lazy of [
      /^src\/sandbox\//,
      /node_modules\/ioredis\//,
      /^src\/core\/state\/redis\.ts$/,
      /^src\/core\/http\/transport\.ts$/,
      /^src\/core\/stdio\/serve\.ts$/,
      /node_modules\/jose\//,
      // Telemetry: the OpenTelemetry SDK and its exporters load only when OTEL_* or MCP_METRICS_ADDRESS ask.
      /^src\/core\/telemetry\//,
      /node_modules\/@opentelemetry\//,
    ]) {
      expect(
        loaded.filter((i) => lazy.test(i)),
        String(lazy),
      ).toEqual([]);
      expect(
        Object.keys(metafile.inputs).some((i) => lazy.test(i)),
        `${lazy} is bundled`,
      ).toBe(true);
    }
  });
});
