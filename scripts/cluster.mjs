#!/usr/bin/env node
// The hosted topology with local processes: Redis, the sandbox, N replicas of the HTTP server and
// nginx in front (docs/deployment.md, "The cluster"). The same topology as deploy/compose.yaml,
// without a container engine.
//
//   node scripts/cluster.mjs [--replicas 3] [--port 8080] [--sandbox] [--caller] [--no-state]
//   npm run cluster -- --replicas 3 --sandbox          (builds dist/ first when src/ changed)
//
// prints the balancer URL and stays up until Ctrl-C (or SIGTERM), then stops everything.
// Without --sandbox the replicas get the service variables of this shell (each service's variables,
// from src/services/registry.ts: BUILD_API_KEY, ...).
//
// As a library (tests, benchmarks): `const cluster = await startCluster({ replicas: 3 })`, then
// `cluster.url` (the MCP endpoint through nginx), `cluster.replicas[i]` (kill, restart, logs),
// `cluster.redis` (command, dump, restart), `cluster.sandbox` (urls, keys, stats, faults) and
// `await cluster.stop()`. Every process is killed on stop() and when this process exits; children
// also get SIGKILL from the kernel if this process dies without exiting (setpriv --pdeathsig).
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  accessSync,
  chmodSync,
  constants,
  createWriteStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createServer, connect } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { fileURLToPath } from "node:url";
import { serviceVariables } from "./from-src.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
export const CLI = join(root, "dist", "cli.js");
export const NGINX_TEMPLATE = join(root, "deploy", "nginx.conf");

const BEGIN_MARK = /^# ---- BEGIN replicas.*$/m;
const END_MARK = /^# ---- END replicas ----$/m;

// ---------------------------------------------------------------------------------------------
// Binaries and ports

/** Absolute path of an executable on PATH (or in the sbin directories, where Debian puts nginx). */
export function findBinary(name) {
  const searchPath = [...(process.env.PATH ?? "").split(delimiter), "/usr/local/sbin", "/usr/sbin", "/sbin"];
  for (const dir of searchPath) {
    if (!dir) continue;
    const path = join(dir, name);
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // next
    }
  }
  return undefined;
}

/** What the cluster needs on this machine: `{ ok: true }` or why not, with the install command. */
export function clusterPrerequisites({ cli = CLI } = {}) {
  if (!findBinary("redis-server")) return { ok: false, why: "redis-server not found (apt-get install redis-server)" };
  if (!findBinary("nginx")) return { ok: false, why: "nginx not found (apt-get install nginx)" };
  if (!existsSync(cli))
    return { ok: false, why: cli === CLI ? "dist/cli.js not built (npm run build)" : `${cli} not found` };
  return { ok: true };
}

/** A port nobody listens on right now (the OS picks it; it is released at once for the child). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function freePorts(n) {
  const ports = new Set();
  while (ports.size < n) ports.add(await freePort());
  return [...ports];
}

// ---------------------------------------------------------------------------------------------
// Child processes

/** Every process started by any cluster in this process, for the exit handler. */
const live = new Set();
/** Temp directories to remove at exit (a cluster that was never stopped). */
const dirs = new Set();
let exitHookInstalled = false;

function installExitHook() {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on("exit", () => {
    for (const proc of live) proc.killNow();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });
}

const SETPRIV = process.platform === "linux" ? findBinary("setpriv") : undefined;
const SETPRIV_WORKS = SETPRIV !== undefined && spawnSync(SETPRIV, ["--pdeathsig", "KILL", "--", "true"]).status === 0;

/**
 * Starts a child in its own process group (so killing the group also reaches nginx's workers),
 * with stdout and stderr appended to a log file and kept (the last 4 MiB) in memory.
 * `deathSignal`: what the kernel sends the child if this process dies without running its exit
 * handlers (KILL, or TERM for nginx, whose master then stops its workers).
 */
function launch(name, command, args, { env, cwd, logFile, deathSignal = "KILL" }) {
  installExitHook();
  const [cmd, argv] = SETPRIV_WORKS ? [SETPRIV, ["--pdeathsig", deathSignal, "--", command, ...args]] : [command, args];
  const child = spawn(cmd, argv, { env, cwd, stdio: ["ignore", "pipe", "pipe"], detached: true });
  const log = createWriteStream(logFile, { flags: "a", mode: 0o600 });
  let output = "";
  const keep = (chunk) => {
    log.write(chunk);
    output += chunk.toString();
    if (output.length > 4 * 1024 * 1024) output = output.slice(-2 * 1024 * 1024);
  };
  child.stdout.on("data", keep);
  child.stderr.on("data", keep);
  const exited = new Promise((resolve) => {
    child.once("error", (err) => {
      keep(`[cluster] ${name} could not start: ${err.message}\n`);
      resolve({ code: null, signal: null, error: err });
    });
    child.once("exit", (code, signal) => resolve({ code, signal }));
  }).then((result) => {
    live.delete(proc);
    // Output still buffered in the pipes arrives after "exit": wait for the streams to end.
    return new Promise((resolve) => {
      let open = 2;
      const done = () => --open === 0 && resolve(result);
      if (child.stdout.readableEnded) done();
      else child.stdout.once("close", done);
      if (child.stderr.readableEnded) done();
      else child.stderr.once("close", done);
      setTimeout(() => resolve(result), 500).unref();
    }).finally(() => log.end());
  });
  const signalGroup = (signal) => {
    try {
      process.kill(-child.pid, signal);
      return true;
    } catch {
      try {
        return child.kill(signal);
      } catch {
        return false;
      }
    }
  };
  const proc = {
    name,
    child,
    pid: child.pid,
    logFile,
    exited,
    output: () => output,
    running: () => child.exitCode === null && child.signalCode === null && live.has(proc),
    signal: signalGroup,
    /** Sends `signal`; SIGKILL to the whole group after `graceMs`. Resolves once it exited. */
    stop: async (signal = "SIGTERM", graceMs = 10_000) => {
      if (!proc.running()) return exited;
      signalGroup(signal);
      const timer = setTimeout(() => signalGroup("SIGKILL"), graceMs);
      const result = await exited;
      clearTimeout(timer);
      signalGroup("SIGKILL"); // anything left in its group (nginx workers); ESRCH otherwise
      return result;
    },
    killNow: () => signalGroup("SIGKILL"),
  };
  live.add(proc);
  return proc;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Polls `probe` until it returns something truthy; fails when `proc` exits or time runs out. */
async function waitFor(what, probe, { proc, timeoutMs = 20_000, intervalMs = 50 } = {}) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (proc && !proc.running()) {
      const result = await proc.exited;
      throw new Error(
        `${what}: ${proc.name} exited (code ${result.code}, signal ${result.signal}) before it was ready:\n` +
          tail(proc.output()),
      );
    }
    try {
      const value = await probe();
      if (value) return value;
    } catch {
      // not yet
    }
    if (Date.now() > deadline)
      throw new Error(`${what}: not ready within ${timeoutMs} ms${proc ? `:\n${tail(proc.output())}` : ""}`);
    await sleep(intervalMs);
  }
}

const tail = (text, lines = 30) => text.trimEnd().split("\n").slice(-lines).join("\n");

async function httpOk(url, timeoutMs = 2000) {
  const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  await res.arrayBuffer();
  return res.ok;
}

/** Process ids whose parent is `pid` (Linux /proc; empty elsewhere). */
export function childPids(pid) {
  const out = [];
  let entries = [];
  try {
    entries = readdirSync("/proc");
  } catch {
    return out;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(fields[1]) === pid) out.push(Number(entry));
    } catch {
      // gone
    }
  }
  return out;
}

/** Whether a process runs (a zombie, exited but not yet reaped, does not count). */
export function processAlive(pid) {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return err.code === "EPERM";
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return process.platform !== "linux";
  }
}

// ---------------------------------------------------------------------------------------------
// Redis: a minimal RESP2 client (no dependency) for tests to look at what the replicas keep

function encodeCommand(args) {
  const parts = [`*${args.length}\r\n`];
  for (const arg of args) {
    const buf = Buffer.isBuffer(arg) ? arg : Buffer.from(String(arg));
    parts.push(`$${buf.length}\r\n`, buf, "\r\n");
  }
  return Buffer.concat(parts.map((p) => (Buffer.isBuffer(p) ? p : Buffer.from(p))));
}

/** Parses one reply at `offset`: `{ value, offset }`, or undefined when incomplete. */
function parseReply(buf, offset) {
  const lineEnd = buf.indexOf("\r\n", offset);
  if (lineEnd < 0) return undefined;
  const type = String.fromCharCode(buf[offset]);
  const line = buf.toString("utf8", offset + 1, lineEnd);
  const next = lineEnd + 2;
  switch (type) {
    case "+":
      return { value: line, offset: next };
    case "-":
      return { value: new RedisError(line), offset: next };
    case ":":
      return { value: Number(line), offset: next };
    case "$": {
      const len = Number(line);
      if (len < 0) return { value: null, offset: next };
      if (buf.length < next + len + 2) return undefined;
      return { value: buf.toString("utf8", next, next + len), offset: next + len + 2 };
    }
    case "*": {
      const count = Number(line);
      if (count < 0) return { value: null, offset: next };
      const items = [];
      let at = next;
      for (let i = 0; i < count; i++) {
        const item = parseReply(buf, at);
        if (!item) return undefined;
        items.push(item.value);
        at = item.offset;
      }
      return { value: items, offset: at };
    }
    default:
      throw new Error(`unexpected RESP reply type ${JSON.stringify(type)}`);
  }
}

export class RedisError extends Error {}

/** One connection; commands are pipelined and answered in order. */
export function redisConnection(port, host = "127.0.0.1") {
  const socket = connect(port, host);
  socket.setNoDelay(true);
  const pending = [];
  let buffer = Buffer.alloc(0);
  let failure;
  const fail = (err) => {
    failure = err;
    while (pending.length) pending.shift().reject(err);
  };
  socket.on("data", (chunk) => {
    buffer = buffer.length ? Buffer.concat([buffer, chunk]) : chunk;
    let at = 0;
    for (;;) {
      const reply = parseReply(buffer, at);
      if (!reply) break;
      at = reply.offset;
      const waiter = pending.shift();
      if (!waiter) continue;
      if (reply.value instanceof RedisError) waiter.reject(reply.value);
      else waiter.resolve(reply.value);
    }
    buffer = buffer.subarray(at);
  });
  socket.on("error", fail);
  socket.on("close", () => fail(failure ?? new Error(`redis connection to ${host}:${port} closed`)));
  return {
    send(...args) {
      if (failure) return Promise.reject(failure);
      return new Promise((resolve, reject) => {
        pending.push({ resolve, reject });
        socket.write(encodeCommand(args.flat()));
      });
    },
    close() {
      socket.end();
      socket.destroy();
    },
  };
}

/** Runs one command on a fresh connection: `await redisCommand(port, "GET", "k")`. */
export async function redisCommand(port, ...args) {
  const conn = redisConnection(port);
  try {
    return await conn.send(...args);
  } finally {
    conn.close();
  }
}

/** Every key with its type, value (in the shape of its type) and time to live (ms, -1 = none). */
export async function redisDump(port, pattern = "*") {
  const conn = redisConnection(port);
  try {
    const keys = [];
    let cursor = "0";
    do {
      const [next, batch] = await conn.send("SCAN", cursor, "MATCH", pattern, "COUNT", "1000");
      cursor = next;
      keys.push(...batch);
    } while (cursor !== "0");
    keys.sort();
    const out = {};
    for (const key of keys) {
      const type = await conn.send("TYPE", key);
      let value;
      if (type === "string") value = await conn.send("GET", key);
      else if (type === "hash") {
        const flat = await conn.send("HGETALL", key);
        value = {};
        for (let i = 0; i < flat.length; i += 2) value[flat[i]] = flat[i + 1];
      } else if (type === "list") value = await conn.send("LRANGE", key, "0", "-1");
      else if (type === "set") value = (await conn.send("SMEMBERS", key)).sort();
      else if (type === "zset") {
        const flat = await conn.send("ZRANGE", key, "0", "-1", "WITHSCORES");
        value = [];
        for (let i = 0; i < flat.length; i += 2) value.push({ member: flat[i], score: Number(flat[i + 1]) });
      } else if (type === "stream") value = await conn.send("XRANGE", key, "-", "+");
      else if (type === "none") continue; // expired between SCAN and TYPE
      const ttlMs = await conn.send("PTTL", key);
      out[key] = { type, value, ttlMs };
    }
    return out;
  } finally {
    conn.close();
  }
}

// ---------------------------------------------------------------------------------------------
// nginx configuration

/** nginx's idle timeout for its connections to the replicas: below the replicas' MCP_DRAIN_IDLE_MS. */
const KEEPALIVE_TIMEOUT = "4s";

/**
 * The replicas block of deploy/nginx.conf for these replicas (`{ id, address, down }`, address
 * host:port; `down: true` takes one out of every upstream, as a rolling restart does before SIGTERM),
 * and `keepaliveTimeout` (an nginx time, "4s", "1000ms"), which must stay below MCP_DRAIN_IDLE_MS.
 */
export function renderReplicaBlock(replicas, keepaliveTimeout = KEEPALIVE_TIMEOUT) {
  const server = (r, extra) => `    server ${r.address} ${extra}${r.down ? " down" : ""};`;
  const lines = ["upstream switchboard_replicas {", "    least_conn;"];
  for (const r of replicas) lines.push(server(r, "max_fails=1 fail_timeout=5s"));
  lines.push("    keepalive 32;", `    keepalive_timeout ${keepaliveTimeout};`, "}", "");
  for (const r of replicas) {
    lines.push(`upstream switchboard_${r.id} {`, server(r, "max_fails=1 fail_timeout=5s"));
    for (const other of replicas) if (other !== r) lines.push(server(other, "backup"));
    lines.push("    keepalive 8;", `    keepalive_timeout ${keepaliveTimeout};`, "}", "");
  }
  lines.push("map $http_mcp_session_id $switchboard_backend {", "    default switchboard_replicas;");
  for (const r of replicas)
    lines.push(`    "~^${r.id.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\." switchboard_${r.id};`);
  lines.push("}");
  return lines.join("\n");
}

/** The replicas block as deploy/nginx.conf has it (for compose). */
export function templateReplicaBlock(template = readFileSync(NGINX_TEMPLATE, "utf8")) {
  const begin = BEGIN_MARK.exec(template);
  const end = END_MARK.exec(template);
  if (!begin || !end || end.index < begin.index)
    throw new Error(`${NGINX_TEMPLATE}: the "BEGIN replicas" / "END replicas" markers are missing`);
  return template.slice(begin.index + begin[0].length + 1, end.index).trimEnd();
}

/**
 * deploy/nginx.conf with this cluster's replicas and listen address: the http-context part.
 * `replicas`: `[{ id, address }]`; `listen`: e.g. "127.0.0.1:8080"; `accessLog`: a path, or
 * undefined to keep the template's.
 */
export function renderNginxSite({
  replicas,
  listen,
  accessLog,
  tls,
  keepaliveTimeout,
  template = readFileSync(NGINX_TEMPLATE, "utf8"),
}) {
  const begin = BEGIN_MARK.exec(template);
  const end = END_MARK.exec(template);
  if (!begin || !end || end.index < begin.index)
    throw new Error(`${NGINX_TEMPLATE}: the "BEGIN replicas" / "END replicas" markers are missing`);
  const head = template.slice(0, begin.index + begin[0].length);
  let site = `${head}\n${renderReplicaBlock(replicas, keepaliveTimeout)}\n${template.slice(end.index)}`;
  const listenLine = /^(\s*)listen\s+[^;]+;/m;
  if (!listenLine.test(site)) throw new Error(`${NGINX_TEMPLATE}: no "listen ...;" line in the server block`);
  // `tls`: a second listener with TLS terminated here ({ listen, certFile, keyFile }), as an operator's would be.
  const tlsLines = tls
    ? `\n$1listen ${tls.listen} ssl;\n$1ssl_certificate ${tls.certFile};\n$1ssl_certificate_key ${tls.keyFile};`
    : "";
  site = site.replace(listenLine, `$1listen ${listen};${tlsLines}`);
  if (accessLog !== undefined) {
    const accessLine = /^(\s*)access_log\s+\S+\s+switchboard;/m;
    if (!accessLine.test(site))
      throw new Error(`${NGINX_TEMPLATE}: no "access_log ... switchboard;" line in the server block`);
    site = site.replace(accessLine, `$1access_log ${accessLog} switchboard;`);
  }
  return site;
}

/** The main config that wraps the site: every path nginx writes is under `dir`. */
function renderNginxMain(dir) {
  return [
    "# Generated by scripts/cluster.mjs: a main config around deploy/nginx.conf (site.conf here).",
    "worker_processes 1;",
    `pid ${join(dir, "nginx.pid")};`,
    `error_log ${join(dir, "error.log")} notice;`,
    "events {",
    "    worker_connections 4096;",
    "}",
    "http {",
    `    client_body_temp_path ${join(dir, "client_body")};`,
    `    proxy_temp_path ${join(dir, "proxy")};`,
    `    fastcgi_temp_path ${join(dir, "fastcgi")};`,
    `    uwsgi_temp_path ${join(dir, "uwsgi")};`,
    `    scgi_temp_path ${join(dir, "scgi")};`,
    "    default_type application/octet-stream;",
    "    sendfile on;",
    "    server_tokens off;",
    `    include ${join(dir, "site.conf")};`,
    "}",
    "",
  ].join("\n");
}

// ---------------------------------------------------------------------------------------------
// The cluster

/** Variables of the shell a replica may need besides the cluster's own (sandbox runs start clean). */
const SYSTEM_VARS = [
  "PATH",
  "HOME",
  "TMPDIR",
  "LANG",
  "LC_ALL",
  "TZ",
  "NODE_OPTIONS",
  "NODE_EXTRA_CA_CERTS",
  "SSL_CERT_FILE",
  "HTTPS_PROXY",
  "HTTP_PROXY",
  "NO_PROXY",
];

function pick(env, names) {
  return Object.fromEntries(names.filter((n) => env[n] !== undefined).map((n) => [n, env[n]]));
}

function stringEnv(env) {
  return Object.fromEntries(
    Object.entries(env ?? {})
      .filter(([, v]) => v !== undefined && v !== null)
      .map(([k, v]) => [k, String(v)]),
  );
}

/**
 * Starts Redis, the sandbox, `replicas` servers and nginx. See the header of this file, and
 * scripts/cluster.d.mts for every option and what the result holds.
 */
export async function startCluster(options = {}) {
  const {
    replicas: count = 3,
    sandbox: withSandbox = true,
    state = true,
    nginx: withNginx = true,
    credentials = "operator",
    env: extraEnv = {},
    replicaEnv,
    args = [],
    pollIntervalMs,
    timeScale,
    sandboxEnv: extraSandboxEnv = {},
    logLevel = "info",
    drainMs,
    drainIdleMs,
    keepaliveTimeoutMs,
    port: nginxPort,
    tls,
    host = "127.0.0.1",
    stateKey = randomBytes(32).toString("base64url"),
    requestStateKey = randomBytes(32).toString("base64url"),
    startTimeoutMs = 30_000,
    stopTimeoutMs = 10_000,
    keepDir = false,
    log = () => undefined,
    cli = CLI,
  } = options;
  if (!Number.isInteger(count) || count < 1 || count > 32)
    throw new Error("replicas must be a whole number from 1 to 32");
  if (credentials !== "operator" && credentials !== "caller")
    throw new Error('credentials must be "operator" or "caller"');
  if ((drainIdleMs === undefined) !== (keepaliveTimeoutMs === undefined) || keepaliveTimeoutMs >= drainIdleMs)
    throw new Error(
      "drainIdleMs and keepaliveTimeoutMs go together, nginx's below the replicas' (a POST is lost else)",
    );
  const missing = clusterPrerequisites({ cli });
  if (!missing.ok) throw new Error(`cannot start the cluster: ${missing.why}`);
  const services = await serviceVariables();
  const serviceVars = services.flatMap((s) => s.variables);

  const dir = mkdtempSync(join(tmpdir(), "switchboard-cluster-"));
  // Run as root, nginx's workers are nobody: they must be able to reach their temp paths (nginx
  // creates those itself, owned by its worker user). Logs stay readable by their owner only.
  const asRoot = process.getuid?.() === 0;
  if (asRoot) chmodSync(dir, 0o711);
  installExitHook();
  if (!keepDir) dirs.add(dir);
  const procs = [];
  let stopped = false;
  const cluster = { dir };

  const stop = async () => {
    if (stopped) return;
    stopped = true;
    // Front to back: stop taking traffic, let replicas drain, then what they depend on.
    if (cluster.nginxProc) await cluster.nginxProc.stop("SIGTERM", 5000);
    await Promise.all((cluster.replicas ?? []).map((r) => r.kill("SIGTERM", stopTimeoutMs)));
    await Promise.all(procs.map((p) => p.stop("SIGTERM", 5000)));
    if (!keepDir) rmSync(dir, { recursive: true, force: true });
    dirs.delete(dir);
  };
  cluster.stop = stop;

  try {
    const wanted = 1 + (withSandbox ? 1 : 0) + count + (withNginx && nginxPort === undefined ? 1 : 0);
    const ports = await freePorts(wanted);
    const takePort = () => ports.shift();

    // Redis ------------------------------------------------------------------------------------
    const redisPort = takePort();
    const redisDir = join(dir, "redis");
    mkdirSync(redisDir);
    const redisBin = findBinary("redis-server");
    let redisProc;
    const startRedis = async () => {
      redisProc = launch(
        "redis",
        redisBin,
        [
          "--port",
          String(redisPort),
          "--bind",
          "127.0.0.1",
          "--save",
          "",
          "--appendonly",
          "no",
          "--dir",
          redisDir,
          "--protected-mode",
          "yes",
        ],
        {
          cwd: redisDir,
          env: pick(process.env, SYSTEM_VARS),
          logFile: join(dir, "redis.log"),
        },
      );
      procs.push(redisProc);
      await waitFor("redis", async () => (await redisCommand(redisPort, "PING")) === "PONG", {
        proc: redisProc,
        timeoutMs: startTimeoutMs,
      });
    };
    const redisUrl = `redis://127.0.0.1:${redisPort}`;
    await startRedis();
    log(`redis on ${redisUrl}`);
    const removeProc = (p) => {
      const i = procs.indexOf(p);
      if (i >= 0) procs.splice(i, 1);
    };
    cluster.redis = {
      url: redisUrl,
      port: redisPort,
      get pid() {
        return redisProc.pid;
      },
      running: () => redisProc.running(),
      command: (...commandArgs) => redisCommand(redisPort, ...commandArgs),
      connection: () => redisConnection(redisPort),
      dump: (pattern) => redisDump(redisPort, pattern),
      keys: async (pattern = "*") => Object.keys(await redisDump(redisPort, pattern)),
      flush: () => redisCommand(redisPort, "FLUSHALL"),
      output: () => redisProc.output(),
      /** Stops Redis (SIGKILL by default: an outage, not a shutdown). Its data is gone. */
      kill: async (signal = "SIGKILL") => {
        const result = await redisProc.stop(signal, 2000);
        removeProc(redisProc);
        return result;
      },
      /** Starts Redis again on the same port (empty: nothing is persisted). */
      start: async () => {
        if (redisProc.running()) return;
        await startRedis();
      },
      restart: async (signal = "SIGKILL") => {
        await cluster.redis.kill(signal);
        await startRedis();
      },
    };

    // Sandbox ----------------------------------------------------------------------------------
    let serviceEnv;
    if (withSandbox) {
      const sandboxPort = takePort();
      const sandboxProc = launch(
        "sandbox",
        process.execPath,
        [cli, "sandbox", "--host", "127.0.0.1", "--port", String(sandboxPort)],
        {
          cwd: root,
          env: {
            ...pick(process.env, SYSTEM_VARS),
            ...(timeScale !== undefined ? { SANDBOX_TIME_SCALE: String(timeScale) } : {}),
            ...stringEnv(extraSandboxEnv),
          },
          logFile: join(dir, "sandbox.log"),
        },
      );
      procs.push(sandboxProc);
      const banner = await waitFor(
        "sandbox",
        () => {
          const out = sandboxProc.output();
          return /listening on http:\/\/\S+\n(?:\s+\S.*\n)*/.test(out) && /_API_KEY=/.test(out) ? out : undefined;
        },
        { proc: sandboxProc, timeoutMs: startTimeoutMs },
      );
      const sandboxUrl = /listening on (http:\/\/\S+)/.exec(banner)[1];
      const printed = Object.fromEntries(
        [...banner.matchAll(/^\s+([A-Z][A-Z0-9_]*)=(\S+)$/gm)].map((m) => [m[1], m[2]]),
      );
      const moreAccounts = [...banner.matchAll(/^\s+(\S+) account \d+: (\S+)$/gm)];
      const simulated = services.filter((s) => printed[s.baseUrlVar]);
      const byService = (value) => Object.fromEntries(simulated.map((s) => [s.name, value(s)]));
      serviceEnv = printed;
      const faultsUrl = `${sandboxUrl}/_sandbox/faults`;
      cluster.sandbox = {
        url: sandboxUrl,
        pid: sandboxProc.pid,
        env: printed,
        urls: byService((s) => printed[s.baseUrlVar]),
        keys: byService((s) => printed[s.apiKeyVar]),
        /** Keys of every simulated account, the first included (SANDBOX_ACCOUNTS). */
        accountKeys: byService((s) => [
          printed[s.apiKeyVar],
          ...moreAccounts.filter((m) => m[1] === s.name).map((m) => m[2]),
        ]),
        stats: async () => (await fetch(`${sandboxUrl}/_sandbox/stats`)).json(),
        faults: async (specs) => {
          const res = await fetch(faultsUrl, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify(specs),
          });
          if (!res.ok) throw new Error(`sandbox faults: ${res.status} ${await res.text()}`);
          return res.json();
        },
        clearFaults: async () => (await fetch(faultsUrl, { method: "DELETE" })).json(),
        output: () => sandboxProc.output(),
      };
      log(`sandbox on ${sandboxUrl}`);
    } else {
      serviceEnv = pick(process.env, serviceVars);
    }
    if (credentials === "caller") {
      // Each request brings its own keys (X-Build-Api-Key, ...): the replicas get base URLs only.
      const keyVars = new Set(services.map((s) => s.apiKeyVar));
      serviceEnv = Object.fromEntries(Object.entries(serviceEnv).filter(([k]) => !keyVars.has(k)));
    }

    // Replicas ---------------------------------------------------------------------------------
    const baseEnv = {
      // A sandbox run starts clean; otherwise this shell's variables, except the cluster's own.
      ...(withSandbox
        ? pick(process.env, SYSTEM_VARS)
        : Object.fromEntries(
            Object.entries(process.env).filter(([k]) => !k.startsWith("MCP_") && !serviceVars.includes(k)),
          )),
      ...serviceEnv,
      LOG_LEVEL: logLevel,
      MCP_CREDENTIALS: credentials,
      MCP_REQUEST_STATE_KEY: requestStateKey,
      ...(state ? { MCP_STATE_URL: redisUrl, MCP_STATE_KEY: stateKey } : {}),
      ...(pollIntervalMs !== undefined ? { BUILD_POLL_INTERVAL_MS: String(pollIntervalMs) } : {}),
      ...(drainMs !== undefined ? { MCP_DRAIN_MS: String(drainMs) } : {}),
      ...(drainIdleMs !== undefined ? { MCP_DRAIN_IDLE_MS: String(drainIdleMs) } : {}),
      ...stringEnv(extraEnv),
    };
    const replicaPorts = Array.from({ length: count }, takePort);
    cluster.replicas = replicaPorts.map((port, index) =>
      makeReplica({
        id: `r${index + 1}`,
        index,
        port,
        dir,
        args,
        cli,
        env: { ...baseEnv, MCP_REPLICA_ID: `r${index + 1}`, ...stringEnv(replicaEnv?.(`r${index + 1}`, index)) },
        startTimeoutMs,
        stopTimeoutMs,
      }),
    );
    await Promise.all(cluster.replicas.map((r) => r.start()));
    log(`replicas ${cluster.replicas.map((r) => `${r.id}=${r.baseUrl}`).join(" ")}`);

    // nginx ------------------------------------------------------------------------------------
    if (withNginx) {
      const port = nginxPort ?? takePort();
      const nginxDir = join(dir, "nginx");
      mkdirSync(nginxDir);
      if (asRoot) chmodSync(nginxDir, 0o711);
      const down = new Set();
      const writeSite = () =>
        writeFileSync(
          join(nginxDir, "site.conf"),
          renderNginxSite({
            replicas: cluster.replicas.map((r) => ({ id: r.id, address: `127.0.0.1:${r.port}`, down: down.has(r.id) })),
            listen: `${host}:${port}`,
            accessLog: join(nginxDir, "access.log"),
            tls: tls && { listen: `${host}:${tls.port}`, certFile: tls.certFile, keyFile: tls.keyFile },
            keepaliveTimeout: keepaliveTimeoutMs === undefined ? undefined : `${keepaliveTimeoutMs}ms`,
          }),
        );
      writeSite();
      writeFileSync(join(nginxDir, "nginx.conf"), renderNginxMain(nginxDir));
      const nginxBin = findBinary("nginx");
      const nginxArgs = [
        "-p",
        `${nginxDir}/`,
        "-e",
        join(nginxDir, "error.log"),
        "-c",
        join(nginxDir, "nginx.conf"),
        "-g",
        "daemon off;",
      ];
      const checkConfig = () => {
        const test = spawnSync(nginxBin, [...nginxArgs.slice(0, 6), "-t"], { encoding: "utf8" });
        if (test.status !== 0)
          throw new Error(`nginx rejected the generated config (${join(nginxDir, "nginx.conf")}):\n${test.stderr}`);
      };
      checkConfig();
      const nginxProc = launch("nginx", nginxBin, nginxArgs, {
        cwd: nginxDir,
        env: pick(process.env, SYSTEM_VARS),
        logFile: join(dir, "nginx.log"),
        deathSignal: "TERM",
      });
      cluster.nginxProc = nginxProc;
      const shownHost = host.includes(":") ? `[${host}]` : host;
      const base = `http://${shownHost === "0.0.0.0" ? "127.0.0.1" : shownHost}:${port}`;
      await waitFor("nginx", () => httpOk(`${base}/healthz`), { proc: nginxProc, timeoutMs: startTimeoutMs }).catch(
        (err) => {
          throw new Error(`${err.message}\n${readIfExists(join(nginxDir, "error.log"))}`);
        },
      );
      cluster.url = `${base}/mcp`;
      cluster.baseUrl = base;
      cluster.nginx = {
        url: base,
        port,
        pid: nginxProc.pid,
        /** The master and its workers. */
        pids: () => [nginxProc.pid, ...childPids(nginxProc.pid)],
        config: () => readFileSync(join(nginxDir, "site.conf"), "utf8"),
        errorLog: () => readIfExists(join(nginxDir, "error.log")),
        /** Reloads the configuration (SIGHUP): e.g. after editing site.conf in cluster.dir/nginx. */
        reload: () => nginxProc.signal("SIGHUP"),
        /** Marks a replica `down` in every upstream and reloads (the first step of a rolling restart). */
        takeOut: async (id, options) => {
          down.add(knownReplica(id));
          return reloadAndSettle(options);
        },
        /** Puts a replica back in every upstream and reloads (the last step of a rolling restart). */
        putBack: async (id, options) => {
          down.delete(knownReplica(id));
          return reloadAndSettle(options);
        },
      };
      const knownReplica = (id) => {
        if (!cluster.replicas.some((r) => r.id === id)) throw new Error(`no replica ${id} in this cluster`);
        return id;
      };
      /**
       * Rewrites site.conf, sends SIGHUP to the master and waits until a new worker runs and the old
       * ones are gone: an old worker finishes its requests in flight and closes its connections to
       * the replicas, then exits. A stream still open (a build wait) keeps it up to `timeoutMs`.
       */
      const reloadAndSettle = async ({ timeoutMs = 10_000 } = {}) => {
        writeSite();
        checkConfig();
        const started = Date.now();
        const old = childPids(nginxProc.pid);
        process.kill(nginxProc.pid, "SIGHUP");
        const settled = await waitFor(
          "nginx reload",
          () => {
            const now = childPids(nginxProc.pid).filter(processAlive);
            return now.some((pid) => !old.includes(pid)) && !old.some(processAlive);
          },
          { proc: nginxProc, timeoutMs, intervalMs: 20 },
        ).catch(() => false);
        return { oldWorkersGone: settled === true, ms: Date.now() - started };
      };
      /** The access log: one line per request with upstream=<replica address> and group=<sticky group>. */
      cluster.nginxLog = () => readIfExists(join(nginxDir, "access.log"));
      cluster.nginxErrors = () => readIfExists(join(nginxDir, "error.log"));
      log(`nginx on ${base}`);
    } else {
      cluster.url = cluster.replicas[0].url;
      cluster.baseUrl = cluster.replicas[0].baseUrl;
    }

    /** Every process id of the cluster right now (nginx workers included). */
    cluster.pids = () =>
      [
        ...(cluster.nginx ? cluster.nginx.pids() : []),
        ...cluster.replicas.map((r) => r.pid),
        ...procs.map((p) => p.pid),
      ].filter((pid, i, all) => pid !== undefined && all.indexOf(pid) === i);
    cluster.replicaFor = (sessionId) =>
      cluster.replicas.find((r) => typeof sessionId === "string" && sessionId.startsWith(`${r.id}.`));
    return cluster;
  } catch (err) {
    await stop().catch(() => undefined);
    throw err;
  }
}

function readIfExists(path) {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return "";
  }
}

function makeReplica({ id, index, port, dir, args, cli, env, startTimeoutMs, stopTimeoutMs }) {
  const baseUrl = `http://127.0.0.1:${port}`;
  const logFile = join(dir, `${id}.log`);
  let proc;
  let history = "";
  const replica = {
    id,
    index,
    port,
    url: `${baseUrl}/mcp`,
    baseUrl,
    logFile,
    env,
    get pid() {
      return proc?.pid;
    },
    running: () => proc?.running() ?? false,
    /** Everything it wrote on stderr/stdout, across restarts. */
    output: () => history + (proc?.output() ?? ""),
    exited: () => proc?.exited,
    /** Starts it (again, on the same port) and waits for /healthz. */
    start: async (moreEnv = {}) => {
      if (proc?.running()) throw new Error(`${id} is already running`);
      if (proc) history += proc.output();
      proc = launch(
        id,
        process.execPath,
        [cli, "--transport", "http", "--host", "127.0.0.1", "--port", String(port), ...args],
        {
          cwd: root,
          env: { ...env, ...stringEnv(moreEnv) },
          logFile,
        },
      );
      await waitFor(id, () => httpOk(`${baseUrl}/healthz`), { proc, timeoutMs: startTimeoutMs });
    },
    /**
     * Sends `signal` (SIGTERM: graceful drain) and resolves with `{ code, signal }` once it exited;
     * SIGKILL after `graceMs`.
     */
    kill: async (signal = "SIGTERM", graceMs = stopTimeoutMs) => {
      if (!proc) return { code: null, signal: null };
      return proc.stop(signal, graceMs);
    },
    /** Sends a signal without waiting (e.g. SIGTERM, then probe /readyz while it drains). */
    signal: (signal) => proc?.signal(signal) ?? false,
    restart: async (signal = "SIGTERM", moreEnv = {}) => {
      await replica.kill(signal);
      await replica.start(moreEnv);
    },
    healthz: async () => fetchJson(`${baseUrl}/healthz`),
    readyz: async () => fetchJson(`${baseUrl}/readyz`),
  };
  return replica;
}

async function fetchJson(url) {
  const res = await fetch(url, { signal: AbortSignal.timeout(5000) });
  const text = await res.text();
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  return { status: res.status, body };
}

// ---------------------------------------------------------------------------------------------
// CLI

function parseCli(argv) {
  const opts = { replicas: 3, sandbox: false, state: true, credentials: "operator" };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${arg} needs a value`);
      return v;
    };
    if (arg === "--replicas") opts.replicas = Number(value());
    else if (arg === "--port") opts.port = Number(value());
    else if (arg === "--sandbox") opts.sandbox = true;
    else if (arg === "--caller") opts.credentials = "caller";
    else if (arg === "--no-state") opts.state = false;
    else if (arg === "--log-level") opts.logLevel = value();
    else if (arg === "--toolsets") opts.args = ["--toolsets", value()];
    else if (arg === "--help" || arg === "-h") opts.help = true;
    else throw new Error(`unknown flag ${arg}; see --help`);
  }
  if (opts.port !== undefined && !(Number.isInteger(opts.port) && opts.port > 0 && opts.port < 65536))
    throw new Error("--port must be 1-65535");
  return opts;
}

const HELP = `node scripts/cluster.mjs [--replicas 3] [--port 8080] [--sandbox] [--caller] [--no-state]
                         [--log-level info] [--toolsets LIST]

Starts Redis, N replicas of switchboard-mcp (HTTP) and nginx in front, on free ports, and prints
the MCP endpoint. Ctrl-C stops everything.
  --replicas N     replicas r1..rN (default 3)
  --port P         nginx's port on 127.0.0.1 (default: a free one)
  --sandbox        run the simulated services and point the replicas at them; without it the
                   replicas get every service's variables from this shell
  --caller         MCP_CREDENTIALS=caller: each request brings its keys (X-Build-Api-Key, ...)
  --no-state       no MCP_STATE_URL (each replica keeps its state in process)
  --toolsets LIST  passed to every replica
  --log-level L    LOG_LEVEL of the replicas (default info)
Logs: the temp directory printed at start (r1.log ..., redis.log, sandbox.log, nginx/access.log,
nginx/error.log, nginx/site.conf: deploy/nginx.conf filled in); it is kept after Ctrl-C.`;

async function main() {
  let opts;
  try {
    opts = parseCli(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`cluster: ${err.message}\n`);
    process.exit(2);
  }
  if (opts.help) {
    process.stdout.write(`${HELP}\n`);
    return;
  }
  const { help: _help, ...options } = opts;
  let cluster;
  let stopping = false;
  const shutdown = async (signal) => {
    if (stopping) return;
    stopping = true;
    process.stderr.write(`cluster: ${signal}, stopping everything\n`);
    await cluster?.stop();
    if (cluster) process.stderr.write(`cluster: stopped; logs kept in ${cluster.dir}\n`);
    process.exit(0);
  };
  process.on("SIGINT", () => void shutdown("SIGINT"));
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGHUP", () => void shutdown("SIGHUP"));
  try {
    cluster = await startCluster({
      ...options,
      keepDir: true,
      log: (line) => process.stderr.write(`cluster: ${line}\n`),
    });
  } catch (err) {
    process.stderr.write(`cluster: ${err.message}\n`);
    process.exit(1);
  }
  if (stopping) return;
  const lines = [
    `cluster: ${cluster.replicas.length} replicas behind nginx; logs in ${cluster.dir}`,
    `  MCP endpoint   ${cluster.url}`,
    `  health         ${cluster.baseUrl}/healthz   readiness ${cluster.baseUrl}/readyz`,
    ...cluster.replicas.map((r) => `  ${r.id.padEnd(14)} ${r.url}  (pid ${r.pid})`),
    `  redis          ${cluster.redis.url}  (pid ${cluster.redis.pid})`,
    ...(cluster.sandbox
      ? [`  sandbox        ${cluster.sandbox.url}  keys: ${Object.values(cluster.sandbox.keys).join(" ")}`]
      : []),
    "Ctrl-C stops everything.",
  ];
  process.stderr.write(`${lines.join("\n")}\n`);
  process.stdout.write(`${cluster.url}\n`);
  // A replica that dies on its own is worth a line (a restart is the caller's business).
  for (const r of cluster.replicas) {
    void r.exited()?.then((res) => {
      if (!stopping)
        process.stderr.write(`cluster: ${r.id} exited (code ${res.code}, signal ${res.signal}); see ${r.logFile}\n`);
    });
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  await main();
}
