// src/ modules for the plain-node scripts and benchmarks. The published build is one bundle
// (dist/cli.js) that exports nothing, so what a script needs (the registries, the sandbox) is
// compiled from src/ with esbuild on demand.
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
let compiled = 0;

/**
 * Bundles `source` (TypeScript, paths relative to the repository root) and imports it. npm packages
 * stay imports: the bundle is written inside node_modules so they resolve, and removed once loaded.
 */
export async function importFromSrc(source, name = "entry") {
  const { build } = await import("esbuild");
  const dir = join(ROOT, "node_modules", ".cache", "switchboard-mcp");
  mkdirSync(dir, { recursive: true });
  const outfile = join(dir, `${name}-${process.pid}-${++compiled}.mjs`);
  try {
    await build({
      stdin: { contents: source, resolveDir: ROOT, sourcefile: `${name}.ts`, loader: "ts" },
      outfile,
      bundle: true,
      platform: "node",
      target: "node20",
      format: "esm",
      packages: "external",
      logLevel: "warning",
    });
    return await import(pathToFileURL(outfile).href);
  } finally {
    rmSync(outfile, { force: true });
  }
}

let services;
/**
 * Every service of src/services/registry.ts as a script needs it: `{ name, baseUrlVar, apiKeyVar,
 * variables }` (variables: every variable it reads, its base URL and key first).
 */
export function serviceVariables() {
  services ??= importFromSrc('export { SERVICES } from "./src/services/registry.ts";', "services").then((m) =>
    m.SERVICES.map((s) => ({
      name: s.name,
      baseUrlVar: s.baseUrlVar,
      apiKeyVar: s.apiKeyVar,
      variables: s.env.map((v) => v.name),
    })),
  );
  return services;
}

/**
 * Every service configured against an upstream that is never reached (`<name>.invalid`, a key that
 * is not one): a real deployment's start-up, for benchmarks that send no tool call.
 */
export async function unreachableServicesEnv() {
  return Object.fromEntries(
    (await serviceVariables()).flatMap((s) => [
      [s.baseUrlVar, `https://${s.name}.invalid`],
      [s.apiKeyVar, `${s.name}-not-a-real-key`],
    ]),
  );
}
