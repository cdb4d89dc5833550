#!/usr/bin/env node
// Builds the published package: dist/cli.js and the chunks it loads (dist/chunk-*.js), ESM with
// every dependency bundled in: still one package with nothing to install (`npm run build` runs the
// type check, `tsc --noEmit`, first; this script only emits).
//
// dist/cli.js is src/bin.ts: it turns on Node's compile cache (22.1+) and then imports the server
// (src/cli.ts), so that everything after it is compiled once per machine, not once per start.
// Code split at every dynamic import(): the sandbox, the HTTP transport, the stdio entry, the
// hosted-mode modules (ioredis) and the services' implementations (their tools, clients and
// undici, which a stdio start loads after its first answer) are chunks of their own, read and
// compiled only when used. Chunks
// sit beside cli.js (not in a subfolder): src/ finds views/ and ../package.json from import.meta.url.
//
//   node scripts/build.mjs              build dist/
//   node scripts/build.mjs --sourcemap  also write the .js.map files (for node --enable-source-maps;
//                                       not published by default: they would double the package)
//   node scripts/build.mjs --metafile   also write meta.json beside them (what went into each file)
//   node scripts/build.mjs --outdir D   build into D instead (the benchmark does this; D/../package.json
//                                       is what --version reads)
//
// bench/ imports bundle() to build other entry points as one file with the same settings.
import { chmod, mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
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
  "const dispatcher = () => {",
  '  const D = require("undici/lib/dispatcher/dispatcher.js");',
  "  if (!patched) {",
  '    Object.assign(D.prototype, require("undici/lib/api/index.js"));',
  "    patched = true;",
  "  }",
  "  return D;",
  "};",
  "module.exports = {",
  ...Object.entries(UNDICI_EXPORTS).map(
    ([name, path]) => `  get ${name}() { dispatcher(); return require(${JSON.stringify(path)}); },`,
  ),
  "};",
].join("\n");

/**
 * zod's namespaces (`z`, `z.core`, and zod/mini, which the SDK uses) re-export every locale
 * (`z.locales.*`, about 290 KiB of translated error messages). zod speaks English unless told
 * otherwise and src/ never picks a locale, so the bundle keeps `en` and replaces the others with
 * functions that say why they are missing.
 */
const zodLocalesIndex = fileURLToPath(import.meta.resolve("zod/v4/locales")).replace(/index\.(c?js)$/, "index.js");

/**
 * The SDK's node shims export its default JSON Schema validator, built on Ajv (about 210 KiB that
 * take ~10 ms to evaluate), which every McpServer made without a `jsonSchemaValidator` creates.
 * Ours are all made with one (the shell's formValidator, core/mcp/shell.ts): core/mcp/form-validator.ts's, from
 * the tools' side: so the shims' stand-in has no Ajv (a server made without one fails on its first
 * form answer, saying why), and Ajv is read with the tools' chunk, after a stdio start's first
 * answer. There, `@modelcontextprotocol/server/validators/ajv` is a stand-in too, with the same
 * class name and method, that evaluates the Ajv module on the first getValidator() call (esbuild
 * defers a require()d ESM module's body until then). Both read the real files, so an SDK upgrade
 * that renames the chunk still builds, and one that changes their exports fails the build here.
 */
const sdkShims = fileURLToPath(import.meta.resolve("@modelcontextprotocol/server/_shims"));
const sdkAjv = fileURLToPath(import.meta.resolve("@modelcontextprotocol/server/validators/ajv"));
const sdkShapeError = (file) =>
  new Error(`scripts/build.mjs: ${file} no longer has the shape expected here; update it after the SDK upgrade`);

async function shimsWithoutAjv() {
  const text = await readFile(sdkShims, "utf8");
  if (!/export \{ AjvJsonSchemaValidator as DefaultJsonSchemaValidator, process \};/.test(text))
    throw sdkShapeError(sdkShims);
  return [
    'import process from "node:process";',
    "export class DefaultJsonSchemaValidator {",
    "  getValidator() {",
    '    throw new Error("switchboard-mcp bundles no default JSON Schema validator: pass jsonSchemaValidator");',
    "  }",
    "}",
    "export { process };",
  ].join("\n");
}

async function lazyAjvValidator() {
  const text = await readFile(sdkAjv, "utf8");
  const ajv = /import \{ (\w+) as AjvJsonSchemaValidator, .*\} from "(\.\.\/ajvProvider-[\w-]+\.mjs)";/.exec(text);
  if (!ajv || !/export \{[^}]*\bAjvJsonSchemaValidator\b/.test(text)) throw sdkShapeError(sdkAjv);
  const provider = JSON.stringify(resolve(sdkAjv, "..", ajv[2]));
  return [
    "export class AjvJsonSchemaValidator {",
    "  #inner;",
    `  getValidator(schema) { return (this.#inner ??= new (require(${provider}).${ajv[1]})()).getValidator(schema); }`,
    "}",
  ].join("\n");
}

/**
 * What `importer` takes from "undici" and the slim entry lacks. esbuild cannot check a name
 * imported from a CommonJS module (it would be `undefined` at run time, as `request` once was), so
 * the build reads the import itself. Type-only names are erased and need no export.
 */
export function missingUndiciExports(source) {
  const missing = [];
  for (const m of source.matchAll(/import\s+(type\s+)?([^;]*?)\s+from\s+["']undici["']/g)) {
    if (m[1]) continue;
    const named = /^\{([^}]*)\}$/.exec(m[2].trim());
    if (!named) {
      missing.push(m[2].trim());
      continue;
    }
    const parts = named[1].split(",").map((p) => p.trim());
    for (const part of parts.filter(Boolean)) {
      if (part.startsWith("type ")) continue;
      const name = part.split(/\s+as\s+/)[0].trim();
      if (!Object.hasOwn(UNDICI_EXPORTS, name)) missing.push(name);
    }
  }
  return missing;
}

export const slimDependencies = {
  name: "slim-dependencies",
  setup(b) {
    b.onResolve({ filter: /^undici$/ }, async (args) => {
      if (/[\\/]node_modules[\\/]/.test(args.importer)) return undefined;
      const missing = missingUndiciExports(await readFile(args.importer, "utf8"));
      if (missing.length === 0) return { path: "undici-slim", namespace: "slim" };
      const text =
        `${args.importer} imports ${missing.join(", ")} from "undici", which the bundle's slim undici ` +
        "entry does not export: add it to UNDICI_EXPORTS in scripts/build.mjs";
      return { errors: [{ text }] };
    });
    b.onLoad({ filter: /^undici-slim$/, namespace: "slim" }, () => ({
      contents: undiciEntry,
      loader: "js",
      resolveDir: root,
    }));
    b.onResolve({ filter: /^@modelcontextprotocol\/server\/_shims$/ }, () => ({
      path: "sdk-shims",
      namespace: "slim",
    }));
    b.onLoad({ filter: /^sdk-shims$/, namespace: "slim" }, async () => ({
      contents: await shimsWithoutAjv(),
      loader: "js",
      resolveDir: root,
    }));
    b.onResolve({ filter: /^@modelcontextprotocol\/server\/validators\/ajv$/ }, () => ({
      path: "sdk-ajv",
      namespace: "slim",
    }));
    b.onLoad({ filter: /^sdk-ajv$/, namespace: "slim" }, async () => ({
      contents: await lazyAjvValidator(),
      loader: "js",
      resolveDir: root,
    }));
    b.onResolve({ filter: /\/locales\/index\.js$/ }, (args) =>
      /[\\/]node_modules[\\/]zod[\\/]v4[\\/]/.test(args.importer) && args.path === "../locales/index.js"
        ? { path: "zod-locales", namespace: "slim" }
        : undefined,
    );
    b.onLoad({ filter: /^zod-locales$/, namespace: "slim" }, async () => {
      const index = await readFile(zodLocalesIndex, "utf8");
      const names = [...index.matchAll(/export \{ default as (\w+) \}/g)].map((m) => m[1]).filter((n) => n !== "en");
      const contents = [
        `export { default as en } from ${JSON.stringify(zodLocalesIndex.replace(/index\.js$/, "en.js"))};`,
        "const missing = (name) => () => {",
        // biome-ignore lint/suspicious/noTemplateCurlyInString: generated source that holds a template literal
        "  throw new Error(`zod locale ${name} is not bundled in switchboard-mcp (see scripts/build.mjs)`);",
        "};",
        ...names.map((n) => `export const ${n} = missing(${JSON.stringify(n)});`),
      ].join("\n");
      return { contents, loader: "js", resolveDir: root };
    });
  },
};

/** What every build shares: ESM for node 20, every dependency included, readable identifiers. */
const common = {
  absWorkingDir: root,
  bundle: true,
  platform: "node",
  target: "node20",
  format: "esm",
  // Bundled CommonJS packages call require() on node built-ins; ESM has no require. (Every output
  // file gets this line: a chunk with bundled CommonJS needs its own.)
  banner: {
    js:
      'import { createRequire as __sbCreateRequire } from "node:module"; ' +
      "const require = __sbCreateRequire(import.meta.url);",
  },
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
};

/** Bundles one entry point into one ESM file (the bench's minimal server). */
export async function bundle({ entry, outfile, sourcemap = false }) {
  const result = await build({ ...common, entryPoints: [entry], outfile, sourcemap: sourcemap ? "linked" : false });
  await chmod(outfile, 0o755);
  return result;
}

/** The published server: dist/cli.js (src/bin.ts; its "#!/usr/bin/env node" stays line 1) and its chunks. */
export async function bundleServer({ outdir, sourcemap = false, minify = true }) {
  const result = await build({
    ...common,
    // Unminified (bench/profile-start.mjs), each module's code follows a `// path` comment.
    ...(minify ? {} : { minifySyntax: false, minifyWhitespace: false }),
    entryPoints: { cli: "src/bin.ts" },
    outdir,
    splitting: true,
    chunkNames: "chunk-[hash]",
    sourcemap: sourcemap ? "linked" : false,
  });
  await chmod(resolve(outdir, "cli.js"), 0o755);
  return result;
}

/** The files a build writes into its outdir (the views apart). */
const isBuildOutput = (name) => /^(cli|chunk-[A-Z0-9]+)\.js(\.map)?$|^meta\.json$/.test(name);

async function main() {
  const args = process.argv.slice(2);
  const outdirArg = args.includes("--outdir") ? args[args.indexOf("--outdir") + 1] : undefined;
  const outdir = outdirArg ? resolve(outdirArg) : resolve(root, "dist");
  // tsc used to emit one .js per source file into dist/; clear it so nothing stale can be imported
  // or published. Elsewhere (--outdir) only this script's own outputs are replaced.
  if (outdir === resolve(root, "dist")) await rm(outdir, { recursive: true, force: true });
  else
    await Promise.all(
      (await readdir(outdir).catch(() => [])).filter(isBuildOutput).map((f) => rm(resolve(outdir, f), { force: true })),
    );
  await mkdir(outdir, { recursive: true });

  const started = performance.now();
  const result = await bundleServer({ outdir, sourcemap: args.includes("--sourcemap") });
  if (args.includes("--metafile")) await writeFile(resolve(outdir, "meta.json"), JSON.stringify(result.metafile));
  const files = Object.entries(result.metafile.outputs).filter(([f]) => f.endsWith(".js"));
  const kib = (bytes) => `${(bytes / 1024).toFixed(0)} KiB`;
  const entry = files.find(([f]) => f.endsWith("/cli.js") || f === "cli.js");
  const startup = startupBytes(result.metafile, entry[0]);
  const total = files.reduce((sum, [, o]) => sum + o.bytes, 0);
  const inputs = Object.keys(result.metafile.inputs).length;
  process.stderr.write(
    `built ${resolve(outdir, "cli.js")}: ${files.length} files, ${kib(total)} from ${inputs} modules ` +
      `(${kib(startup)} loaded at start) in ${Math.round(performance.now() - started)} ms\n`,
  );
  // The MCP Apps views: self-contained HTML files the server reads from beside its bundle.
  const { buildViews } = await import("./build-views.mjs");
  await buildViews({ outdir: resolve(outdir, "views"), log: false });
}

/** Bytes of the entry and every chunk it imports statically: what node reads and compiles before main() runs. */
export function startupBytes(metafile, entry) {
  const outputs = metafile.outputs;
  const seen = new Set();
  const visit = (file) => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const i of outputs[file]?.imports ?? []) if (i.kind === "import-statement" && outputs[i.path]) visit(i.path);
  };
  visit(entry);
  // The entry imports the server dynamically: that chunk and its static imports load at start too.
  for (const i of outputs[entry]?.imports ?? []) if (i.kind === "dynamic-import" && outputs[i.path]) visit(i.path);
  return [...seen].reduce((sum, f) => sum + outputs[f].bytes, 0);
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) await main();
