// Shared helpers of the benchmark suite (bench/run.mjs). Nothing here imports from src/ or dist/
// at module load: the sandbox is compiled from src/ on demand (see loadSandbox).
import { spawn } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { CLIENTS_MODULES, clientsMissing } from "../scripts/clients.mjs";
import { importFromSrc } from "../scripts/from-src.mjs";

export const ROOT = fileURLToPath(new URL("..", import.meta.url));
/** The switchboard-mcp entry every section spawns; run.mjs points it at a snapshot of dist/. */
export let CLI = join(ROOT, "dist/cli.js");
export function useCli(path) {
  CLI = path;
}
export const NODE = process.execPath;

// --- statistics --------------------------------------------------------------------------------

export function summarize(samples) {
  const xs = [...samples].sort((a, b) => a - b);
  const n = xs.length;
  if (n === 0) return { n: 0 };
  const q = (p) => xs[Math.min(n - 1, Math.max(0, Math.ceil(p * n) - 1))];
  const median = n % 2 ? xs[(n - 1) / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2;
  const mean = xs.reduce((a, b) => a + b, 0) / n;
  return { n, median, min: xs[0], max: xs[n - 1], mean, p90: q(0.9), p99: q(0.99) };
}

export const round = (x, digits = 2) =>
  x === undefined || x === null || Number.isNaN(x) ? x : Math.round(x * 10 ** digits) / 10 ** digits;

// --- processes ---------------------------------------------------------------------------------

/** Sum of on-CPU time of every thread of a process, from /proc (Linux only; undefined elsewhere). */
export function cpuMs(pid) {
  try {
    let ns = 0;
    for (const t of readdirSync(`/proc/${pid}/task`)) {
      try {
        ns += Number(readFileSync(`/proc/${pid}/task/${t}/schedstat`, "utf8").split(" ")[0]);
      } catch {
        // the thread ended meanwhile
      }
    }
    return ns / 1e6;
  } catch {
    return undefined;
  }
}

/** Resident set size of a process in MB, from /proc/<pid>/status VmRSS (Linux only). */
export function rssMb(pid) {
  try {
    const m = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

export function loadAverage() {
  try {
    return readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).map(Number);
  } catch {
    return undefined;
  }
}

/** Ends a child we started and waits for it. */
export async function stopChild(child, signal = "SIGTERM") {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill(signal);
  const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
  await exited;
  clearTimeout(timer);
}

/** Spawns `node <args>` and resolves when its stderr matches `ready` (returns the match). */
export async function spawnUntil(args, { env, ready, timeoutMs = 20_000, node = NODE }) {
  const child = spawn(node, args, { env, stdio: ["ignore", "pipe", "pipe"] });
  let err = "";
  child.stdout.resume();
  const match = await new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${args.join(" ")} did not get ready: ${err.slice(-2000)}`)),
      timeoutMs,
    );
    child.stderr.on("data", (c) => {
      err += c;
      if (err.length > 1e6) err = err.slice(-1e5);
      const m = ready.exec(err);
      if (m) {
        clearTimeout(timer);
        resolve(m);
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`${args.join(" ")} exited with ${code}: ${err.slice(-2000)}`));
    });
  });
  child.stderr.resume();
  return { child, match, stderr: () => err };
}

/** An `initialize` request as one stdio line: what every cold-start measure sends first. */
export const INITIALIZE_LINE = `${JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: {
    protocolVersion: "2025-06-18",
    capabilities: {},
    clientInfo: { name: "switchboard-bench", version: "1.0.0" },
  },
})}\n`;

/** Milliseconds from spawn to the `initialize` answer on stdout, and the child's CPU ms by then; stops the child. */
export async function timeToInitialize(node, args, env = {}) {
  const started = performance.now();
  const child = spawn(node, args, { stdio: ["pipe", "pipe", "ignore"], env: { PATH: process.env.PATH ?? "", ...env } });
  child.stdin.write(INITIALIZE_LINE);
  await new Promise((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (chunk) => {
      out += chunk;
      if (/"id"\s*:\s*1\b/.test(out)) resolve();
    });
    child.once("exit", (code) =>
      reject(new Error(`${node} ${args.join(" ")} exited (${code}) before answering initialize`)),
    );
  });
  const ms = performance.now() - started;
  const cpu = cpuMs(child.pid);
  child.stdin.end();
  await stopChild(child);
  return { ms, cpu };
}

// --- peers -------------------------------------------------------------------------------------

/** Entry script of a bin of the client package (test/clients/), started with node (never npx). */
export function binEntry(pkg, bin) {
  const missing = clientsMissing();
  if (missing) throw new Error(`bench: the peers are in test/clients: ${missing}`);
  const dir = join(CLIENTS_MODULES, pkg);
  const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
  const rel = typeof manifest.bin === "string" ? manifest.bin : manifest.bin[bin ?? Object.keys(manifest.bin)[0]];
  return { path: join(dir, rel), version: manifest.version };
}

export const everything = () => binEntry("@modelcontextprotocol/server-everything");
export const bridge = () => binEntry("@ivotoby/openapi-mcp-server");

/**
 * The bridge's environment for one upstream API of the sandbox (see its README: API_BASE_URL,
 * OPENAPI_SPEC_PATH, API_HEADERS). The header value may not contain a comma.
 */
export function bridgeEnv(sandbox, api) {
  const doc = { build: "build-service.yaml", sizing: "sizing.yaml", drones: "drones.yaml" }[api];
  const header = api === "build" ? `api-key:${sandbox.keys.build}` : `Authorization:Bearer ${sandbox.keys[api]}`;
  return {
    PATH: process.env.PATH ?? "",
    API_BASE_URL: sandbox.urls[api],
    OPENAPI_SPEC_PATH: join(ROOT, "docs/openapi", doc),
    API_HEADERS: header,
    VERBOSE: "false",
  };
}

/**
 * Environment that points switchboard-mcp at a sandbox of the bench process (as test/harness.ts):
 * every service of the registry at its simulator (launch.ts's sandboxEnv). Call loadSandbox first.
 */
export function sandboxEnv(sandbox, extra = {}) {
  if (!sandboxModule) throw new Error("sandboxEnv: call loadSandbox() first");
  return {
    PATH: process.env.PATH ?? "",
    ...sandboxModule.sandboxEnv(sandbox),
    LOG_LEVEL: "warn",
    ...extra,
  };
}

// --- the sandbox, in this process ---------------------------------------------------------------

let sandboxModule;
/**
 * startSandbox() from src/sandbox/index.ts and the service variables that point at it (sandboxEnv
 * from src/launch.ts), compiled from src/: the published build is a single bundle.
 */
export async function loadSandbox() {
  sandboxModule ??= await importFromSrc(
    'export { startSandbox } from "./src/sandbox/index.ts";\nexport { sandboxEnv } from "./src/launch.ts";\n' +
      'import { settingDefault } from "./src/core/base/settings.ts";\n' +
      "/** The time scale --sandbox uses by default (SANDBOX_TIME_SCALE). */\n" +
      'export const defaultTimeScale = settingDefault("sandboxTimeScale");',
    "bench-sandbox",
  );
  return sandboxModule;
}

export function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

// --- raw MCP requests ----------------------------------------------------------------------

export const ACCEPT = "application/json, text/event-stream";
const MODERN = "2026-07-28";

/** A 2026-07-28 request as test/harness.ts rpc2026 sends it: the envelope in params._meta. */
export function modernRequest(method, params, { capabilities = {}, id = 1 } = {}) {
  const name = params.name ?? params.uri ?? params.taskId;
  return {
    headers: {
      "content-type": "application/json",
      accept: ACCEPT,
      "mcp-protocol-version": MODERN,
      "mcp-method": method,
      ...(name !== undefined ? { "mcp-name": String(name) } : {}),
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id,
      method,
      params: {
        ...params,
        _meta: {
          "io.modelcontextprotocol/protocolVersion": MODERN,
          "io.modelcontextprotocol/clientInfo": { name: "switchboard-bench", version: "1.0.0" },
          "io.modelcontextprotocol/clientCapabilities": capabilities,
        },
      },
    }),
  };
}

const chunkMarks = new Map();
/**
 * The module a line of an unminified bundle chunk belongs to (`src/core/x.ts`,
 * `node_modules/pkg/file.js`): each chunk line `// <path>` starts that module's code. For profiles.
 */
export function chunkModule(url, line) {
  if (!chunkMarks.has(url)) {
    const found = [];
    readFileSync(new URL(url), "utf8")
      .split("\n")
      .forEach((l, i) => {
        const m = /^\/\/ ((?:node_modules|src)\/\S+)$/.exec(l);
        if (m) found.push([i, m[1]]);
      });
    chunkMarks.set(url, found);
  }
  let best = "(chunk glue)";
  for (const [i, m] of chunkMarks.get(url)) if (i <= line) best = m;
  return best;
}
