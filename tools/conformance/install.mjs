#!/usr/bin/env node
// Installs the pinned MCP conformance suite (and the Node 22 it needs) into tools/conformance.
// Run by the root `prepare` script, so `npm ci` / `npm install` in a fresh clone sets it up from
// tools/conformance/package-lock.json. Skipped when:
//   - npm is packing or publishing (prepare also runs there; the tarball does not need it),
//   - the install is a production one (--omit=dev),
//   - SWITCHBOARD_SKIP_CONFORMANCE_INSTALL=1,
//   - npm is preparing this repository as a git dependency of another project (the clone lives in
//     npm's cache): the consumer gets the packed tarball, which needs none of this,
//   - it is already installed from the current lockfile (stamp file), so repeated root installs stay fast.
// Force a reinstall with: npm ci --prefix tools/conformance --no-audit --no-fund
import { createHash } from "node:crypto";
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

const dir = dirname(fileURLToPath(import.meta.url));
const lockfile = join(dir, "package-lock.json");
const stamp = join(dir, "node_modules", ".switchboard-install-stamp");
const entry = join(dir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js");
const say = (msg) => process.stderr.write(`conformance tools: ${msg}\n`);

const command = process.env.npm_command ?? "";
const omit = `${process.env.npm_config_omit ?? ""}`.split(/[\s,]+/);
if (process.env.SWITCHBOARD_SKIP_CONFORMANCE_INSTALL === "1") {
  say("skipped (SWITCHBOARD_SKIP_CONFORMANCE_INSTALL=1)");
  process.exit(0);
}
if (command === "pack" || command === "publish") process.exit(0);
const cache = process.env.npm_config_cache;
if (cache && resolve(dir).startsWith(resolve(cache) + sep)) process.exit(0);
if (omit.includes("dev") || process.env.npm_config_production === "true") {
  say("skipped (production install)");
  process.exit(0);
}

const lockHash = createHash("sha256").update(readFileSync(lockfile)).digest("hex");
if (existsSync(stamp) && existsSync(entry) && readFileSync(stamp, "utf8").trim() === lockHash) {
  say("up to date");
  process.exit(0);
}

// Use the npm that runs this script when there is one, so the nested install honours the same npm.
const npmCli = process.env.npm_execpath;
const args = ["ci", "--prefix", dir, "--no-audit", "--no-fund"];
const result = npmCli && /\.(c|m)?js$/.test(npmCli)
  ? spawnSync(process.execPath, [npmCli, ...args], { stdio: "inherit" })
  : spawnSync(process.platform === "win32" ? "npm.cmd" : "npm", args, { stdio: "inherit", shell: process.platform === "win32" });
if (result.status !== 0) {
  say(`npm ${args.join(" ")} failed (${result.error?.message ?? `exit ${result.status}`}); set SWITCHBOARD_SKIP_CONFORMANCE_INSTALL=1 to install without it`);
  process.exit(result.status || 1);
}
writeFileSync(stamp, `${lockHash}\n`);
say("installed");
