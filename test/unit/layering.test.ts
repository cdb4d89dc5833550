// The layering rules of docs/architecture.md, checked on every import in src/:
// core/ knows no service (it imports only core/, the SDK and libraries); no service imports another
// service or the sandbox; the sandbox imports no service.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const SRC = fileURLToPath(new URL("../../src", import.meta.url));

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : path.endsWith(".ts") ? [path] : [];
  });
}

/** Every relative import of a file, as a path under src/ ("core/tool.ts", "services/builder/client.ts"). */
function imports(file: string): string[] {
  const text = readFileSync(file, "utf8");
  return [...text.matchAll(/(?:import|export)[^'"]*?from\s+["'](\.[^"']+)["']|import\(\s*["'](\.[^"']+)["']\s*\)/g)]
    .map((m) => m[1] ?? m[2])
    .map((spec) => relative(SRC, resolve(dirname(file), spec)).replace(/\.js$/, ".ts"));
}

const area = (path: string) => {
  const [top, second] = path.split("/");
  return top === "services" && second && second !== "registry.ts" ? `services/${second}` : top;
};

const all = files(SRC).map((f) => ({ file: relative(SRC, f), imports: imports(f) }));

describe("layering", () => {
  it("reads every source file", () => {
    expect(all.length).toBeGreaterThan(40);
  });

  it("core imports only core", () => {
    const bad = all.filter((f) => f.file.startsWith("core/")).flatMap((f) => f.imports.filter((i) => !i.startsWith("core/")).map((i) => `${f.file} -> ${i}`));
    expect(bad).toEqual([]);
  });

  it("no service imports another service or the sandbox", () => {
    const bad = all
      .filter((f) => area(f.file).startsWith("services/"))
      .flatMap((f) => f.imports.filter((i) => (area(i).startsWith("services/") && area(i) !== area(f.file)) || i.startsWith("sandbox/") || i === "services/registry.ts").map((i) => `${f.file} -> ${i}`));
    expect(bad).toEqual([]);
  });

  it("the sandbox imports no service and nothing of the server", () => {
    const bad = all.filter((f) => f.file.startsWith("sandbox/")).flatMap((f) => f.imports.filter((i) => !i.startsWith("sandbox/")).map((i) => `${f.file} -> ${i}`));
    expect(bad).toEqual([]);
  });
});
