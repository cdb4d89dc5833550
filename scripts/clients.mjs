#!/usr/bin/env node
// The third-party MCP client libraries that only the client matrix (test/clients/*.test.ts) and the
// bench's peers use live in their own package, test/clients/ (its own package.json and lockfile),
// so that the server's `npm ci` does not install them. `node scripts/clients.mjs` installs that
// package when a pinned library is missing or at another version (what `npm run bench` runs first).
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const CLIENTS = fileURLToPath(new URL("../test/clients/", import.meta.url));
export const CLIENTS_MODULES = join(CLIENTS, "node_modules");
export const INSTALL_CLIENTS = "npm ci --prefix test/clients";

/** The installed version of one of that package's libraries ("not installed" when it is not). */
export function clientVersion(pkg) {
  const manifest = join(CLIENTS_MODULES, pkg, "package.json");
  if (!existsSync(manifest)) return "not installed";
  return JSON.parse(readFileSync(manifest, "utf8")).version;
}

/** Undefined when every pinned library is installed at its pinned version; else one line saying what to run. */
export function clientsMissing() {
  const { devDependencies } = JSON.parse(readFileSync(join(CLIENTS, "package.json"), "utf8"));
  const stale = Object.entries(devDependencies).filter(([pkg, pinned]) => clientVersion(pkg) !== pinned);
  if (stale.length === 0) return undefined;
  const what =
    stale.length === Object.keys(devDependencies).length
      ? "test/clients/ is not installed"
      : `${stale.map(([pkg, pinned]) => `${pkg}@${pinned}`).join(", ")} not installed`;
  return `${what} (run: ${INSTALL_CLIENTS})`;
}

if (process.argv[1] === fileURLToPath(import.meta.url) && clientsMissing()) {
  process.stderr.write(`installing the client libraries (${INSTALL_CLIENTS})\n`);
  execFileSync("npm", ["ci", "--prefix", CLIENTS, "--no-audit", "--no-fund"], { stdio: "inherit" });
}
