// The published build is code split (scripts/build.mjs): what a start does not need (the sandbox,
// the HTTP transport, the hosted-mode modules with ioredis, OAuth) lives in chunks that are read
// only when used, and dist/cli.js is a small entry that turns the compile cache on first.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
// @ts-expect-error: a plain .mjs build script without types
import { bundleServer, startupBytes } from "../../scripts/build.mjs";

type Metafile = {
  inputs: Record<string, unknown>;
  outputs: Record<
    string,
    { bytes: number; inputs: Record<string, unknown>; imports: { path: string; kind: string }[] }
  >;
};

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
    expect(loaded.some((i) => i.startsWith("src/services/"))).toBe(true);
    for (const lazy of [
      /^src\/sandbox\//,
      /node_modules\/ioredis\//,
      /^src\/core\/state\/redis\.ts$/,
      /^src\/core\/http\/transport\.ts$/,
      /^src\/core\/stdio\/serve\.ts$/,
      /node_modules\/jose\//,
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
    expect(startupBytes(metafile, entry)).toBe([...start].reduce((sum, f) => sum + metafile.outputs[f].bytes, 0));
  });
});
