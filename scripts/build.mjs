#!/usr/bin/env node
// Builds the published package: one self-contained ESM file, dist/cli.js, with every dependency
// bundled in (`npm run build` runs the type check, `tsc --noEmit`, first; this script only emits).
//
//   node scripts/build.mjs              build dist/cli.js
//   node scripts/build.mjs --sourcemap  also write dist/cli.js.map (for node --enable-source-maps;
//                                       not published by default: it would double the package)
//   node scripts/build.mjs --metafile   also write meta.json beside it (what went into the bundle)
//   node scripts/build.mjs --outdir D   build D/cli.js instead (the benchmark does this; D/../package.json
//                                       is what --version reads)
//
// bench/ imports bundle() to build other entry points with exactly the same settings.
import { chmod, mkdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build } from "esbuild";

const root = fileURLToPath(new URL("..", import.meta.url));

/**
 * `import { ... } from "undici"` loads undici's index, which requires every dispatcher, fetch,
 * WebSocket, EventSource, the cache and the mock agent (about 700 KiB once bundled). src/ uses
 * only a pool, its request() method and the error classes. This entry gives src/ exactly those,
 * from the same undici version, and makes the build fail (not the program) if src/ starts to
 * import something else from "undici": add it to UNDICI_EXPORTS then.
 *
 * It is CommonJS with getters on purpose: esbuild reads `Pool` from it where src/ uses it, so the
 * undici modules (about 370 KiB, ~25 ms of start-up) run when the first pool is made, not at
 * start-up. Creating the pools lazily (on the first upstream request) is then all it takes to
 * keep undici off the path to the `initialize` answer.
 */
const UNDICI_EXPORTS = {
  Pool: "undici/lib/dispatcher/pool.js",
  Client: "undici/lib/dispatcher/client.js",
  Agent: "undici/lib/dispatcher/agent.js",
  Dispatcher: "undici/lib/dispatcher/dispatcher.js",
  errors: "undici/lib/core/errors.js",
};
const undiciEntry = [
  "let patched = false;",
  // What undici's index does so that pool.request() exists.
  'const dispatcher = () => { const D = require("undici/lib/dispatcher/dispatcher.js"); if (!patched) { Object.assign(D.prototype, require("undici/lib/api/index.js")); patched = true; } return D; };',
  "module.exports = {",
  ...Object.entries(UNDICI_EXPORTS).map(([name, path]) => `  get ${name}() { dispatcher(); return require(${JSON.stringify(path)}); },`),
  "};",
].join("\n");

/**
 * zod's namespaces (`z`, `z.core`, and zod/mini, which the SDK uses) re-export every locale
 * (`z.locales.*`, about 290 KiB of translated error messages). zod speaks English unless told
 * otherwise and src/ never picks a locale, so the bundle keeps `en` and replaces the others with
 * functions that say why they are missing.
 */
const zodLocalesIndex = fileURLToPath(import.meta.resolve("zod/v4/locales")).replace(/index\.(c?js)$/, "index.js");

const slimDependencies = {
  name: "slim-dependencies",
  setup(b) {
    b.onResolve({ filter: /^undici$/ }, (args) => (/[\\/]node_modules[\\/]/.test(args.importer) ? undefined : { path: "undici-slim", namespace: "slim" }));
    b.onLoad({ filter: /^undici-slim$/, namespace: "slim" }, () => ({ contents: undiciEntry, loader: "js", resolveDir: root }));
    b.onResolve({ filter: /\/locales\/index\.js$/ }, (args) =>
      /[\\/]node_modules[\\/]zod[\\/]v4[\\/]/.test(args.importer) && args.path === "../locales/index.js" ? { path: "zod-locales", namespace: "slim" } : undefined,
    );
    b.onLoad({ filter: /^zod-locales$/, namespace: "slim" }, async () => {
      const index = await readFile(zodLocalesIndex, "utf8");
      const names = [...index.matchAll(/export \{ default as (\w+) \}/g)].map((m) => m[1]).filter((n) => n !== "en");
      const contents = [
        `export { default as en } from ${JSON.stringify(zodLocalesIndex.replace(/index\.js$/, "en.js"))};`,
        "const missing = (name) => () => { throw new Error(`zod locale ${name} is not bundled in switchboard-mcp (see scripts/build.mjs)`); };",
        ...names.map((n) => `export const ${n} = missing(${JSON.stringify(n)});`),
      ].join("\n");
      return { contents, loader: "js", resolveDir: root };
    });
  },
};

/** Bundles one entry point into one ESM file for node 20, every dependency included. */
export async function bundle({ entry = "src/cli.ts", outfile, sourcemap = false }) {
  const result = await build({
    absWorkingDir: root,
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: "node",
    target: "node20",
    format: "esm",
    // Bundled CommonJS packages call require() on node built-ins; ESM has no require.
    banner: { js: 'import { createRequire as __sbCreateRequire } from "node:module"; const require = __sbCreateRequire(import.meta.url);' },
    // The entry's "#!/usr/bin/env node" stays line 1 (esbuild keeps an entry point's hashbang).
    sourcemap: sourcemap ? "linked" : false,
    sourcesContent: false,
    // Whitespace and syntax only: identifiers stay readable in stack traces and logs. Minifying
    // them too saves ~25% of the bytes but no measurable start-up time.
    minifySyntax: true,
    minifyWhitespace: true,
    minifyIdentifiers: false,
    legalComments: "none",
    metafile: true,
    logLevel: "warning",
    plugins: [slimDependencies],
  });
  await chmod(outfile, 0o755);
  return result;
}

async function main() {
  const args = process.argv.slice(2);
  const outdirArg = args.includes("--outdir") ? args[args.indexOf("--outdir") + 1] : undefined;
  const outdir = outdirArg ? resolve(outdirArg) : resolve(root, "dist");
  const outfile = resolve(outdir, "cli.js");
  // tsc used to emit one .js per source file into dist/; clear it so nothing stale can be imported
  // or published. Elsewhere (--outdir) only this script's own outputs are replaced.
  if (outdir === resolve(root, "dist")) await rm(outdir, { recursive: true, force: true });
  else await Promise.all(["cli.js", "cli.js.map", "meta.json"].map((f) => rm(resolve(outdir, f), { force: true })));
  await mkdir(outdir, { recursive: true });

  const started = performance.now();
  const result = await bundle({ outfile, sourcemap: args.includes("--sourcemap") });
  if (args.includes("--metafile")) await writeFile(resolve(outdir, "meta.json"), JSON.stringify(result.metafile));
  const { size } = await stat(outfile);
  const inputs = Object.keys(result.metafile.inputs).length;
  process.stderr.write(`built ${outfile}: ${(size / 1024).toFixed(0)} KiB from ${inputs} modules in ${Math.round(performance.now() - started)} ms\n`);
  // The MCP Apps views: self-contained HTML files the server reads from beside its bundle.
  const { buildViews } = await import("./build-views.mjs");
  await buildViews({ outdir: resolve(outdir, "views"), log: false });
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) await main();
