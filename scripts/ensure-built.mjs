#!/usr/bin/env node
// Builds dist/ only when it is missing or older than a source it is made from, so `npm start`
// starts at once on a current bundle. Writes only to stderr: stdout belongs to the MCP protocol.
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { spawnSync } from "node:child_process";

const root = fileURLToPath(new URL("..", import.meta.url));
const SOURCES = ["src", "views", "scripts/build.mjs", "scripts/build-views.mjs", "package.json"];

function newest(path) {
  let stat;
  try {
    stat = statSync(path);
  } catch {
    return 0;
  }
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(0, ...readdirSync(path).map((name) => newest(join(path, name))));
}

const built = newest(join(root, "dist", "cli.js"));
const source = Math.max(...SOURCES.map((p) => newest(join(root, p))));
if (built === 0 || source > built) {
  process.stderr.write("switchboard-mcp: building dist/ (sources changed)\n");
  const result = spawnSync(process.execPath, [join(root, "scripts", "build.mjs")], { stdio: ["ignore", 2, 2] });
  process.exit(result.status ?? 1);
}
