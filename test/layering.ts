// Reading the source for the layering rules (test/unit/layering.test.ts, and the toy service's
// fixture in test/e2e/toy-service.e2e.test.ts): files, their relative imports, their code without comments.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";

/** Every .ts file under `dir`. */
export function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sourceFiles(path) : path.endsWith(".ts") ? [path] : [];
  });
}

/** Every relative import of a file, as an absolute path to the .ts file it names. */
export function relativeImports(file: string): string[] {
  const text = readFileSync(file, "utf8");
  return [...text.matchAll(/(?:import|export)[^'"]*?from\s+["'](\.[^"']+)["']|import\(\s*["'](\.[^"']+)["']\s*\)/g)]
    .map((m) => m[1] ?? m[2])
    .map((spec) => resolve(dirname(file), spec).replace(/\.js$/, ".ts"));
}

/** The file's text without its comments (a `//` after a colon, as in a URL, is kept). */
export function codeOf(file: string): string {
  return readFileSync(file, "utf8")
    .replace(/\/\*[\s\S]*?\*\//g, "")
    .replace(/(^|[^:])\/\/.*$/gm, "$1");
}
