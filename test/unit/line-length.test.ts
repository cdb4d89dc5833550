// No source line over 120 characters in src/, views/, scripts/ and bench/. Biome's formatter wraps
// code at 120 columns but never splits a string, a template or a comment, and Biome has no rule
// for line length: this test is that rule. Split a long text with + or into named parts.
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const MAX = 120;
const ROOTS = ["src", "views", "scripts", "bench"];
const SOURCE = /\.(ts|tsx|mts|mjs|js|css|html)$/;

/**
 * Files still over the limit, each with who is rewriting it (none now): remove an entry once the
 * file is within the limit (the test fails on an entry with nothing left to allow).
 */
const ALLOWED: Record<string, string> = {};

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
  const long = new Map(files.map((file) => [file, longLines(file)]));

  it(`finds sources to check in ${ROOTS.join(", ")}`, () => {
    expect(files.length).toBeGreaterThan(100);
    expect(files).toContain("src/config.ts");
  });

  it(`no line over ${MAX} characters outside the allowed files`, () => {
    const over = [...long].filter(([file]) => !(file in ALLOWED)).flatMap(([, lines]) => lines);
    expect(over, "split these lines (see docs/contributing.md, Formatting and lint)").toEqual([]);
  });

  it("every allowed file still needs its entry", () => {
    const done = Object.keys(ALLOWED).filter((file) => !long.get(file)?.length);
    expect(done, `remove from ALLOWED in ${relative(ROOT, fileURLToPath(import.meta.url))}`).toEqual([]);
  });
});
