#!/usr/bin/env node
// Builds the MCP Apps views (views/<name>/index.ts and styles.css) into one self-contained HTML file
// each: the script and the stylesheet inline, a Content-Security-Policy that admits exactly those two
// (by hash) and nothing from the network, the world map bundled in. Fails when a view passes the
// gzip budget.
//
//   node scripts/build-views.mjs                 write dist/views/<name>.html and print sizes
//   node scripts/build-views.mjs --outdir D      write D/<name>.html instead
//   node scripts/build-views.mjs --no-minify     readable output (for debugging a view)
//
// scripts/build.mjs (or a test) imports buildViews(). Which views there are, their titles and image
// policy, come from the services' declarations (declaredViews).
import { createHash } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { gzipSync } from "node:zlib";
import { build } from "esbuild";

const root = fileURLToPath(new URL("..", import.meta.url));

/** Largest gzip size of one view's HTML, in bytes (150 KB). */
export const MAX_GZIP_BYTES = 150_000;

/**
 * The views the registered services declare (`views` in src/services/<name>/index.ts: name, title,
 * imgSrc), read from the registry itself: bundled in memory and imported, so a view is declared in
 * one place and this script follows.
 */
export async function declaredViews() {
  const result = await build({
    absWorkingDir: root,
    stdin: {
      contents: 'export { SERVICES } from "./src/services/registry.ts";',
      resolveDir: root,
      loader: "ts",
    },
    bundle: true,
    write: false,
    format: "esm",
    platform: "node",
    logLevel: "warning",
  });
  const source = Buffer.from(result.outputFiles[0].text).toString("base64");
  const { SERVICES } = await import(`data:text/javascript;base64,${source}`);
  return SERVICES.flatMap((service) => service.views ?? []).map((view) => ({ imgSrc: "'none'", ...view }));
}

/**
 * The atlas (views/fleet-map/countries-110m.json) without country names and ids: the map draws
 * shapes only (saves ~8 KB raw).
 */
const slimAtlas = {
  name: "slim-atlas",
  setup(b) {
    b.onLoad({ filter: /[\\/]fleet-map[\\/]countries-110m\.json$/ }, async (args) => {
      const topology = JSON.parse(await readFile(args.path, "utf8"));
      for (const object of Object.values(topology.objects)) {
        for (const g of object.geometries ?? []) {
          delete g.properties;
          delete g.id;
        }
      }
      return { contents: JSON.stringify(topology), loader: "json" };
    });
  },
};

async function bundleScript(view, minify) {
  const result = await build({
    absWorkingDir: root,
    entryPoints: [`views/${view.name}/index.ts`],
    bundle: true,
    write: false,
    format: "iife",
    platform: "browser",
    target: ["es2020", "chrome100", "safari15", "firefox100"],
    minify,
    legalComments: "none",
    charset: "utf8",
    logLevel: "warning",
    plugins: [slimAtlas],
  });
  return result.outputFiles[0].text.trim();
}

async function bundleStyle(view, minify) {
  const result = await build({
    absWorkingDir: root,
    entryPoints: [`views/${view.name}/styles.css`],
    bundle: true,
    write: false,
    minify,
    target: ["chrome100", "safari15", "firefox100"],
    charset: "utf8",
    logLevel: "warning",
  });
  return result.outputFiles[0].text.trim();
}

const sha256 = (text) => `'sha256-${createHash("sha256").update(text, "utf8").digest("base64")}'`;

/** The view's own CSP: inline code by hash only, no network of any kind (images only where noted). */
export function contentSecurityPolicy({ scriptHash, styleHash, imgSrc }) {
  return [
    "default-src 'none'",
    `script-src ${scriptHash}`,
    `style-src ${styleHash}`,
    `img-src ${imgSrc}`,
    "font-src 'none'",
    "connect-src 'none'",
    "media-src 'none'",
    "object-src 'none'",
    "frame-src 'none'",
    "worker-src 'none'",
    "manifest-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
  ].join("; ");
}

function page(view, js, css) {
  // A literal "</script" or "</style" would end the element early (esbuild escapes them in strings).
  if (/<\/script/i.test(js) || /<\/style/i.test(css))
    throw new Error(`views/${view.name}: bundle contains a closing tag`);
  const csp = contentSecurityPolicy({ scriptHash: sha256(js), styleHash: sha256(css), imgSrc: view.imgSrc });
  return [
    "<!doctype html>",
    '<html lang="en">',
    "<head>",
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<meta http-equiv="Content-Security-Policy" content="${csp}">`,
    '<meta name="color-scheme" content="light dark">',
    `<title>${view.title}</title>`,
    `<style>${css}</style>`,
    "</head>",
    "<body>",
    "<noscript>This view needs JavaScript.</noscript>",
    `<script>${js}</script>`,
    "</body>",
    "</html>",
    "",
  ].join("\n");
}

/**
 * Builds every view into `outdir/<name>.html`. Returns one entry per view with its file, sizes
 * and resource metadata. Throws (writing nothing) when a view is over the gzip budget.
 */
export async function buildViews({
  outdir = resolve(root, "dist/views"),
  minify = true,
  log = true,
  maxGzipBytes = MAX_GZIP_BYTES,
} = {}) {
  const built = [];
  for (const view of await declaredViews()) {
    const [js, css] = await Promise.all([bundleScript(view, minify), bundleStyle(view, minify)]);
    const html = page(view, js, css);
    built.push({
      ...view,
      html,
      file: resolve(outdir, `${view.name}.html`),
      bytes: Buffer.byteLength(html),
      gzipBytes: gzipSync(html, { level: 9 }).length,
    });
  }
  if (log) {
    for (const v of built) {
      process.stderr.write(
        `view ${v.name.padEnd(14)} ${kb(v.bytes).padStart(9)} raw  ${kb(v.gzipBytes).padStart(8)} gzip  -> ${v.file}\n`,
      );
    }
  }
  const over = built.filter((v) => v.gzipBytes > maxGzipBytes);
  if (over.length) {
    const sizes = over.map((v) => `${v.name} is ${kb(v.gzipBytes)}`).join(", ");
    throw new Error(`view budget exceeded (${kb(maxGzipBytes)} gzip): ${sizes}`);
  }
  await mkdir(outdir, { recursive: true });
  await Promise.all(built.map((v) => writeFile(v.file, v.html)));
  return built.map(({ html, ...rest }) => rest);
}

const kb = (n) => `${(n / 1000).toFixed(1)} KB`;

async function main() {
  const args = process.argv.slice(2);
  const outdirArg = args.includes("--outdir") ? args[args.indexOf("--outdir") + 1] : undefined;
  try {
    await buildViews({ outdir: outdirArg ? resolve(outdirArg) : undefined, minify: !args.includes("--no-minify") });
  } catch (err) {
    process.stderr.write(`build-views: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) await main();
