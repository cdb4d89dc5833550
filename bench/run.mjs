#!/usr/bin/env node
// npm run bench: builds the bundle privately, then measures switchboard-mcp beside its peers in the same run, prints
// one table per goal and writes bench/results.json. See bench/README.md.
//
//   node bench/run.mjs [--only cold,tokens,calls,polling,push,http,package,hosted,ledger,tenants,listen,versions,
//     telemetry]
//                      [--quick] [--use-dist]
//   --only versions-calls: row 9b alone; BENCH_NODE_MAJORS=20,24 narrows row 9 to those Node lines.
import { execFile } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { availableParallelism, cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { callOverhead } from "./call-overhead.mjs";
import { telemetryCost } from "./telemetry-cost.mjs";
import { coldStart } from "./cold-start.mjs";
import { contextCost } from "./context-cost.mjs";
import { hosted } from "./hosted.mjs";
import { ledgerCost } from "./ledger-cost.mjs";
import { tenantCost } from "./tenants.mjs";
import { nodeVersions } from "./node-versions.mjs";
import { listenFlood } from "./listen.mjs";
import { httpLoad } from "./http-load.mjs";
import { clientsMissing } from "../scripts/clients.mjs";
import { ROOT, loadAverage, loadSandbox, round, useCli } from "./lib.mjs";
import { packageFootprint } from "./package-footprint.mjs";
import { polling } from "./polling.mjs";
import { push } from "./push.mjs";

const missingPeers = clientsMissing();
if (missingPeers) {
  process.stderr.write(
    `bench: the peers (server-everything, the OpenAPI bridge) are in test/clients: ${missingPeers}\n`,
  );
  process.exit(1);
}

const argv = process.argv.slice(2);
const quick = argv.includes("--quick");
const only = argv.includes("--only") ? new Set(argv[argv.indexOf("--only") + 1].split(",")) : undefined;
const want = (id) => !only || only.has(id);
const started = Date.now();
const log = (msg) =>
  process.stderr.write(`[bench ${((Date.now() - started) / 1000).toFixed(0).padStart(3)} s] ${msg}\n`);

// --- a private build ----------------------------------------------------------------------------
// The published build (scripts/build.mjs, what `npm run build` runs) is built into a temp dir that
// keeps the package layout: package.json one level above dist/cli.js (for --version), README and
// the rest of package.json "files" beside it, node_modules linked so that the minimal server and the
// peers resolve as in the repository. Other work rebuilding dist/ meanwhile cannot disturb the
// run, and the run does not touch dist/. `--use-dist` measures the existing dist/ instead.
const execFileP = promisify(execFile);
const tmp = mkdtempSync(join(tmpdir(), "switchboard-bench-"));
const pkg = join(tmp, "pkg");
mkdirSync(pkg);
const manifest = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));
for (const f of ["package.json", "README.md", "LICENSE", ...(manifest.files ?? [])]) {
  if (f !== "dist" && existsSync(join(ROOT, f))) cpSync(join(ROOT, f), join(pkg, f), { recursive: true });
}
symlinkSync(join(ROOT, "node_modules"), join(pkg, "node_modules"), "dir");
if (argv.includes("--use-dist")) {
  if (!existsSync(join(ROOT, "dist/cli.js"))) {
    process.stderr.write("bench: dist/cli.js is missing; run `npm run build` first.\n");
    process.exit(1);
  }
  cpSync(join(ROOT, "dist"), join(pkg, "dist"), { recursive: true });
} else {
  log("building the bundle (scripts/build.mjs) into a private directory...");
  const { stderr } = await execFileP(
    process.execPath,
    [join(ROOT, "scripts/build.mjs"), "--outdir", join(pkg, "dist")],
    { cwd: ROOT },
  );
  if (stderr.trim()) log(stderr.trim());
}
// bench/minimal-server.mjs bundled with the same settings, for the cold-start floor.
const minimalBundle = join(tmp, "minimal-server.bundle.mjs");
await (await import("../scripts/build.mjs")).bundle({ entry: "bench/minimal-server.mjs", outfile: minimalBundle });
useCli(join(pkg, "dist/cli.js"));
const build = {
  source: argv.includes("--use-dist") ? "dist/" : "scripts/build.mjs",
  bytes: readdirSync(join(pkg, "dist"))
    .filter((f) => f.endsWith(".js"))
    .reduce((sum, f) => sum + statSync(join(pkg, "dist", f)).size, 0),
  distFiles: readdirSync(join(pkg, "dist"), { recursive: true }).length,
  // A bundle imports only node built-ins and its own chunks; tsc output imports @modelcontextprotocol/sdk...
  bundled: readdirSync(join(pkg, "dist"))
    .filter((f) => f.endsWith(".js"))
    .every(
      (f) => !/\bfrom\s*"(?!node:|\.\/chunk-)[^"]+"/.test(readFileSync(join(pkg, "dist", f), "utf8").slice(0, 4000)),
    ),
};
if (!build.bundled) log("warning: dist/cli.js is not a single-file bundle");

const results = {
  startedAt: new Date(started).toISOString(),
  machine: {
    node: process.version,
    cpus: availableParallelism?.() ?? cpus().length,
    cpuModel: cpus()[0]?.model,
    loadAverageBefore: loadAverage(),
  },
  build,
};

const cleanups = [() => rmSync(tmp, { recursive: true, force: true })];
const fail = (section, err) => {
  log(`${section} failed: ${err?.stack ?? err}`);
  results[section] = { error: String(err?.message ?? err) };
};

try {
  if (want("cold")) {
    log("cold start...");
    try {
      results.coldStart = await coldStart({ runs: quick ? 5 : 20, minimalBundle, log });
    } catch (err) {
      fail("coldStart", err);
    }
  }

  let sandbox;
  const versionCalls = want("versions-calls");
  if (want("tokens") || want("calls") || want("versions") || versionCalls) {
    const { startSandbox, defaultTimeScale } = await loadSandbox();
    sandbox = await startSandbox({ timeScale: defaultTimeScale });
    cleanups.unshift(() => sandbox.close());
  }
  if (want("tokens")) {
    log("context cost...");
    try {
      results.contextCost = await contextCost({ sandbox, log });
    } catch (err) {
      fail("contextCost", err);
    }
  }
  if (want("calls")) {
    log("call overhead...");
    try {
      results.callOverhead = await callOverhead({ sandbox, calls: quick ? 400 : 2000, warmup: quick ? 50 : 200, log });
    } catch (err) {
      fail("callOverhead", err);
    }
  }
  if (want("telemetry")) {
    log("telemetry cost...");
    try {
      results.telemetryCost = await telemetryCost({ sandbox, blocks: quick ? 4 : 16, log });
      const t = results.telemetryCost;
      log(
        `telemetry: cpu ms per tools/call off ${t.cpuMsPerCall.off}, disabled ${t.cpuMsPerCall.disabled}, ` +
          `on (100% sampled) ${t.cpuMsPerCall.on}: on/off ${t.onOverOff} (goal <= 1.05), ` +
          `+${t.addedUsPerCall} µs; peer (SDK, 2 spans) on/off ${t.peerOnOverOff}, +${t.peerAddedUsPerCall} µs`,
      );
    } catch (err) {
      fail("telemetryCost", err);
    }
  }
  if (want("versions") || versionCalls) {
    log("node versions (20, 22, 24): cold start and call costs...");
    try {
      const cold = want("versions");
      const majors = process.env.BENCH_NODE_MAJORS?.split(",").map(Number);
      results.nodeVersions = await nodeVersions({ sandbox, log, quick, cold, ...(majors ? { majors } : {}) });
    } catch (err) {
      fail("nodeVersions", err);
    }
  }
  if (want("push")) {
    log("push against poll (BUILD_WEBHOOKS, TLS made here)...");
    try {
      results.push = await push({ log, waits: quick ? 5 : 10 });
    } catch (err) {
      fail("push", err);
    }
  }
  if (want("polling")) {
    log("polling cost...");
    try {
      results.polling = await polling({ log, windowMs: quick ? 2000 : 4000 });
    } catch (err) {
      fail("polling", err);
    }
  }
  if (want("http")) {
    log("HTTP load...");
    try {
      results.httpLoad = await httpLoad({
        log,
        callsPerSession: quick ? 40 : 200,
        churn: quick ? 1000 : 10_000,
        churnSeconds: quick ? 20 : 120,
      });
    } catch (err) {
      fail("httpLoad", err);
    }
  }
  if (want("hosted")) {
    log("hosted mode (Redis, nginx, replicas)...");
    try {
      results.hosted = await hosted({ log, quick, cores: results.machine.cpus });
    } catch (err) {
      fail("hosted", err);
    }
  }
  if (want("ledger")) {
    log("spend ledger cost (Redis, two replicas: ledger on and off)...");
    try {
      results.ledger = await ledgerCost({ log, quick });
    } catch (err) {
      fail("ledger", err);
    }
  }
  if (want("tenants")) {
    log("tenants (per-user keys)...");
    try {
      results.tenants = await tenantCost({ log, quick });
    } catch (err) {
      fail("tenants", err);
    }
  }
  if (want("listen")) {
    log("listen flood (Redis, one replica, per-user keys)...");
    try {
      results.listen = await listenFlood({ log, quick });
    } catch (err) {
      fail("listen", err);
    }
  }
  if (want("package")) {
    log("package footprint (npm pack, npm install from the registry)...");
    try {
      results.package = await packageFootprint({ packageRoot: pkg, tmp, log });
    } catch (err) {
      fail("package", err);
    }
  }
} finally {
  for (const c of cleanups) await Promise.resolve(c()).catch(() => undefined);
}

results.machine.loadAverageAfter = loadAverage();
results.durationSeconds = (Date.now() - started) / 1000;
results.goals = collectGoals(results);
writeFileSync(join(ROOT, "bench/results.json"), `${JSON.stringify(results, roundReplacer, 2)}\n`);
process.stdout.write(render(results));
process.stdout.write(`\nwrote bench/results.json (${results.durationSeconds.toFixed(0)} s)\n`);

// --- output ------------------------------------------------------------------------------------

function roundReplacer(_key, value) {
  return typeof value === "number" && !Number.isInteger(value) ? round(value, 3) : value;
}

function collectGoals(r) {
  const goals = [];
  const add = (id, g, value) => g && goals.push({ id, text: g.text, value, met: g.met ?? null, note: g.note });
  if (r.coldStart?.goal) add("1 cold start", r.coldStart.goal, `${fmt(r.coldStart.ratioToEverything, 2)} x`);
  if (r.contextCost?.goals) {
    const g = r.contextCost.goals;
    add("2 context", g.defaultsModel, `${g.defaultsModel.value} tokens`);
    add("2 context", g.defaultsWhole, `${g.defaultsWhole.value} tokens`);
    add("2 context", g.allPerTool, `${fmt(g.allPerTool.value, 1)} tokens per tool`);
    add(
      "2 context",
      r.contextCost.goals.modelPerTool,
      `${fmt(r.contextCost.goals.modelPerTool.value, 0)} vs ${fmt(r.contextCost.goals.modelPerTool.bridge, 0)}`,
    );
    add(
      "2 context",
      r.contextCost.goals.perTool,
      `${fmt(r.contextCost.goals.perTool.value, 0)} vs ${fmt(r.contextCost.goals.perTool.bridge, 0)}`,
    );
  }
  if (r.callOverhead?.goal) {
    const a = r.callOverhead.added;
    add(
      "3 call overhead",
      { text: "switchboard median added latency over direct < 0.25 ms", met: r.callOverhead.goal.underQuarterMs },
      `+${fmt(a.switchboard.median, 3)} ms (a no-op MCP round trip alone: ` +
        `${fmt(r.callOverhead.stats.mcpFloor.median, 3)} ms)`,
    );
    add(
      "3 call overhead",
      { text: "switchboard added median below the bridge's", met: r.callOverhead.goal.belowBridge },
      `+${fmt(a.switchboard.median, 3)} vs +${fmt(a.bridge.median, 3)} ms`,
    );
  }
  if (r.httpLoad?.goals) {
    add("4 HTTP", r.httpLoad.goals.errors, `${r.httpLoad.load.errors} errors`);
    add(
      "4 HTTP",
      r.httpLoad.goals.memory,
      `${fmt(r.httpLoad.churn.growthMb, 1)} MB over ${r.httpLoad.churn.closed} sessions`,
    );
  }
  if (r.polling?.goals) {
    add("5 polling", r.polling.goals.sameProject, `${fmt(r.polling.goals.sameProject.value, 1)} per interval`);
    add(
      "5 polling",
      r.polling.goals.differentProjects,
      `${fmt(r.polling.goals.differentProjects.value, 1)} per interval`,
    );
    add(
      "5 polling",
      r.polling.goals.stopsOnCancel,
      `${r.polling.sameProject.requestsAfterCancel + r.polling.differentProjects.requestsAfterCancel} requests ` +
        "after cancel",
    );
  }
  if (r.push?.goals) {
    add("5b push", r.push.goals.latency, `${fmt(r.push.goals.latency.value, 0)} ms`);
    add("5b push", r.push.goals.requests, `${fmt(r.push.goals.requests.value, 1)} x fewer`);
  }
  if (r.package?.goal) add("6 package", r.package.goal, `${r.package.installedPackages ?? "?"} packages`);
  if (r.hosted?.goals) {
    const g = r.hosted.goals;
    const per = (m) => `${fmt(m.perCall, 3)} ± ${fmt(m.uncertainty, 3)} commands per call`;
    add("7 hosted", g.redisTool, per(r.hosted.redis.toolCall.commands));
    add("7 hosted", g.redisPoll, per(r.hosted.redis.poll.commands));
  }
  if (r.tenants?.goals) {
    const t = r.tenants;
    add("8 tenants", t.goals.memory, `${fmt(t.kbPerTenant, 0)} KB per tenant`);
    add("8 tenants", t.goals.cpu, `${fmt(t.cpuRatio, 2)} x`);
  }
  if (r.listen?.goals) {
    const l = r.listen;
    const per = (x) => `${fmt(x.getsPerSecond, 1)} GETs/s, ${fmt(x.redisPerSecond, 1)} Redis commands/s`;
    add("9 listen flood", l.goals.keyless, per(l.keyless));
    add("9 listen flood", l.goals.keyed, per(l.keyed));
  }
  for (const g of r.nodeVersions?.goals ?? []) add(g.id, g, `${fmt(g.value, 2)} x`);
  return goals;
}

function fmt(x, digits = 1) {
  if (x === undefined || x === null || Number.isNaN(x)) return "-";
  return Number(x).toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

function table(title, headers, rows) {
  const cells = [headers, ...rows].map((r) => r.map((c) => (c === undefined || c === null ? "" : String(c))));
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? "").length)));
  const line = (r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join("  ");
  const rule = widths.map((w) => "-".repeat(w)).join("  ");
  return `\n${title}\n${line(cells[0])}\n${rule}\n${cells.slice(1).map(line).join("\n")}\n`;
}

function render(r) {
  let out =
    `\nswitchboard-mcp benchmark, ${r.startedAt}, node ${r.machine.node}, ${r.machine.cpus} CPUs, ` +
    `load average ${r.machine.loadAverageBefore?.join(" ")} -> ${r.machine.loadAverageAfter?.join(" ")}\n`;
  out +=
    `dist/ (${r.build.source}): ${fmt(r.build.bytes / 1024, 0)} KiB, ` +
    `${r.build.bundled ? "self-contained bundle (entry + chunks)" : "NOT a bundle"}, ` +
    `${r.build.distFiles} file(s) in dist/\n`;

  const c = r.coldStart;
  if (c?.stats) {
    const ev = c.stats.everything.ms.median;
    const mi = c.stats.minimal.ms.median;
    out += table(
      `1. Cold start: spawn to initialize answer over stdio, ms (${c.stats.switchboard.ms.n} runs each, ` +
        "interleaved, after a warm-up)",
      ["command", "median", "min", "max", "cpu ms (median)", "x everything", "x minimal", "x minimal bundled"],
      ["node", "minimal", "minimalBundle", "everything", "switchboard"]
        .filter((id) => c.stats[id])
        .map((id) => {
          const s = c.stats[id];
          const mb = c.stats.minimalBundle?.ms.median;
          return [
            s.label,
            fmt(s.ms.median),
            fmt(s.ms.min),
            fmt(s.ms.max),
            fmt(s.cpuMs?.median),
            fmt(s.ms.median / ev, 2),
            fmt(s.ms.median / mi, 2),
            mb ? fmt(s.ms.median / mb, 2) : "-",
          ];
        }),
    );
  } else if (c) out += `\n1. Cold start: ERROR ${c.error}\n`;

  const t = r.contextCost;
  if (t?.switchboard) {
    const s = t.switchboard;
    const rows = [
      [
        "switchboard-mcp, default toolsets",
        t.defaults.tools,
        t.defaults.total,
        fmt(t.defaults.perToolAverage, 0),
        fmt(t.defaults.total / t.everything.total, 2),
        fmt(t.defaults.total / t.bridge.total, 2),
      ],
      [
        "  of which name + description + input (what the model sees)",
        "",
        t.defaults.model,
        fmt(t.defaults.model / t.defaults.tools, 0),
        "",
        "",
      ],
      [
        "switchboard-mcp, --toolsets all",
        s.tools,
        s.total,
        fmt(s.perToolAverage, 0),
        fmt(s.total / t.everything.total, 2),
        fmt(s.total / t.bridge.total, 2),
      ],
      ["  of which name + description + input (what the model sees)", "", s.model, fmt(s.model / s.tools, 0), "", ""],
      ...Object.entries(s.toolsets).map(([k, v]) => [
        `  --toolsets ${k}`,
        v.tools,
        v.total,
        fmt(v.perToolAverage, 0),
        "",
        "",
      ]),
      [
        `server-everything ${t.everything.version}`,
        t.everything.tools,
        t.everything.total,
        fmt(t.everything.perToolAverage, 0),
        "1.00",
        "",
      ],
      [
        `openapi-mcp-server ${t.bridge.version}, 3 APIs`,
        t.bridge.tools,
        t.bridge.total,
        fmt(t.bridge.perToolAverage, 0),
        "",
        "1.00",
      ],
      ...Object.entries(t.bridge.apis).map(([k, v]) => [`  ${k}`, v.tools, v.total, fmt(v.perToolAverage, 0), "", ""]),
    ];
    out += table(
      "2. Context cost: tools/list answer, o200k tokens",
      ["server", "tools", "tokens", "per tool", "x everything", "x bridge"],
      rows,
    );
    const p = s.parts;
    out +=
      `   switchboard-mcp tokens by part (summed over tools): descriptions ${p.description}, ` +
      `inputSchema ${p.inputSchema}, outputSchema ${p.outputSchema}, annotations ${p.annotations}; ` +
      `the rest is names, titles and JSON punctuation\n`;
    out += table(
      "   per tool (switchboard-mcp)",
      ["tool", "tokens", "description", "input", "output", "annotations", "bridge equivalent", "its tokens"],
      s.perTool.map((x) => [
        x.name,
        x.tokens,
        x.description,
        x.inputSchema,
        x.outputSchema,
        x.annotations,
        x.bridgeEquivalent?.name ?? "-",
        x.bridgeEquivalent?.tokens ?? "-",
      ]),
    );
  } else if (t) out += `\n2. Context cost: ERROR ${t.error}\n`;

  const o = r.callOverhead;
  if (o?.stats) {
    const d = o.stats.direct;
    out += table(
      `3. Call overhead: ${o.calls} sequential GET /api/drones/:id per path, ms per call`,
      ["path", "median", "min", "max", "p99", "added median", "added p99", "errors"],
      [
        ["direct undici", fmt(d.median, 3), fmt(d.min, 3), fmt(d.max, 3), fmt(d.p99, 3), "", "", o.errors.direct],
        [
          "MCP floor: minimal server echo, no upstream (stdio)",
          fmt(o.stats.mcpFloor.median, 3),
          fmt(o.stats.mcpFloor.min, 3),
          fmt(o.stats.mcpFloor.max, 3),
          fmt(o.stats.mcpFloor.p99, 3),
          "",
          "",
          o.errors.mcpFloor,
        ],
        [
          "two-hop floor: minimal server + undici GET (stdio)",
          fmt(o.stats.twohop.median, 3),
          fmt(o.stats.twohop.min, 3),
          fmt(o.stats.twohop.max, 3),
          fmt(o.stats.twohop.p99, 3),
          fmt(o.stats.twohop.median - d.median, 3),
          fmt(o.stats.twohop.p99 - d.p99, 3),
          o.errors.twohop,
        ],
        [
          "switchboard-mcp drones_get_drone (stdio)",
          fmt(o.stats.switchboard.median, 3),
          fmt(o.stats.switchboard.min, 3),
          fmt(o.stats.switchboard.max, 3),
          fmt(o.stats.switchboard.p99, 3),
          fmt(o.added.switchboard.median, 3),
          fmt(o.added.switchboard.p99, 3),
          o.errors.switchboard,
        ],
        [
          `openapi-mcp-server ${o.bridgeTool} (stdio)`,
          fmt(o.stats.bridge.median, 3),
          fmt(o.stats.bridge.min, 3),
          fmt(o.stats.bridge.max, 3),
          fmt(o.stats.bridge.p99, 3),
          fmt(o.added.bridge.median, 3),
          fmt(o.added.bridge.p99, 3),
          o.errors.bridge,
        ],
      ],
    );
  } else if (o) out += `\n3. Call overhead: ERROR ${o.error}\n`;

  const h = r.httpLoad;
  if (h?.load) {
    const l = h.load;
    out += table(
      `4. HTTP under load: ${l.sessions} sessions x ${l.callsPerSession} drones_get_drone calls, Streamable HTTP`,
      ["measure", "value"],
      [
        ["calls", l.calls],
        ["wall time (s)", fmt(l.seconds, 2)],
        ["throughput (calls/s)", fmt(l.throughput, 0)],
        [
          "latency median / p99 / max (ms)",
          `${fmt(l.latency.median, 2)} / ${fmt(l.latency.p99, 2)} / ${fmt(l.latency.max, 2)}`,
        ],
        ["errors", l.errors],
        ["CPU per call: server / clients (ms)", `${fmt(l.serverCpuMsPerCall, 2)} / ${fmt(l.clientCpuMsPerCall, 2)}`],
        ["server RSS before -> after (MB)", `${fmt(l.rssBeforeMb)} -> ${fmt(l.rssAfterMb)}`],
        [
          `session churn on a fresh server (after ${h.churn.warmupCycles} warm-up cycles): initialize + DELETE, ` +
            `target ${h.churn.target}`,
          `${h.churn.closed} in ${fmt(h.churn.seconds, 1)} s (${fmt(h.churn.rate, 0)}/s), ${h.churn.errors} errors`,
        ],
        ["churn server CPU per session (ms)", fmt(h.churn.serverCpuMsPerSession, 2)],
        ["churn RSS every 1,000 sessions (MB)", h.churn.rssTrace.map((x) => fmt(x.rssMb, 0)).join(" ")],
        [
          "churn RSS: fresh, after warm-up (before) -> after -> 2 s later (MB)",
          `${fmt(h.churn.rssFreshMb)}, ${fmt(h.churn.rssBeforeMb)} -> ${fmt(h.churn.rssAfterMb)} -> ` +
            `${fmt(h.churn.rssSettledMb)}`,
        ],
        [
          "churn RSS growth: 2 s later / peak / from 1,000 to the end (MB)",
          `${fmt(h.churn.growthMb)} / ${fmt(h.churn.peakGrowthMb)} / ${fmt(h.churn.growthAfterFirstThousandMb)}`,
        ],
        [
          "churn RSS growth counted from 1,000 warm-up cycles (the row's method before 2026-11-26 16:50 UTC)",
          fmt(h.churn.growthFromFirstThousandWarmupMb),
        ],
        ["sessions still open afterwards (/healthz)", h.churn.openSessionsAfter ?? "-"],
      ],
    );
  } else if (h) out += `\n4. HTTP under load: ERROR ${h.error}\n`;

  const p = r.polling;
  if (p?.sameProject) {
    const row = (label, s) => [
      label,
      s.waiters,
      s.projects,
      s.statusRequests,
      s.totalRequests,
      fmt(s.statusPerInterval, 1),
      fmt(s.totalPerInterval, 1),
      s.requestsAfterCancel,
    ];
    out += table(
      `5. Polling cost: concurrent build_wait (until agent), BUILD_POLL_INTERVAL_MS=${p.sameProject.intervalMs}, ` +
        `${fmt(p.sameProject.windowMs / 1000, 1)} s window`,
      [
        "scenario",
        "waits",
        "projects",
        "status GETs",
        "all requests",
        "status / interval",
        "all / interval",
        "after cancel",
      ],
      [row("one project", p.sameProject), row("different projects", p.differentProjects)],
    );
  } else if (p) out += `\n5. Polling cost: ERROR ${p.error}\n`;

  const pu = r.push;
  if (pu?.push) {
    const row = (label, x) => [
      label,
      x.waits,
      `${fmt(x.lagMs.median, 0)} / ${fmt(x.lagMs.p90, 0)} / ${fmt(x.lagMs.max, 0)}`,
      fmt(x.getsPerWait, 1),
    ];
    out += table(
      `5b. Push against poll: ${pu.push.waits} concurrent ${pu.runSeconds} s agent runs each, ` +
        `BUILD_POLL_INTERVAL_MS=${pu.intervalMs} on both, BUILD_WEBHOOKS=on over HTTPS (TLS made at run time)`,
      ["mode", "waits", "answer after the run's end: median / p90 / max (ms)", "status GETs per wait"],
      [row("push (webhook delivery ends the wait)", pu.push), row("poll", pu.poll)],
    );
  } else if (pu) out += `\n5b. Push against poll: ERROR ${pu.error}\n`;

  const k = r.package;
  if (k && !k.error) {
    out += table(
      "6. Package footprint",
      ["measure", "value"],
      [
        ["tarball (npm pack)", `${fmt(k.tarballBytes / 1024, 1)} KiB`],
        ["unpacked", `${fmt(k.unpackedBytes / 1024, 1)} KiB in ${k.files} files`],
        ["packages installed by `npm install <tgz>`", k.installedPackages ?? `error: ${k.installError}`],
        ["install time (s)", fmt(k.installSeconds, 1)],
        ["installed --version", k.installedVersion ?? "-"],
      ],
    );
  } else if (k) out += `\n6. Package footprint: ERROR ${k.error}\n`;

  const hs = r.hosted;
  if (hs?.protocol) {
    const { protocol: pr, scaling: sc, taskPoll: tp, redis: rd } = hs;
    const none = "n/a (no goal)";
    const perCall = (m) => (m ? `${fmt(m.perCall, 3)} ± ${fmt(m.uncertainty, 3)}` : "-");
    const met = (g) => (g.met ? "yes" : "NO");
    const pair = (a, b, digits) => `${fmt(a, digits)} / ${fmt(b, digits)}`;
    out += table(
      `7. Hosted mode: ${hs.clients} clients at once, ${hs.tool}, 4 x ${fmt(hs.blockMs / 1000, 1)} s per side ` +
        `(A B B A, after warm-up); ${tp.gets} sequential tasks/get per path`,
      ["measure", "value", "peer", "ratio", "goal", "met"],
      [
        [
          "1 replica, direct: calls/s, 2026-07-28 stateless (peer: 2025-11-25 in sessions)",
          fmt(pr.modern.callsPerSecond, 0),
          fmt(pr.legacy.callsPerSecond, 0),
          fmt(pr.ratio, 2),
          "-",
          none,
        ],
        [
          "  replica CPU ms per call",
          fmt(pr.modern.cpuMsPerCall, 2),
          fmt(pr.legacy.cpuMsPerCall, 2),
          fmt(pr.cpuRatio, 2),
          "",
          "",
        ],
        [
          "  latency p50 / p99 (ms)",
          pair(pr.modern.latency.median, pr.modern.latency.p99, 1),
          pair(pr.legacy.latency.median, pr.legacy.latency.p99, 1),
          "",
          "",
          "",
        ],
        [
          "nginx + Redis: calls/s, 3 replicas (peer: 1 replica)",
          fmt(sc.three.callsPerSecond, 0),
          fmt(sc.one.callsPerSecond, 0),
          fmt(sc.ratio, 2),
          "-",
          `n/a (${hs.cores} cores)`,
        ],
        [
          "  CPU ms per call, every process of the cluster",
          fmt(sc.three.cpuMsPerCall, 2),
          fmt(sc.one.cpuMsPerCall, 2),
          fmt(sc.three.cpuMsPerCall / sc.one.cpuMsPerCall, 2),
          "",
          "",
        ],
        ["  requests per replica (nginx access log)", Object.values(sc.requestsPerReplica).join(" / "), "", "", "", ""],
        [
          "tasks/get p50 (ms): nginx, 3 replicas, Redis (peer: 1 replica, state in process)",
          fmt(tp.nginx.median, 2),
          fmt(tp.inProcess.median, 2),
          fmt(tp.ratioMedian, 2),
          "-",
          none,
        ],
        [
          "tasks/get p99 (ms): same paths",
          fmt(tp.nginx.p99, 2),
          fmt(tp.inProcess.p99, 2),
          fmt(tp.ratioP99, 2),
          "-",
          none,
        ],
        [
          "  one of the 3 replicas directly (Redis, no nginx): p50 / p99",
          pair(tp.replica.median, tp.replica.p99, 2),
          "",
          pair(tp.replica.median / tp.inProcess.median, tp.replica.p99 / tp.inProcess.p99, 2),
          "",
          "",
        ],
        [
          `Redis commands per ${rd.tool} (peer: the replicas' own count)`,
          perCall(rd.toolCall.commands),
          perCall(rd.toolCall.replicaRoundTrips),
          "",
          "0",
          met(hs.goals.redisTool),
        ],
        [
          "Redis commands per tasks/get (peer: the replicas' own count)",
          perCall(rd.poll.commands),
          perCall(rd.poll.replicaRoundTrips),
          "",
          "<= 2",
          met(hs.goals.redisPoll),
        ],
      ],
    );
    const errors = [pr.modern, pr.legacy, sc.three, sc.one].map((x) => x.errors);
    const firstError = [pr.modern, pr.legacy, sc.three, sc.one].find((x) => x.firstError)?.firstError;
    out +=
      "   errors under load (stateless, sessions, 3 replicas, 1 replica): " +
      `${errors.join(" / ")}${errors.some(Boolean) ? `; first: ${firstError}` : ""}\n`;
    const raw = (m, d) => `${m.raw} in ${fmt(d.ms, 0)} ms, background ${fmt(m.background, 1)}`;
    out +=
      `   Redis, ${rd.calls} calls each, INFO total_commands_processed (our INFO reads subtracted): ` +
      `${rd.tool} ${raw(rd.toolCall.commands, rd.toolCall)}; tasks/get ${raw(rd.poll.commands, rd.poll)}. `;
    out +=
      `Without calls: ${rd.quiet.map((q) => fmt(q.commandsPerSecond, 1)).join(" and ")} commands/s ` +
      `(${rd.quiet.map((q) => fmt(q.replicaRoundTripsPerSecond, 1)).join(" and ")} replica round trips/s); ` +
      `± is the spread of that background over windows as long as the measure, per call.\n`;
    const w = hs.warmUp;
    if (w)
      out +=
        "   warm-up (load until the CPU per call settles; ms per call by block): " +
        `one replica ${fmt(w.modern.seconds, 0)} s stateless (${w.modern.cpuMsPerCall.join(", ")}) ` +
        `+ ${fmt(w.legacy.seconds, 0)} s sessions (${w.legacy.cpuMsPerCall.join(", ")}); ` +
        `three replicas ${fmt(w.three.seconds, 0)} s (${w.three.cpuMsPerCall.join(", ")})\n`;
    out += `   note: ${hs.note}.\n`;
  } else if (hs) out += `\n7. Hosted mode: ${hs.skipped ? `skipped: ${hs.skipped}` : `ERROR ${hs.error}`}\n`;

  const lg = r.ledger;
  if (lg?.paid) {
    const row = (label, on, off) => [label, fmt(on, 3), fmt(off, 3), fmt(on - off, 3)];
    const { ledger: pOn, noLedger: pOff } = lg.paid;
    const { ledger: fOn, noLedger: fOff } = lg.free;
    out += table(
      `7b. Spend ledger on Redis: ${lg.blocks} x ${lg.block} calls per replica (A B B A), ledger on vs off`,
      ["per call", "ledger", "no ledger", "ledger's cost"],
      [
        row("build_write_file (paid): Redis commands (INFO)", pOn.redisCommands, pOff.redisCommands),
        row("  replica round trips to Redis", pOn.roundTrips, pOff.roundTrips),
        row("  replica CPU ms", pOn.cpuMs, pOff.cpuMs),
        row("drones_list_drones (free): Redis commands (INFO)", fOn.redisCommands, fOff.redisCommands),
        row("  replica CPU ms", fOn.cpuMs, fOff.cpuMs),
      ],
    );
    out += `   idle Redis commands/s (subtracted): ${fmt(lg.idleCommandsPerSecond, 2)}\n`;
  } else if (lg) out += `\n7b. Spend ledger: ${lg.skipped ? `skipped: ${lg.skipped}` : `ERROR ${lg.error}`}\n`;

  const tn = r.tenants;
  if (tn?.goals) {
    out += table(
      `8. Tenants (MCP_CREDENTIALS=caller, one replica, --toolsets all): ${tn.calls} 2026-07-28 tools/list, ` +
        `${tn.concurrency} at once, each with a new build key (peer: one known key), A B B A`,
      ["measure", "value", "peer", "ratio", "goal", "met"],
      [
        [
          "replica CPU ms per call",
          fmt(tn.newTenant.cpuMsPerCall, 2),
          fmt(tn.known.cpuMsPerCall, 2),
          fmt(tn.cpuRatio, 2),
          "<= 2",
          tn.goals.cpu.met ? "yes" : "NO",
        ],
        [
          "calls/s",
          fmt(tn.newTenant.callsPerSecond, 0),
          fmt(tn.known.callsPerSecond, 0),
          fmt(tn.throughputRatio, 2),
          "-",
          "n/a (no goal)",
        ],
        [
          `RSS growth per new tenant, at the cap (KB; ${tn.tenantsBuilt} built, ${tn.tenantsLive} kept, ` +
            `${fmt(tn.rssMb.before, 0)} -> ${fmt(tn.rssMb.atCap, 0)} MB after 5 s idle)`,
          fmt(tn.kbPerTenant, 0),
          "",
          "",
          "<= 40",
          tn.goals.memory.met ? "yes" : "NO",
        ],
        [
          `  first method: over the A B B A blocks alone (KB; ${tn.blocks.tenants} built, ` +
            `${fmt(tn.rssMb.before, 0)} -> ${fmt(tn.rssMb.afterBlocks, 0)} MB)`,
          fmt(tn.blocks.kbPerTenant, 0),
          "",
          "",
          "-",
          "n/a (see README)",
        ],
      ],
    );
    const errors = tn.newTenant.errors + tn.known.errors + (tn.fillErrors ?? 0);
    if (errors) out += `   errors: ${errors}\n`;
  } else if (tn) out += `\n8. Tenants: ERROR ${tn.error}\n`;

  const lf = r.listen;
  if (lf?.goals) {
    const row = (label, x) => [
      label,
      Object.entries(x.streams)
        .map(([st, n]) => `${n} x ${st}`)
        .join(", "),
      x.pollers,
      fmt(x.getsPerSecond, 1),
      fmt(x.redisPerSecond, 1),
    ];
    out += table(
      `9. Listen flood: ${lf.uris} URIs offered in subscriptions/listen streams of ${lf.perStream}, ` +
        `one replica on Redis, per-user keys, BUILD_POLL_INTERVAL_MS=${lf.intervalMs}, ` +
        `${fmt(lf.windowMs / 1000, 0)} s window; per 1,000 URIs`,
      ["caller", "streams (HTTP status)", "pollers", "upstream GETs/s", "Redis commands/s (quiet subtracted)"],
      [row("without a key", lf.keyless), row("with a key", lf.keyed)],
    );
    out += `   quiet replica: ${fmt(lf.quiet.redisPerSecond, 1)} Redis commands/s\n`;
  } else if (lf) out += `\n9. Listen flood: ${lf.skipped ? `skipped: ${lf.skipped}` : `ERROR ${lf.error}`}\n`;

  const nv = r.nodeVersions;
  if (nv?.rows) {
    const range = (s) => `${fmt(s.median, 0)} (${fmt(s.min, 0)}-${fmt(s.max, 0)})`;
    const coldRows = nv.rows
      .filter((v) => v.cold)
      .flatMap((v) =>
        ["everything", "default", "defaultNoCache", "allSandbox"]
          .filter((id) => v.cold[id])
          .map((id) => {
            const c = v.cold[id];
            return [
              `node ${v.version}: ${c.label}`,
              range(c.ms),
              fmt(c.cpuMs.median, 0),
              fmt(c.ms.median / v.cold.everything.ms.median, 2),
            ];
          }),
      );
    if (coldRows.length)
      out += table(
        "9a. Cold start per Node version: spawn to initialize answer, ms (median (min-max) " +
          `of ${nv.rows[0].cold.default.ms.n} interleaved runs)`,
        ["command", "wall ms", "cpu ms", "x everything"],
        coldRows,
      );
    const callRows = nv.rows.flatMap((v) => [
      [
        `node ${v.version}: 2026-07-28 stateless tools/call (${"build_get_credit_costs"})`,
        fmt(v.calls.stateless.cpuMsPerCall.median * 1000, 0),
        `${fmt(v.calls.stateless.cpuMsPerCall.min * 1000, 0)}-${fmt(v.calls.stateless.cpuMsPerCall.max * 1000, 0)}`,
        fmt(v.callRatio.statelessToSession, 2),
        "x session",
      ],
      [
        "  2025-11-25 tools/call in a session",
        fmt(v.calls.session.cpuMsPerCall.median * 1000, 0),
        `${fmt(v.calls.session.cpuMsPerCall.min * 1000, 0)}-${fmt(v.calls.session.cpuMsPerCall.max * 1000, 0)}`,
        "1.00",
        "",
      ],
      [
        "  2026-07-28 tasks/get of a working task",
        fmt(v.calls.taskGet.cpuMsPerCall.median * 1000, 0),
        `${fmt(v.calls.taskGet.cpuMsPerCall.min * 1000, 0)}-${fmt(v.calls.taskGet.cpuMsPerCall.max * 1000, 0)}`,
        fmt(v.callRatio.taskGetToCall, 2),
        "x stateless call",
      ],
    ]);
    out += table(
      "9b. Replica CPU per call per Node version, µs (median and range of " +
        `${nv.rows[0].calls.session.cpuMsPerCall.n} blocks, 16 clients, interleaved)`,
      ["path", "cpu µs", "range", "ratio", "to"],
      callRows,
    );
    const errors = nv.rows.reduce(
      (n, v) => n + v.calls.stateless.errors + v.calls.session.errors + v.calls.taskGet.errors,
      0,
    );
    if (errors) out += `   errors: ${errors}\n`;
  } else if (nv) out += `\n9. Node versions: ERROR ${nv.error}\n`;

  out += table(
    "Goals",
    ["goal", "measured", "met"],
    r.goals.map((g) => [
      `${g.id}: ${g.text}`,
      g.value,
      g.met === null ? `n/a${g.note ? ` (${g.note})` : ""}` : g.met ? "yes" : "NO",
    ]),
  );
  return out;
}
