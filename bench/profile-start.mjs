#!/usr/bin/env node
// Where a start's time goes: builds the server unminified (module paths stay as comments in the
// chunks), starts it once under --cpu-prof with the default toolsets and a real upstream
// configuration, answers `initialize`, and prints the profile's self time by bundled module, up to
// the moment the answer arrived.
//
//   node bench/profile-start.mjs [--node 22] [--runs 3] [-- extra server args, e.g. --toolsets all --sandbox]
//
// With --node 22 or 24 the first run fills the compile cache and is not printed. The V8 profiler
// samples wall-clock ticks: on a loaded machine a descheduled process's wait is charged to the
// function it was in, so compare runs made side by side, and prefer CPU ms (bench row 9a) for totals.
import { spawn } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { nodeBinary } from "../scripts/node-version.mjs";
import { bundleServer } from "../scripts/build.mjs";
import { unreachableServicesEnv } from "../scripts/from-src.mjs";
import { chunkModule, INITIALIZE_LINE, ROOT } from "./lib.mjs";

const argv = process.argv.slice(2);
const opt = (name, fallback) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : fallback);
const major = Number(opt("--node", process.versions.node.split(".")[0]));
const runs = Number(opt("--runs", 3));
const serverArgs = argv.includes("--") ? argv.slice(argv.indexOf("--") + 1) : [];
const node = nodeBinary(major);

const tmp = mkdtempSync(join(tmpdir(), "switchboard-profile-"));
const dist = join(tmp, "pkg", "dist");
await bundleServer({ outdir: dist, minify: false });
cpSync(join(ROOT, "dist", "views"), join(dist, "views"), { recursive: true });
writeFileSync(join(tmp, "pkg", "package.json"), readFileSync(join(ROOT, "package.json")));

const env = { PATH: process.env.PATH ?? "", ...(await unreachableServicesEnv()) };
async function profileOnce(dir) {
  const child = spawn(
    node,
    ["--cpu-prof", "--cpu-prof-dir", dir, "--cpu-prof-interval", "100", join(dist, "cli.js"), ...serverArgs],
    { stdio: ["pipe", "pipe", "ignore"], env },
  );
  child.stdin.write(INITIALIZE_LINE);
  let out = "";
  let answeredAt;
  child.stdout.on("data", (d) => {
    out += d;
    if (answeredAt !== undefined || !/"id":1\b/.test(out)) return;
    // The profile's timestamps are this clock's (monotonic, µs): what the server does after its
    // answer (a stdio start loads the tools then) is left out.
    answeredAt = Number(process.hrtime.bigint() / 1000n);
    child.kill("SIGINT"); // the profile is written on the way out
  });
  await new Promise((resolve) => child.once("exit", resolve));
  const file = join(
    dir,
    readdirSync(dir).find((f) => f.endsWith(".cpuprofile")),
  );
  return { file, answeredAt };
}

/** Self time by module: each chunk line `// src/x.ts` starts that module's code. */
function byModule({ file, answeredAt }) {
  const profile = JSON.parse(readFileSync(file, "utf8"));
  const moduleOf = (url, line) => {
    const best = chunkModule(url, line);
    // A package by name; src/ by folder two levels down (src/services/builder/, src/core/mcp/) or file.
    if (best.startsWith("node_modules/")) return best.replace(/^node_modules\/(@[^/]+\/[^/]+|[^/]+).*/, "$1");
    const parts = best.split("/");
    return parts.length > 3 ? `${parts.slice(0, 3).join("/")}/` : best;
  };
  const ticks = new Map();
  let at = profile.startTime;
  profile.samples.forEach((id, i) => {
    at += profile.timeDeltas[i] ?? 0;
    if (at <= answeredAt) ticks.set(id, (ticks.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  const self = new Map();
  for (const n of profile.nodes) {
    const us = ticks.get(n.id);
    if (!us) continue;
    const { url, functionName, lineNumber } = n.callFrame;
    const key =
      functionName === "compileSourceTextModule"
        ? "compiling the bundle's code"
        : url.startsWith("file://") && url.includes(dist)
          ? moduleOf(url, lineNumber)
          : url
            ? "node internals"
            : functionName || "(anonymous)";
    self.set(key, (self.get(key) ?? 0) + us);
  }
  return self;
}

const totals = new Map();
for (let i = major >= 22 ? -1 : 0; i < runs; i++) {
  const dir = mkdtempSync(join(tmp, "prof-"));
  const self = byModule(await profileOnce(dir));
  if (i < 0) continue; // filled the compile cache
  for (const [k, v] of self) totals.set(k, [...(totals.get(k) ?? []), v]);
}
rmSync(tmp, { recursive: true, force: true });
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const rows = [...totals]
  .map(([k, v]) => [k, median([...v, ...Array(runs - v.length).fill(0)])])
  .sort((a, b) => b[1] - a[1]);
const total = rows.reduce((s, [, v]) => s + v, 0);
process.stdout.write(
  `node ${major}, ${serverArgs.join(" ") || "default toolsets"}: median of ${runs} starts, ` +
    `${(total / 1000).toFixed(1)} ms sampled\n`,
);
for (const [k, v] of rows.slice(0, 20)) process.stdout.write(`${(v / 1000).toFixed(1).padStart(8)} ms  ${k}\n`);
