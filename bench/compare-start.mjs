#!/usr/bin/env node
// Two builds side by side: cold start (spawn to the `initialize` answer, as row 9a) of a "before"
// build and of this one (dist/), beside server-everything on the same node, all interleaved in one
// loop (the order flips every round), so that both builds share the machine's drift. For a change
// to the start path on a shared, noisy machine; the CPU ratios are steadier than the wall ones.
//
//   git checkout <old commit> -- src scripts && node scripts/build.mjs --outdir /tmp/before/dist
//   cp package.json /tmp/before/ && git checkout HEAD -- src scripts     (or build it in another worktree)
//   node scripts/build.mjs && node bench/compare-start.mjs --before /tmp/before/dist [--node 20,22,24] [--rounds 12]
//
// On 22 and 24 each build's warm-up start fills Node's compile cache, as a user's first start does.
import { join, resolve } from "node:path";
import { nodeBinary } from "../scripts/node-version.mjs";
import { unreachableServicesEnv } from "../scripts/from-src.mjs";
import { everything, loadAverage, ROOT, summarize, timeToInitialize } from "./lib.mjs";

const argv = process.argv.slice(2);
const opt = (name, fallback) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : fallback);
const before = opt("--before");
if (!before) throw new Error("--before <dir with a built cli.js> is required");
const after = resolve(opt("--after", join(ROOT, "dist")));
const majors = opt("--node", "20,22,24").split(",").map(Number);
const rounds = Number(opt("--rounds", 12));

const real = await unreachableServicesEnv();
const ev = everything();
const commands = majors.flatMap((major) => {
  const node = nodeBinary(major);
  const builds = [
    ["before", join(resolve(before), "cli.js")],
    ["after", join(after, "cli.js")],
  ];
  return [
    { major, build: "-", id: "everything", node, args: [ev.path, "stdio"], env: {} },
    ...builds.flatMap(([build, cli]) => [
      { major, build, id: "default", node, args: [cli], env: real },
      { major, build, id: "all+sandbox", node, args: [cli, "--toolsets", "all", "--sandbox"], env: {} },
    ]),
  ].map((c) => ({ ...c, ms: [], cpu: [] }));
});

const load0 = loadAverage();
for (const c of commands) await timeToInitialize(c.node, c.args, c.env);
for (let i = 0; i < rounds; i++) {
  for (const c of i % 2 ? [...commands].reverse() : commands) {
    const { ms, cpu } = await timeToInitialize(c.node, c.args, c.env);
    c.ms.push(ms);
    if (cpu !== undefined) c.cpu.push(cpu);
  }
  process.stderr.write(`round ${i + 1}/${rounds}\n`);
}
const load1 = loadAverage();

const med = (xs) => summarize(xs).median;
console.log(
  `${rounds} rounds, load ${load0?.[0]} -> ${load1?.[0]}; median ms (cpu ms), ratio to server-everything wall (cpu)`,
);
for (const major of majors) {
  const ref = commands.find((c) => c.major === major && c.id === "everything");
  const [refMs, refCpu] = [med(ref.ms), med(ref.cpu)];
  console.log(`node ${major}: server-everything ${refMs.toFixed(0)} ms (cpu ${refCpu.toFixed(0)})`);
  for (const id of ["default", "all+sandbox"])
    for (const build of ["before", "after"]) {
      const c = commands.find((x) => x.major === major && x.id === id && x.build === build);
      const [ms, cpu] = [med(c.ms), med(c.cpu)];
      const ratio = `${(ms / refMs).toFixed(2)} (${(cpu / refCpu).toFixed(2)})`;
      console.log(`  ${id.padEnd(12)} ${build.padEnd(7)} ${ms.toFixed(0)} ms (cpu ${cpu.toFixed(0)})  ${ratio}`);
    }
}
