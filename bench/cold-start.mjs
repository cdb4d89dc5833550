// Goal 1: cold start. Spawn to the `initialize` answer over stdio, interleaved so every peer sees
// the same machine load: run i starts each command once, in an order that alternates.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { CLI, NODE, ROOT, everything, summarize, timeToInitialize } from "./lib.mjs";

/** Milliseconds from spawn to the initialize answer (or to exit when `untilExit`), and CPU ms used. */
async function once(args, untilExit) {
  if (!untilExit) return timeToInitialize(NODE, args);
  const started = performance.now();
  const child = spawn(NODE, args, { stdio: ["pipe", "pipe", "ignore"], env: { PATH: process.env.PATH ?? "" } });
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.stdin.end();
  await exited;
  return { ms: performance.now() - started, cpu: undefined };
}

export async function coldStart({ runs = 20, minimalBundle, log }) {
  const ev = everything();
  const peers = [
    { id: "node", label: "bare node -e '' (spawn to exit)", args: ["-e", ""], untilExit: true },
    { id: "minimal", label: "minimal one-tool SDK server", args: [join(ROOT, "bench/minimal-server.mjs")] },
    // The same server bundled exactly like dist/cli.js: the floor for a bundled server on this SDK.
    ...(minimalBundle
      ? [{ id: "minimalBundle", label: "minimal one-tool SDK server, bundled", args: [minimalBundle] }]
      : []),
    { id: "everything", label: `server-everything ${ev.version}`, args: [ev.path, "stdio"] },
    { id: "switchboard", label: "switchboard-mcp --sandbox (all toolsets)", args: [CLI, "--sandbox"] },
  ];
  for (const p of peers) {
    p.samples = [];
    p.cpu = [];
    await once(p.args, p.untilExit); // warm-up: page cache, first-run effects
  }
  for (let i = 0; i < runs; i++) {
    const order = i % 2 ? [...peers].reverse() : peers;
    for (const p of order) {
      const { ms, cpu } = await once(p.args, p.untilExit);
      p.samples.push(ms);
      if (cpu !== undefined) p.cpu.push(cpu);
    }
    if ((i + 1) % 5 === 0) log(`cold start: ${i + 1}/${runs} rounds`);
  }
  const stats = Object.fromEntries(
    peers.map((p) => [
      p.id,
      {
        label: p.label,
        ms: summarize(p.samples),
        cpuMs: p.cpu.length ? summarize(p.cpu) : undefined,
        samples: p.samples,
      },
    ]),
  );
  const ratio = stats.switchboard.ms.median / stats.everything.ms.median;
  return {
    stats,
    ratioToEverything: ratio,
    goal: { text: "switchboard median <= 0.6 x server-everything median", met: ratio <= 0.6 },
  };
}
