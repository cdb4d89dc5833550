// Goal 7: the hosted mode (issue 13, item 8). Redis, the sandbox, replicas of the HTTP server and
// nginx as local processes (scripts/cluster.mjs), driven with raw HTTP requests from this process:
//   1. one replica: stateless 2026-07-28 tools/call vs 2025-11-25 calls inside sessions (calls/s);
//   2. three replicas behind nginx vs one, same load (calls/s);
//   3. tasks/get of a working task: p50/p99 through nginx (3 replicas, Redis) vs one replica that
//      keeps its state in process;
//   4. Redis commands per call (INFO stats, background subtracted) and the replicas' own counter.
// Every comparison runs interleaved in the same run (A B B A blocks), so drift in the machine's
// load hits both sides alike.
import { Pool } from "undici";
import { clusterPrerequisites, startCluster } from "../scripts/cluster.mjs";
import { ACCEPT, CLI, cpuMs, modernRequest, sleep, summarize } from "./lib.mjs";

const LEGACY = "2025-11-25";
const TASKS = "io.modelcontextprotocol/tasks";

// --- raw requests --------------------------------------------------------------------------------

/** A keep-alive pool to one origin, and POSTs to its /mcp path. */
function endpoint(url, connections) {
  const u = new URL(url);
  const pool = new Pool(u.origin, { connections, keepAliveTimeout: 30_000 });
  return {
    url,
    pool,
    async post(headers, body) {
      const res = await pool.request({ path: u.pathname, method: "POST", headers, body });
      const text = await res.body.text();
      return { status: res.statusCode, headers: res.headers, text };
    },
    async del(headers) {
      const res = await pool.request({ path: u.pathname, method: "DELETE", headers });
      await res.body.text();
      return res.statusCode;
    },
    close: () => pool.close(),
  };
}

/** The JSON-RPC answer in a JSON or SSE body. */
function answer(text, contentType) {
  if (String(contentType ?? "").includes("text/event-stream")) {
    for (const line of text.split("\n")) {
      if (!line.startsWith("data:")) continue;
      const data = JSON.parse(line.slice(5));
      if (data.id !== undefined) return data;
    }
    throw new Error(`no answer in the stream: ${text.slice(0, 300)}`);
  }
  return JSON.parse(text);
}

/** Cheap check of a tools/call answer under load: HTTP 200, a result, not isError. */
function callOk({ status, text }) {
  if (status === 200 && text.includes('"result"') && !text.includes('"isError":true')) return true;
  return `HTTP ${status}: ${text.slice(0, 300)}`;
}

async function rpc(ep, method, params, options) {
  const { headers, body } = modernRequest(method, params, options);
  const res = await ep.post(headers, body);
  const data = answer(res.text, res.headers["content-type"]);
  if (data.error) throw new Error(`${method}: ${JSON.stringify(data.error)}`);
  return data.result;
}

/** A 2025-11-25 session: initialize, notifications/initialized; then calls with mcp-session-id. */
async function openSession(ep) {
  const init = await ep.post(
    { "content-type": "application/json", accept: ACCEPT },
    JSON.stringify({
      jsonrpc: "2.0",
      id: 0,
      method: "initialize",
      params: {
        protocolVersion: LEGACY,
        capabilities: {},
        clientInfo: { name: "switchboard-bench", version: "1.0.0" },
      },
    }),
  );
  const sessionId = init.headers["mcp-session-id"];
  if (init.status !== 200 || !sessionId)
    throw new Error(`initialize answered ${init.status}: ${init.text.slice(0, 300)}`);
  const headers = {
    "content-type": "application/json",
    accept: ACCEPT,
    "mcp-session-id": sessionId,
    "mcp-protocol-version": LEGACY,
  };
  const ack = await ep.post(headers, JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }));
  if (ack.status !== 202) throw new Error(`notifications/initialized answered ${ack.status}`);
  let id = 0;
  return {
    sessionId,
    call: (name, args = {}) =>
      ep.post(
        headers,
        JSON.stringify({ jsonrpc: "2.0", id: ++id, method: "tools/call", params: { name, arguments: args } }),
      ),
    close: () => ep.del({ "mcp-session-id": sessionId, "mcp-protocol-version": LEGACY }).catch(() => undefined),
  };
}

// --- load ----------------------------------------------------------------------------------------

/** `clients` loops calling `call(i)` for `ms`; calls, errors, wall time and CPU of `pids`. */
async function drive({ clients, ms, call, pids = [] }) {
  let calls = 0;
  let errors = 0;
  let firstError;
  const latencies = [];
  const cpu0 = pids.map((p) => cpuMs(p) ?? 0);
  const t0 = performance.now();
  const end = t0 + ms;
  await Promise.all(
    Array.from({ length: clients }, async (_, i) => {
      while (performance.now() < end) {
        const s = performance.now();
        let outcome;
        try {
          outcome = callOk(await call(i));
        } catch (err) {
          outcome = String(err?.message ?? err);
        }
        latencies.push(performance.now() - s);
        if (outcome === true) calls++;
        else {
          errors++;
          firstError ??= outcome;
        }
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const cpu = pids.reduce((sum, p, i) => sum + ((cpuMs(p) ?? cpu0[i]) - cpu0[i]), 0);
  return { calls, errors, firstError, seconds, latencies, cpuMs: cpu };
}

/** Sums blocks of the same scenario. */
function merge(blocks) {
  const calls = blocks.reduce((s, b) => s + b.calls, 0);
  const errors = blocks.reduce((s, b) => s + b.errors, 0);
  const seconds = blocks.reduce((s, b) => s + b.seconds, 0);
  const cpu = blocks.reduce((s, b) => s + b.cpuMs, 0);
  const lat = summarize(blocks.flatMap((b) => b.latencies));
  return {
    calls,
    errors,
    firstError: blocks.find((b) => b.firstError)?.firstError,
    seconds,
    callsPerSecond: calls / seconds,
    latency: { median: lat.median, p99: lat.p99, max: lat.max },
    cpuMsPerCall: cpu / Math.max(1, calls + errors),
  };
}

/**
 * Load in blocks until a fresh process is warm (V8 compiles the hot paths over the first few
 * thousand calls, see bench/README.md): at least `minCalls`, then until the CPU per call stops
 * falling (the last block within 5% of the one before, and within 10% of the lowest seen), or
 * `maxMs` at most.
 */
async function warmUp(side, { blockMs, minCalls, maxMs }) {
  const t0 = performance.now();
  const seen = [];
  let calls = 0;
  while (performance.now() - t0 < maxMs) {
    const b = await side(blockMs);
    calls += b.calls + b.errors;
    seen.push(b.cpuMs / Math.max(1, b.calls + b.errors));
    const [prev, last] = seen.slice(-2);
    if (calls >= minCalls && seen.length >= 2 && last >= 0.95 * prev && last <= 1.1 * Math.min(...seen)) break;
  }
  return { seconds: (performance.now() - t0) / 1000, calls, cpuMsPerCall: seen.map((x) => Math.round(x * 100) / 100) };
}

/** A then B then B then A, `ms` each: both sides see the same drift in the machine's load. */
async function abba(a, b, ms) {
  const ra = [];
  const rb = [];
  ra.push(await a(ms));
  rb.push(await b(ms));
  rb.push(await b(ms));
  ra.push(await a(ms));
  return [merge(ra), merge(rb)];
}

// --- Redis ---------------------------------------------------------------------------------------

/** total_commands_processed through one connection of our own; each INFO counts itself once. */
function redisCounter(cluster) {
  const conn = cluster.redis.connection();
  const read = async () => Number(/total_commands_processed:(\d+)/.exec(await conn.send("INFO", "stats"))[1]);
  return { read, close: () => conn.close() };
}

/** The replicas' own counter (/healthz redisRoundTrips), summed; plain HTTP, nothing on Redis. */
async function replicaRoundTrips(cluster) {
  let sum = 0;
  for (const r of cluster.replicas) {
    const { body } = await r.healthz();
    if (typeof body?.redisRoundTrips !== "number") return undefined;
    sum += body.redisRoundTrips;
  }
  return sum;
}

/**
 * Commands between two readings. Every INFO read in between (the first reading's included, not
 * the last's) is counted by Redis too: `reads` of them, `infoCost` commands each.
 */
const between = (a, b, key, reads, infoCost) =>
  a[key] === undefined || b[key] === undefined ? undefined : b[key] - a[key] - (key === "redis" ? reads * infoCost : 0);

/**
 * The background over windows of `ms` (lease renewals, orphan scans, poller ticks come in bursts):
 * every window of readings `samples` that spans at least `ms`, scaled to `ms`. Mean and spread.
 */
function background(traces, ms, key, infoCost) {
  const counts = [];
  for (const samples of traces) {
    for (let i = 0; i < samples.length; i++) {
      const j = samples.findIndex((s, k) => k > i && s.at - samples[i].at >= ms);
      if (j < 0) break;
      const c = between(samples[i], samples[j], key, j - i, infoCost);
      if (c === undefined) return undefined;
      counts.push((c * ms) / (samples[j].at - samples[i].at));
    }
  }
  if (counts.length === 0) return undefined;
  const mean = counts.reduce((a, b) => a + b, 0) / counts.length;
  return { mean, min: Math.min(...counts), max: Math.max(...counts), windows: counts.length };
}

// --- the section ---------------------------------------------------------------------------------

async function cluster(options, log) {
  const opts = { cli: CLI, logLevel: "warn", ...options };
  try {
    return await startCluster(opts);
  } catch (err) {
    // A port picked free may be taken meanwhile: one more try.
    log(`hosted: cluster start failed (${String(err?.message ?? err).split("\n")[0]}); retrying once`);
    await sleep(2000);
    return startCluster(opts);
  }
}

/** build_start_agent on a run that outlasts the benchmark, then build_wait as a task: its id. */
async function longTask(ep, projectId) {
  const started = await rpc(ep, "tools/call", {
    name: "build_start_agent",
    arguments: { projectId, prompt: "Benchmark: keep working [minutes=100000]" },
  });
  if (started.isError) throw new Error(`build_start_agent: ${JSON.stringify(started.content).slice(0, 300)}`);
  const task = await rpc(
    ep,
    "tools/call",
    { name: "build_wait", arguments: { projectId, until: "agent" } },
    { capabilities: { extensions: { [TASKS]: {} } } },
  );
  if (task?.resultType !== "task" || !task.taskId)
    throw new Error(`build_wait did not become a task: ${JSON.stringify(task).slice(0, 300)}`);
  return task.taskId;
}

/** One sequential tasks/get (the task must still be working); ms. */
async function timedGet(ep, taskId) {
  const { headers, body } = modernRequest("tasks/get", { taskId }, { capabilities: { extensions: { [TASKS]: {} } } });
  const t0 = performance.now();
  const res = await ep.post(headers, body);
  const ms = performance.now() - t0;
  if (res.status !== 200 || !res.text.includes('"status":"working"'))
    throw new Error(`tasks/get answered ${res.status}: ${res.text.slice(0, 300)}`);
  return ms;
}

/** `clients` at once, `total` calls in all (each `call()`); throws on the first failed one. */
async function burst({ clients, total, call }) {
  let next = 0;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (next < total) {
        next++;
        const outcome = await call();
        if (outcome !== true) throw new Error(outcome);
      }
    }),
  );
}

export async function hosted({
  log,
  quick = false,
  clients = 16,
  tool = "build_get_credit_costs",
  redisTool = "drones_list_drones",
  cores,
}) {
  const missing = clusterPrerequisites({ cli: CLI });
  if (!missing.ok) {
    log(`hosted: skipped: ${missing.why}`);
    return { skipped: missing.why };
  }
  const blockMs = quick ? 1500 : 4000; // four blocks (A B B A) per comparison
  // Calls per replica: a fresh one settles after some 3,000 (its CPU per call falls 2-3 times).
  const warm = { blockMs: quick ? 1000 : 2000, minCalls: quick ? 1000 : 3000, maxMs: quick ? 6000 : 20_000 };
  const gets = quick ? 200 : 500;
  const redisCalls = quick ? 200 : 500;
  const quietMs = quick ? 2500 : 6000;
  const result = {
    clients,
    tool,
    blockMs,
    cores,
    note:
      `this machine has ${cores} cores, shared by nginx, Redis, the sandbox, ` +
      "the replicas and the load generator (this process): 3 replicas cannot show 3x here",
  };
  const open = new Set();
  const clusters = new Set();
  const endpointFor = (url, connections) => {
    const ep = endpoint(url, connections);
    open.add(ep);
    return ep;
  };
  const closeEndpoint = async (ep) => {
    open.delete(ep);
    await ep.close().catch(() => undefined);
  };
  try {
    log("hosted: starting one replica and three replicas (Redis, sandbox, nginx each)...");
    const one = await cluster({ replicas: 1 }, log);
    clusters.add(one);
    const three = await cluster({ replicas: 3 }, log);
    clusters.add(three);
    const replicaPids = (c) => c.replicas.map((r) => r.pid);

    const callRequest = modernRequest("tools/call", { name: tool, arguments: {} });
    const modernCall = (ep) => () => ep.post(callRequest.headers, callRequest.body);

    // 1. One replica, no nginx: stateless 2026-07-28 vs 2025-11-25 sessions. ------------------
    const direct = endpointFor(one.replicas[0].url, clients);
    const sessions = await Promise.all(Array.from({ length: clients }, () => openSession(direct)));
    const modernSide = (ms) => drive({ clients, ms, call: modernCall(direct), pids: replicaPids(one) });
    const legacySide = (ms) => drive({ clients, ms, call: (i) => sessions[i].call(tool), pids: replicaPids(one) });
    log(`hosted: warming one replica up (both paths, until its CPU per call settles)...`);
    result.warmUp = { modern: await warmUp(modernSide, warm), legacy: await warmUp(legacySide, warm) };
    log(`hosted: one replica, ${clients} clients, ${tool}: 2026-07-28 stateless vs 2025-11-25 sessions...`);
    const [modern, legacy] = await abba(modernSide, legacySide, blockMs);
    await Promise.all(sessions.map((s) => s.close()));
    result.protocol = {
      modern,
      legacy,
      ratio: modern.callsPerSecond / legacy.callsPerSecond,
      cpuRatio: modern.cpuMsPerCall / legacy.cpuMsPerCall,
    };
    log(
      `hosted: ${modern.callsPerSecond.toFixed(0)} vs ${legacy.callsPerSecond.toFixed(0)} calls/s ` +
        `(x${result.protocol.ratio.toFixed(2)})`,
    );

    // 2. Three replicas vs one, through nginx, Redis on, 2026-07-28 calls. -------------------------
    const viaOne = endpointFor(one.url, clients);
    const viaThree = endpointFor(three.url, clients);
    const threeSide = (ms) => drive({ clients, ms, call: modernCall(viaThree), pids: three.pids() });
    const oneSide = (ms) => drive({ clients, ms, call: modernCall(viaOne), pids: one.pids() });
    // The one replica is warm from row 1 (nginx is not: one block); each of the three is fresh.
    log(`hosted: warming three replicas up (until their CPU per call settles)...`);
    result.warmUp.three = await warmUp(threeSide, { ...warm, minCalls: 3 * warm.minCalls, maxMs: 2 * warm.maxMs });
    await oneSide(warm.blockMs);
    const accessBefore = (three.nginxLog?.() ?? "").length;
    log(`hosted: through nginx, ${clients} clients: three replicas vs one...`);
    const [scaled, single] = await abba(threeSide, oneSide, blockMs);
    const perReplica = Object.fromEntries(three.replicas.map((r) => [r.id, 0]));
    for (const line of (three.nginxLog?.() ?? "").slice(accessBefore).split("\n")) {
      const m = / upstream=([^\s,]+)/.exec(line);
      const r = m && three.replicas.find((x) => m[1] === `127.0.0.1:${x.port}`);
      if (r) perReplica[r.id]++;
    }
    result.scaling = {
      three: scaled,
      one: single,
      ratio: scaled.callsPerSecond / single.callsPerSecond,
      requestsPerReplica: perReplica,
    };
    log(
      `hosted: ${scaled.callsPerSecond.toFixed(0)} vs ${single.callsPerSecond.toFixed(0)} calls/s ` +
        `(x${result.scaling.ratio.toFixed(2)})`,
    );
    // The one-replica cluster is done: stop it so that it adds nothing to what follows.
    await closeEndpoint(viaOne);
    await closeEndpoint(direct);
    clusters.delete(one);
    await one.stop();

    // A task on the three replicas that stays working for the rest of the run.
    const seq = endpointFor(three.url, 1);
    const taskId = await longTask(seq, "booking-app");
    await sleep(1000);

    // 4. Redis commands per call. -----------------------------------------------------------------
    log(
      `hosted: Redis commands per call (${redisCalls} ${redisTool}, ${redisCalls} tasks/get, ` +
        `${(2 * quietMs) / 1000} s without calls)...`,
    );
    const counter = redisCounter(three);
    const loaded = endpointFor(three.url, 8);
    try {
      // What one INFO adds to total_commands_processed, as the next one sees it (expected: 1).
      const reads = [];
      for (let i = 0; i < 4; i++) reads.push(await counter.read());
      const infoCost = Math.min(...reads.slice(1).map((x, i) => x - reads[i]));
      const snap = async () => ({
        redis: await counter.read(),
        replicas: await replicaRoundTrips(three),
        at: performance.now(),
      });
      const quiet = async () => {
        const samples = [await snap()];
        const t0 = performance.now();
        while (performance.now() - t0 < quietMs) {
          await sleep(100);
          samples.push(await snap());
        }
        return samples;
      };
      const listRequest = modernRequest("tools/call", { name: redisTool, arguments: {} });
      const getRequest = modernRequest("tasks/get", { taskId }, { capabilities: { extensions: { [TASKS]: {} } } });
      const getOk = (res) =>
        res.status === 200 && res.text.includes('"status":"working"')
          ? true
          : `tasks/get answered ${res.status}: ${res.text.slice(0, 300)}`;
      const measure = async (request, check) => {
        const a = await snap();
        await burst({
          clients: 8,
          total: redisCalls,
          call: async () => check(await loaded.post(request.headers, request.body)),
        });
        const b = await snap();
        return {
          ms: b.at - a.at,
          redis: between(a, b, "redis", 1, infoCost),
          replicas: between(a, b, "replicas", 0, infoCost),
        };
      };
      await burst({
        clients: 8,
        total: 50,
        call: async () => callOk(await loaded.post(listRequest.headers, listRequest.body)),
      });
      const quiet1 = await quiet();
      const list = await measure(listRequest, callOk);
      const poll = await measure(getRequest, getOk);
      const quiet2 = await quiet();
      const per = (d, key) => {
        const bg = background([quiet1, quiet2], d.ms, key, infoCost);
        if (!bg || d[key] === undefined) return undefined;
        return {
          raw: d[key],
          background: bg.mean,
          perCall: (d[key] - bg.mean) / redisCalls,
          // The background of windows as long as this measure varied by this much (bursts).
          uncertainty: (bg.max - bg.min) / 2 / redisCalls,
        };
      };
      const rate = (samples, key) => {
        const c = between(samples[0], samples.at(-1), key, samples.length - 1, infoCost);
        return c === undefined ? undefined : (c / (samples.at(-1).at - samples[0].at)) * 1000;
      };
      result.redis = {
        calls: redisCalls,
        tool: redisTool,
        infoCost,
        quiet: [quiet1, quiet2].map((q) => ({
          ms: q.at(-1).at - q[0].at,
          commandsPerSecond: rate(q, "redis"),
          replicaRoundTripsPerSecond: rate(q, "replicas"),
        })),
        toolCall: { ms: list.ms, commands: per(list, "redis"), replicaRoundTrips: per(list, "replicas") },
        poll: { ms: poll.ms, commands: per(poll, "redis"), replicaRoundTrips: per(poll, "replicas") },
      };
      log(
        `hosted: Redis commands per ${redisTool}: ${result.redis.toolCall.commands.perCall.toFixed(3)}, ` +
          `per tasks/get: ${result.redis.poll.commands.perCall.toFixed(3)}`,
      );
    } finally {
      counter.close();
      await closeEndpoint(loaded);
    }

    // 3. tasks/get latency: 3 replicas + Redis through nginx vs one replica with state in process.
    log(
      `hosted: ${gets} sequential tasks/get per path: nginx + 3 replicas + Redis, one of those replicas directly, ` +
        "one replica without Redis...",
    );
    const peer = await cluster({ replicas: 1, nginx: false, state: false }, log);
    clusters.add(peer);
    const peerEp = endpointFor(peer.url, 1);
    const replicaEp = endpointFor(three.replicas[0].url, 1);
    const peerTask = await longTask(peerEp, "booking-app");
    await sleep(500);
    const paths = [
      { id: "nginx", ep: seq, taskId, samples: [] },
      { id: "replica", ep: replicaEp, taskId, samples: [] },
      { id: "inProcess", ep: peerEp, taskId: peerTask, samples: [] },
    ];
    for (const p of paths) for (let i = 0; i < 200; i++) await timedGet(p.ep, p.taskId); // warm-up
    const block = 50;
    for (let done = 0; done < gets; done += block) {
      for (const p of paths) for (let i = 0; i < block; i++) p.samples.push(await timedGet(p.ep, p.taskId));
    }
    const stats = Object.fromEntries(
      paths.map((p) => {
        const s = summarize(p.samples);
        return [p.id, { n: s.n, median: s.median, p99: s.p99, max: s.max, mean: s.mean }];
      }),
    );
    result.taskPoll = {
      gets,
      ...stats,
      ratioMedian: stats.nginx.median / stats.inProcess.median,
      ratioP99: stats.nginx.p99 / stats.inProcess.p99,
    };
    log(
      `hosted: tasks/get p50 ${stats.nginx.median.toFixed(2)} ms (nginx, 3 replicas) ` +
        `vs ${stats.inProcess.median.toFixed(2)} ms (in process)`,
    );

    const r = result.redis;
    const within = (m, goal) => m.perCall <= goal + Math.max(0.02, m.uncertainty);
    result.goals = {
      redisTool: {
        text: `Redis commands per ${redisTool} (no shared state): 0`,
        value: r.toolCall.commands.perCall,
        met: within(r.toolCall.commands, 0),
      },
      redisPoll: {
        text: "Redis commands per tasks/get: <= 2",
        value: r.poll.commands.perCall,
        met: within(r.poll.commands, 2),
      },
    };
    return result;
  } finally {
    await Promise.all([...open].map((ep) => ep.close().catch(() => undefined)));
    await Promise.all([...clusters].map((c) => c.stop().catch(() => undefined)));
  }
}
