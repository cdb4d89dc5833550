// No source line over 120 characters in src/, views/, scripts/, bench/ and test/. Biome's formatter wraps
// code at 120 columns but never splits a string, a template or a comment, and Biome has no rule
// for line length: this test is that rule. Split a long text with + or into named parts.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const MAX = 120;
/** No module of src/ over this many lines (issue 32): split a longer one along a seam of its own. */
const MAX_FILE_LINES = 600;
const ROOTS = ["src", "views", "scripts", "bench", "test"];
const SOURCE = /\.(ts|tsx|mts|mjs|js|css|html)$/;

function sourceFiles(): string[] {
  return ROOTS.flatMap((root) =>
    readdirSync(join(ROOT, root), { recursive: true, encoding: "utf8" })
      .filter((file) => SOURCE.test(file) && !file.split(/[\\/]/).includes("node_modules"))
      .map((file) => join(root, file).split("\\").join("/")),
  );
}

function longLines(file: string): string[] {
  return readFileSync(join(ROOT, file), "utf8")
    .split("\n")
    .flatMap((line, i) => (line.length > MAX ? [`${file}:${i + 1} (${line.length})`] : []));
}

describe("line length", () => {
  const files = sourceFiles();
  const long = files.flatMap(longLines);

  it(`finds sources to check in ${ROOTS.join(", ")}`, () => {
    expect(files.length).toBeGreaterThan(100);
    expect(files).toContain("src/config.ts");
  });

  it(`no line over ${MAX} characters`, () => {
    expect(long, "split these lines (see docs/contributing.md, Formatting and lint)").toEqual([]);
  });
});

describe("file length", () => {
  const files = sourceFiles().filter((file) => file.startsWith("src/"));

  it(`no file in src/ over ${MAX_FILE_LINES} lines`, () => {
    const counts = files.map((file) => [file, readFileSync(join(ROOT, file), "utf8").split("\n").length - 1] as const);
    expect(counts.length).toBeGreaterThan(50);
    const over = counts.filter(([, lines]) => lines > MAX_FILE_LINES).map(([file, lines]) => `${file} (${lines})`);
    expect(over, "split these along a seam of their own (docs/contributing.md)").toEqual([]);
  });
});
