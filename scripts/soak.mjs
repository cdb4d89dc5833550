#!/usr/bin/env node
// Soak test: many tool calls over stdio and Streamable HTTP against a sandbox with faults injected
// continuously. Run it with `npm run soak` (which builds first).
//
//   SOAK_CALLS=100000            total tool calls (split between the two transports)
//   SOAK_HTTP_SHARE=0.5          fraction of the calls made over Streamable HTTP
//   SOAK_HTTP_SESSIONS=20        concurrent HTTP sessions
//   SOAK_CALLS_PER_SESSION=500   calls before an HTTP session is closed and a new one opened
//   SOAK_STDIO_CONCURRENCY=16    calls in flight at once on the stdio connection
//   SOAK_FAULT_EVERY=250         inject one random fault every N calls (on a random GET route)
//   SOAK_INVALID_SHARE=0.03      fraction of calls made with invalid arguments (must be refused)
//   SOAK_SEED=1                  seed of the call/fault mix
//   SOAK_RESULTS=<path>          where the JSON report goes (default bench/soak-results.json)
//
// A short form (2,000 calls) runs in npm test: test/e2e/once/soak.test.ts.
//
// What it checks: every call ends in a success, an isError result that names its cause and a
// "Next step:", or (for the deliberately invalid calls) a refusal naming the argument. Anything
// else (a protocol error, an isError without a cause or next step, a client-side timeout, a
// server child that exits) is listed as unexplained and makes the script exit 1.
// Results go to stdout and bench/soak-results.json.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { importFromSrc } from "./from-src.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const CLI = join(ROOT, "dist/cli.js");
/** The mix calls tools of toolsets that are off by default (build_list_versions: build_admin). */
const TOOLSETS = ["--toolsets", "all"];
const RESULTS = process.env.SOAK_RESULTS || join(ROOT, "bench/soak-results.json");

const env = process.env;
const num = (name, fallback) => {
  const v = env[name];
  if (v === undefined || v.trim() === "") return fallback;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw new Error(`${name} must be a non-negative number`);
  return n;
};
const CONFIG = {
  calls: Math.floor(num("SOAK_CALLS", 100_000)),
  httpShare: num("SOAK_HTTP_SHARE", 0.5),
  httpSessions: Math.max(1, Math.floor(num("SOAK_HTTP_SESSIONS", 20))),
  callsPerSession: Math.max(1, Math.floor(num("SOAK_CALLS_PER_SESSION", 500))),
  stdioConcurrency: Math.max(1, Math.floor(num("SOAK_STDIO_CONCURRENCY", 16))),
  faultEvery: Math.max(1, Math.floor(num("SOAK_FAULT_EVERY", 250))),
  invalidShare: num("SOAK_INVALID_SHARE", 0.03),
  seed: Math.floor(num("SOAK_SEED", 1)),
  upstreamTimeoutMs: 2000,
  /** A call with no answer after this long counts as a (client-side) timeout. */
  callTimeoutMs: 60_000,
  /** Every Nth HTTP session is dropped without DELETE, as a client that goes away would. */
  abandonEvery: 10,
};

// --- the sandbox -------------------------------------------------------------------------------

/**
 * startSandbox, the faults, the simulators' seed data and the service variables that point at the
 * sandbox (launch.ts's sandboxEnv), compiled from src/ (the published build is one bundle).
 */
async function loadSandbox() {
  const mod = await importFromSrc(
    [
      'export { startSandbox } from "./src/sandbox/index.ts";',
      'export { FAULTS, faultFromSpec } from "./src/sandbox/faults.ts";',
      'export { PLAN_LIMITS, CATALOG } from "./src/sandbox/simulators/sizing/index.ts";',
      'export { FLEET, ALERTS, MISSIONS } from "./src/sandbox/simulators/drones/index.ts";',
      'export { sandboxEnv } from "./src/launch.ts";',
    ].join("\n"),
    "soak-sandbox",
  );
  return { ...mod, source: "src/ (compiled with esbuild)" };
}

// --- a small seeded random source ---------------------------------------------------------------

function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const random = mulberry32(CONFIG.seed);
const pick = (list) => list[Math.floor(random() * list.length)];
const int = (lo, hi) => lo + Math.floor(random() * (hi - lo + 1));

// --- processes ---------------------------------------------------------------------------------

function rssMb(pid) {
  try {
    const m = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Math.round((Number(m[1]) / 1024) * 10) / 10 : undefined;
  } catch {
    return undefined;
  }
}

/** CPU seconds (user + system) a process has used, from /proc/<pid>/stat (clock ticks of 10 ms). */
function cpuSeconds(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
    return Math.round(((Number(fields[11]) + Number(fields[12])) / 100) * 10) / 10;
  } catch {
    return undefined;
  }
}

function loadAverage() {
  try {
    return readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).map(Number);
  } catch {
    return undefined;
  }
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Keeps the last `max` characters of a stream (server logs, for the crash report). */
function tail(stream, max = 20_000) {
  let text = "";
  let lines = 0;
  stream?.on("data", (chunk) => {
    text = (text + chunk.toString()).slice(-max);
    lines += (chunk.toString().match(/\n/g) ?? []).length;
  });
  return { text: () => text, lines: () => lines };
}

async function spawnHttpServer(serverEnv) {
  const child = spawn(process.execPath, [CLI, "--transport", "http", "--port", "0", ...TOOLSETS], {
    env: serverEnv,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const log = tail(child.stderr);
  child.stdout.resume();
  const url = await new Promise((resolve, reject) => {
    let seen = "";
    const timer = setTimeout(() => reject(new Error(`HTTP server did not start: ${seen}`)), 20_000);
    const onData = (c) => {
      seen += c.toString();
      const m = /ready on (http:\/\/[^\s"]+\/mcp)/.exec(seen);
      if (m) {
        clearTimeout(timer);
        child.stderr.off("data", onData);
        resolve(m[1]);
      }
    };
    child.stderr.on("data", onData);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`HTTP server exited with ${code}: ${seen}`));
    });
  });
  return { child, url, log };
}

async function stopChild(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
  await exited;
  clearTimeout(timer);
}

// --- the call mix ------------------------------------------------------------------------------

const API = "/api/v1/vcaas";
const PROJECTS = ["acme-storefront", "empty-sandbox", "spring-campaign", "booking-app"];

function makeMix(data) {
  const { FLEET, ALERTS, MISSIONS, CATALOG } = data;
  const sizedItems = CATALOG.filter((i) => i._id);
  /** [weight, () => { tool, args }] read calls; every one is valid. */
  const reads = [
    [10, () => ({ tool: "drones_get_drone", args: { id: pick(FLEET)._id } })],
    [6, () => ({ tool: "drones_list_drones", args: pick([{}, { status: "active" }, { minBattery: 50, limit: 5 }]) })],
    [6, () => ({ tool: "drones_fleet_summary", args: pick([{}, { lowBatteryThreshold: 35 }]) })],
    [
      4,
      () => ({
        tool: "drones_find_nearest",
        args: { latitude: 40.4168 + random() - 0.5, longitude: -3.7038 + random() - 0.5, limit: 3 },
      }),
    ],
    [4, () => ({ tool: "drones_get_alert", args: { id: pick(ALERTS)._id } })],
    [3, () => ({ tool: "drones_list_alerts", args: {} })],
    [3, () => ({ tool: "drones_get_mission", args: { id: pick(MISSIONS)._id } })],
    [
      8,
      () => ({
        tool: "sizing_recommend_size",
        args: {
          clothing_item_id: pick(sizedItems)._id,
          measurements: { chest: int(84, 110), waist: int(70, 96), hips: int(88, 112) },
        },
      }),
    ],
    [4, () => ({ tool: "sizing_get_catalog", args: pick([{}, { limit: 5 }]) })],
    [8, () => ({ tool: "build_get_project", args: { projectId: pick(PROJECTS) } })],
    [
      6,
      () => ({
        tool: "build_list_projects",
        args: pick([{ limit: 5 }, { search: "app" }, { sortDirection: "asc", limit: 2 }]),
      }),
    ],
    [4, () => ({ tool: "build_get_account", args: {} })],
    [3, () => ({ tool: "build_get_credit_costs", args: {} })],
    [3, () => ({ tool: "build_get_agent_status", args: { projectId: pick(PROJECTS) } })],
    [2, () => ({ tool: "build_list_versions", args: { projectId: "acme-storefront", limit: 2 } })],
  ];
  /** Deliberately invalid calls: each must be refused, naming what is wrong. */
  const invalid = [
    () => ({ tool: "drones_get_drone", args: {}, expect: "isError", names: /\bid\b/ }),
    () => ({
      tool: "drones_fleet_summary",
      args: { lowBatteryThreshold: 250 },
      expect: "isError",
      names: /lowBatteryThreshold/,
    }),
    () => ({
      tool: "drones_find_nearest",
      args: { latitude: 123, longitude: 0 },
      expect: "isError",
      names: /latitude/,
    }),
    () => ({
      tool: "sizing_recommend_size",
      args: { clothing_item_id: pick(sizedItems)._id, measurements: { chest: "95" } },
      expect: "isError",
      names: /measurements\.chest/,
    }),
    () => ({ tool: "build_list_projects", args: { limit: 0 }, expect: "isError", names: /limit/ }),
    () => ({ tool: "build_get_project", args: { projectId: 42 }, expect: "isError", names: /projectId/ }),
    () => ({ tool: "soak_no_such_tool", args: {}, expect: "any", names: /soak_no_such_tool/ }),
  ];
  const total = reads.reduce((s, [w]) => s + w, 0);
  return () => {
    if (random() < CONFIG.invalidShare) return { ...pick(invalid)(), invalid: true };
    let r = random() * total;
    for (const [w, make] of reads) {
      if ((r -= w) < 0) return make();
    }
    return reads[0][1]();
  };
}

/** The GET routes the read mix uses, per service: where faults go. */
function faultRoutes(data) {
  const { FLEET, ALERTS, MISSIONS } = data;
  return [
    ...FLEET.slice(0, 8).map((d) => ["drones", `/api/drones/${d._id}`]),
    ["drones", "/api/drones"],
    ["drones", "/api/drones"],
    ["drones", "/api/alerts"],
    ["drones", `/api/alerts/${ALERTS[0]._id}`],
    ["drones", `/api/missions/${MISSIONS[0]._id}`],
    ["sizing", "/api/retailer/catalog"],
    ...PROJECTS.map((p) => ["build", `${API}/projects/${p}`]),
    ["build", `${API}/projects`],
    ["build", `${API}/account`],
    ["build", `${API}/credit-costs`],
    ["build", `${API}/projects/acme-storefront/agent/status`],
    ["build", `${API}/projects/acme-storefront/versions`],
  ];
}

/** A random FAULTS preset as a spec for faultFromSpec. */
function randomFault() {
  return pick([
    () => ({ fault: "htmlError", arg: pick([500, 502, 503]) }),
    () => ({ fault: "rateLimited", arg: 1 }),
    () => ({ fault: "rateLimited", arg: 30 }),
    () => ({ fault: "slow", arg: int(20, 1500) }),
    () => ({ fault: "slow", arg: 3000 }), // over UPSTREAM_TIMEOUT_MS
    () => ({ fault: "noAnswer" }),
    () => ({ fault: "connectionReset" }),
    () => ({ fault: "truncatedJson" }),
    () => ({ fault: "malformedJson" }),
    () => ({ fault: "wrongContentType" }),
    () => ({ fault: "oversized", arg: 9 * 1024 * 1024 }),
  ])();
}

// --- outcome classification --------------------------------------------------------------------

const stats = {
  total: 0,
  byTransport: { stdio: 0, http: 0 },
  ok: 0,
  isError: {},
  invalidRefused: { isError: 0, protocolError: 0 },
  protocolErrors: {},
  timeouts: 0,
  sessionErrors: {},
  unexplained: [],
  unexplainedCount: 0,
  latencyMs: { stdio: [], http: [] },
};
const bump = (map, key) => (map[key] = (map[key] ?? 0) + 1);

function textOf(result) {
  return (result?.content ?? []).map((c) => (c.type === "text" ? c.text : "")).join("\n");
}

/** What a known cause looks like when an error has no "Next step:" of its own. */
const KNOWN_CAUSES = [/^Cancelled by the client/];

function unexplained(kind, call, detail) {
  stats.unexplainedCount++;
  if (stats.unexplained.length < 50)
    stats.unexplained.push({ kind, tool: call.tool, args: call.args, detail: String(detail).slice(0, 600) });
}

function errorKey(t) {
  const m = /failed \((HTTP \d+|no HTTP answer), ([A-Za-z0-9_]+)\)/.exec(t);
  if (m) return `${m[1]}, ${m[2]}`;
  return t.split(/\s+/).slice(0, 6).join(" ");
}

function classifyResult(call, result) {
  const t = textOf(result);
  if (call.invalid) {
    if (call.expect === "isError" || call.expect === "any") {
      if (result.isError && call.names.test(t)) return void stats.invalidRefused.isError++;
    }
    return unexplained("invalid call not refused as expected", call, result.isError ? t : `succeeded: ${t}`);
  }
  if (!result.isError) return void stats.ok++;
  bump(stats.isError, errorKey(t));
  const explained =
    (/\nNext step: \S/.test(t) && /failed \(|Not enough credits|Not done:/.test(t)) ||
    KNOWN_CAUSES.some((re) => re.test(t));
  if (!explained) unexplained("isError without a cause and next step", call, t);
}

function classifyThrow(call, err) {
  const code = err?.code;
  const message = String(err?.message ?? err);
  if (code === -32001 || /Request timed out/i.test(message)) {
    stats.timeouts++;
    return unexplained("client-side timeout", call, message);
  }
  if (call.invalid && call.expect === "any" && call.names.test(message))
    return void stats.invalidRefused.protocolError++;
  bump(stats.protocolErrors, `${code ?? "?"}: ${message.split(/\s+/).slice(0, 8).join(" ")}`);
  unexplained("protocol error", call, message);
}

// --- drivers -----------------------------------------------------------------------------------

let issued = 0;
let faultsInjected = 0;
const faultKinds = {};
let sandbox;
let routes;
let faultFromSpecFn;
let nextCall;
let lastReport = Date.now();

/** Counts a call and injects a fault every CONFIG.faultEvery calls. */
function tick() {
  issued++;
  if (issued % CONFIG.faultEvery === 0) {
    const [service, path] = pick(routes);
    const spec = { ...randomFault(), method: "GET", path, times: int(1, 3) };
    sandbox[service].router.injectFault(faultFromSpecFn(spec));
    faultsInjected++;
    const showArg = spec.arg !== undefined && spec.fault !== "slow" && spec.fault !== "oversized";
    bump(faultKinds, `${spec.fault}${showArg ? `(${spec.arg})` : ""}`);
  }
  if (issued % 10_000 === 0 || Date.now() - lastReport > 15_000) {
    lastReport = Date.now();
    const s = ((Date.now() - startedAt) / 1000).toFixed(0);
    process.stdout.write(
      `  ${issued} calls issued after ${s}s ` +
        `(ok ${stats.ok}, isError ${sum(stats.isError)}, unexplained ${stats.unexplainedCount})\n`,
    );
  }
}

const round1 = (x) => (typeof x === "number" && Number.isFinite(x) ? Math.round(x * 10) / 10 : x);
const sum = (map) => Object.values(map).reduce((a, b) => a + b, 0);

async function oneCall(client, transport) {
  const call = nextCall();
  tick();
  const started = performance.now();
  try {
    const result = await client.callTool({ name: call.tool, arguments: call.args }, undefined, {
      timeout: CONFIG.callTimeoutMs,
    });
    classifyResult(call, result);
  } catch (err) {
    classifyThrow(call, err);
  } finally {
    stats.total++;
    stats.byTransport[transport]++;
    stats.latencyMs[transport].push(performance.now() - started);
  }
}

async function driveStdio(client, calls) {
  let left = calls;
  const worker = async () => {
    while (left > 0) {
      left--;
      await oneCall(client, "stdio");
    }
  };
  await Promise.all(Array.from({ length: CONFIG.stdioConcurrency }, worker));
}

async function driveHttp(url, calls) {
  let left = calls;
  let opened = 0;
  let closed = 0;
  let abandoned = 0;
  const worker = async () => {
    while (left > 0) {
      const n = Math.min(CONFIG.callsPerSession, left);
      left -= n;
      const sessionNo = ++opened;
      const transport = new StreamableHTTPClientTransport(new URL(url));
      const client = new Client({ name: "switchboard-soak", version: "1.0.0" });
      try {
        await client.connect(transport);
      } catch (err) {
        bump(stats.sessionErrors, `connect: ${String(err?.message ?? err).slice(0, 120)}`);
        unexplained("HTTP session could not be opened", { tool: "(initialize)", args: {} }, err?.message ?? err);
        continue;
      }
      for (let i = 0; i < n; i++) await oneCall(client, "http");
      try {
        if (sessionNo % CONFIG.abandonEvery === 0) abandoned++;
        else {
          await transport.terminateSession();
          closed++;
        }
        await client.close();
      } catch (err) {
        bump(stats.sessionErrors, `close: ${String(err?.message ?? err).slice(0, 120)}`);
        unexplained("HTTP session could not be closed", { tool: "(DELETE session)", args: {} }, err?.message ?? err);
      }
    }
  };
  await Promise.all(Array.from({ length: CONFIG.httpSessions }, worker));
  return { opened, closedWithDelete: closed, abandoned };
}

function percentiles(xs) {
  if (xs.length === 0) return {};
  const s = Float64Array.from(xs).sort();
  const q = (p) => Math.round(s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)] * 10) / 10;
  return { p50: q(0.5), p90: q(0.9), p99: q(0.99), max: Math.round(s[s.length - 1]) };
}

// --- main --------------------------------------------------------------------------------------

let startedAt = Date.now();

async function main() {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run npm run build first (npm run soak does)`);
  const mod = await loadSandbox();
  faultFromSpecFn = mod.faultFromSpec;
  // The sizing simulator enforces its plan's 600 requests a minute; a soak sends far more, and
  // 429s would drown the faults under test. Lift the limit for this process's sandbox only.
  const sizingLimit = mod.PLAN_LIMITS.professional.requestsPerMinute;
  mod.PLAN_LIMITS.professional.requestsPerMinute = Number.MAX_SAFE_INTEGER;
  sandbox = await mod.startSandbox({ timeScale: 3000 });
  routes = faultRoutes(mod);
  nextCall = makeMix(mod);

  const serverEnv = {
    PATH: env.PATH ?? "",
    ...mod.sandboxEnv(sandbox),
    BUILD_POLL_INTERVAL_MS: "200",
    UPSTREAM_TIMEOUT_MS: String(CONFIG.upstreamTimeoutMs),
    BUILD_CONFIRM_SPEND: "never",
    LOG_LEVEL: "info", // the HTTP child announces its URL at info
    // SOAK_SERVER_NODE_OPTIONS="--max-old-space-size=64" turns "memory flat" into a hard check:
    // a leaking server runs out of heap and crashes, which the report counts.
    ...(env.SOAK_SERVER_NODE_OPTIONS ? { NODE_OPTIONS: env.SOAK_SERVER_NODE_OPTIONS } : {}),
  };

  const stdioTransport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, ...TOOLSETS],
    env: serverEnv,
    stderr: "pipe",
  });
  const stdioLog = tail(stdioTransport.stderr);
  const stdioClient = new Client({ name: "switchboard-soak", version: "1.0.0" });
  const clientErrors = [];
  stdioClient.onerror = (e) => clientErrors.length < 20 && clientErrors.push(String(e?.message ?? e));
  await stdioClient.connect(stdioTransport);
  const http = await spawnHttpServer(serverEnv);

  const children = {
    stdio: { pid: stdioTransport.pid, log: stdioLog, exit: undefined },
    http: { pid: http.child.pid, log: http.log, exit: undefined },
  };
  // The stdio child is owned by the SDK transport; watch its pid. The HTTP child is ours.
  http.child.once("exit", (code, signal) => (children.http.exit ??= { code, signal, at: Date.now() }));
  stdioTransport.onclose = () => (children.stdio.exit ??= { code: "stdio closed", at: Date.now() });

  // Warm up (one call each) so "before" is the RSS of a running, connected server.
  const warm = new Client({ name: "switchboard-soak-warmup", version: "1.0.0" });
  await warm.connect(new StreamableHTTPClientTransport(new URL(http.url)));
  await Promise.all([
    stdioClient.callTool({ name: "build_get_account", arguments: {} }),
    warm.callTool({ name: "build_get_account", arguments: {} }),
  ]);
  await warm.close();

  const rss = {};
  for (const [name, c] of Object.entries(children))
    rss[name] = { before: rssMb(c.pid), peak: rssMb(c.pid), after: undefined, byTenth: [] };
  // RSS at every tenth of the run: a heap that settles after warm-up is flat; a leak keeps climbing.
  let nextTenth = 1;
  const sampler = setInterval(() => {
    const tenth = Math.floor((stats.total / CONFIG.calls) * 10);
    const takeTenth = tenth >= nextTenth;
    if (takeTenth) nextTenth = tenth + 1;
    for (const [name, c] of Object.entries(children)) {
      const v = rssMb(c.pid);
      if (takeTenth && v !== undefined) rss[name].byTenth.push(v);
      if (v !== undefined && v > (rss[name].peak ?? 0)) rss[name].peak = v;
      if (!c.exit && !alive(c.pid)) c.exit = { code: "gone", at: Date.now() };
    }
  }, 500);

  const httpCalls = Math.round(CONFIG.calls * CONFIG.httpShare);
  const stdioCalls = CONFIG.calls - httpCalls;
  process.stdout.write(
    `soak: ${CONFIG.calls} calls (${stdioCalls} stdio at concurrency ${CONFIG.stdioConcurrency}, ` +
      `${httpCalls} HTTP over ${CONFIG.httpSessions} concurrent sessions of ${CONFIG.callsPerSession} calls), ` +
      `a fault every ${CONFIG.faultEvery} calls; sandbox from ${mod.source}; ` +
      `servers stdio pid ${children.stdio.pid}, http pid ${children.http.pid}\n`,
  );

  const cpuBefore = {
    stdio: cpuSeconds(children.stdio.pid),
    http: cpuSeconds(children.http.pid),
    soak: process.cpuUsage(),
  };
  const loadBefore = loadAverage();
  startedAt = Date.now();
  const [, sessions] = await Promise.all([driveStdio(stdioClient, stdioCalls), driveHttp(http.url, httpCalls)]);
  const durationMs = Date.now() - startedAt;
  const soakCpu = process.cpuUsage(cpuBefore.soak);
  const cpu = {
    stdioServer: round1(cpuSeconds(children.stdio.pid) - cpuBefore.stdio),
    httpServer: round1(cpuSeconds(children.http.pid) - cpuBefore.http),
    soakProcess: round1((soakCpu.user + soakCpu.system) / 1e6),
    note: "CPU seconds used during the run; the soak process holds the clients and the sandbox",
  };
  const loadAfter = loadAverage();

  // After: faults off, a last health check on each child, then RSS and liveness.
  for (const { simulator } of Object.values(sandbox.accounts).flat()) simulator.router.clearFaults();
  const health = {};
  try {
    await stdioClient.ping({ timeout: 10_000 });
    const r = await stdioClient.callTool({ name: "drones_fleet_summary", arguments: {} }, undefined, {
      timeout: 10_000,
    });
    health.stdio = r.isError ? `isError: ${textOf(r).slice(0, 200)}` : "ok";
  } catch (err) {
    health.stdio = `failed: ${err?.message ?? err}`;
  }
  try {
    const c = new Client({ name: "switchboard-soak-final", version: "1.0.0" });
    const t = new StreamableHTTPClientTransport(new URL(http.url));
    await c.connect(t);
    const r = await c.callTool({ name: "drones_fleet_summary", arguments: {} }, undefined, { timeout: 10_000 });
    health.http = r.isError ? `isError: ${textOf(r).slice(0, 200)}` : "ok";
    await t.terminateSession().catch(() => undefined);
    await c.close();
  } catch (err) {
    health.http = `failed: ${err?.message ?? err}`;
  }
  clearInterval(sampler);
  for (const [name, c] of Object.entries(children)) {
    rss[name].after = rssMb(c.pid);
    rss[name].alive = !c.exit && alive(c.pid);
  }
  const crashes = Object.entries(children)
    .filter(([, c]) => c.exit)
    .map(([name, c]) => ({ child: name, ...c.exit, log: c.log.text().slice(-4000) }));

  await stdioClient.close().catch(() => undefined);
  await stopChild(http.child);
  mod.PLAN_LIMITS.professional.requestsPerMinute = sizingLimit;
  await sandbox.close();

  const sandboxStats = {};
  for (const s of Object.keys(sandbox.urls)) {
    let received = 0;
    for (const n of sandbox[s].router.received.values()) received += n;
    sandboxStats[s] = { received, answered: sandbox[s].router.count() };
  }

  const report = {
    when: new Date().toISOString(),
    node: process.version,
    config: CONFIG,
    totalCalls: stats.total,
    byTransport: stats.byTransport,
    durationSeconds: Math.round(durationMs / 100) / 10,
    callsPerSecond: Math.round(stats.total / (durationMs / 1000)),
    cpuSeconds: cpu,
    cpus: availableParallelism(),
    loadAverage: { before: loadBefore, after: loadAfter },
    latencyMs: { stdio: percentiles(stats.latencyMs.stdio), http: percentiles(stats.latencyMs.http) },
    results: {
      ok: stats.ok,
      isError: sum(stats.isError),
      isErrorByCause: Object.fromEntries(Object.entries(stats.isError).sort((a, b) => b[1] - a[1])),
      invalidCallsRefused: stats.invalidRefused,
      protocolErrors: stats.protocolErrors,
      timeouts: stats.timeouts,
      crashes: crashes.length,
    },
    httpSessions: { ...sessions, errors: stats.sessionErrors },
    faults: { injected: faultsInjected, byKind: faultKinds },
    upstreamRequests: sandboxStats,
    servers: {
      stdio: {
        pid: children.stdio.pid,
        rssMb: rss.stdio,
        alive: rss.stdio.alive,
        finalCheck: health.stdio,
        logLines: children.stdio.log.lines(),
      },
      http: {
        pid: children.http.pid,
        rssMb: rss.http,
        alive: rss.http.alive,
        finalCheck: health.http,
        logLines: children.http.log.lines(),
      },
    },
    crashes,
    clientErrors,
    unexplainedCount: stats.unexplainedCount,
    unexplained: stats.unexplained,
  };
  mkdirSync(dirname(RESULTS), { recursive: true });
  writeFileSync(RESULTS, `${JSON.stringify(report, null, 2)}\n`);

  const line = (k, v) => process.stdout.write(`${k.padEnd(26)}${v}\n`);
  process.stdout.write("\n=== soak results ===\n");
  line("total calls", `${report.totalCalls} (stdio ${stats.byTransport.stdio}, http ${stats.byTransport.http})`);
  line("duration", `${report.durationSeconds} s`);
  line("calls/s", report.callsPerSecond);
  line(
    "CPU seconds",
    `${JSON.stringify({ stdioServer: cpu.stdioServer, httpServer: cpu.httpServer, soakProcess: cpu.soakProcess })} ` +
      `on ${report.cpus} CPUs, load ${JSON.stringify(report.loadAverage)}`,
  );
  line("latency ms stdio", JSON.stringify(report.latencyMs.stdio));
  line("latency ms http", JSON.stringify(report.latencyMs.http));
  line("ok", stats.ok);
  line("isError", `${report.results.isError}`);
  for (const [k, v] of Object.entries(report.results.isErrorByCause)) line("", `${String(v).padStart(6)}  ${k}`);
  line("invalid calls refused", JSON.stringify(stats.invalidRefused));
  line("protocol errors", JSON.stringify(stats.protocolErrors));
  line("timeouts (client side)", stats.timeouts);
  line("crashes", crashes.length);
  line("HTTP sessions", JSON.stringify(report.httpSessions));
  line("faults injected", `${faultsInjected} ${JSON.stringify(faultKinds)}`);
  line("upstream requests", JSON.stringify(sandboxStats));
  for (const name of ["stdio", "http"]) {
    const s = report.servers[name];
    line(
      `${name} server`,
      `pid ${s.pid}, RSS MB before ${s.rssMb.before} / after ${s.rssMb.after} / peak ${s.rssMb.peak}, ` +
        `alive ${s.alive}, final check ${s.finalCheck}`,
    );
    line(`${name} RSS by tenth`, s.rssMb.byTenth.join(" → "));
  }
  line("unexplained", stats.unexplainedCount);
  for (const u of stats.unexplained.slice(0, 20))
    process.stdout.write(`  - [${u.kind}] ${u.tool} ${JSON.stringify(u.args)}: ${u.detail.replace(/\n/g, " | ")}\n`);
  for (const c of crashes)
    process.stdout.write(`  crash: ${c.child} ${JSON.stringify({ code: c.code, signal: c.signal })}\n${c.log}\n`);
  process.stdout.write(`written to ${RESULTS}\n`);

  const failed = crashes.length > 0 || stats.unexplainedCount > 0 || health.stdio !== "ok" || health.http !== "ok";
  process.exitCode = failed ? 1 : 0;
}

main().catch((err) => {
  process.stderr.write(`soak: fatal: ${err?.stack ?? err}\n`);
  process.exit(2);
});
