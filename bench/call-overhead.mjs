// Goal 3: call overhead. The same upstream GET three ways, against the same sandbox of this
// process: directly with undici, through switchboard-mcp (drones_get_drone over stdio), and through
// the generic OpenAPI bridge (its get-drone tool over stdio). Sequential calls, interleaved in
// blocks so that every path sees the same machine load.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { Pool } from "undici";
import { join } from "node:path";
import { CLI, NODE, ROOT, bridge, bridgeEnv, sandboxEnv, summarize } from "./lib.mjs";

/** An SDK client over stdio to `node ...args`, and the child's pid (for its CPU time). */
export async function stdioClient(args, env) {
  const transport = new StdioClientTransport({ command: NODE, args, env, stderr: "ignore" });
  const client = new Client({ name: "switchboard-bench", version: "1.0.0" });
  await client.connect(transport);
  return { client, pid: transport.pid };
}

/** What bench/two-hop-server.mjs needs to GET a drone from the sandbox. */
export function twoHopEnv(sandbox) {
  const url = new URL(sandbox.urls.drones);
  return {
    PATH: process.env.PATH ?? "",
    UPSTREAM_ORIGIN: url.origin,
    UPSTREAM_PREFIX: url.pathname.replace(/\/+$/, ""),
    UPSTREAM_KEY: sandbox.keys.drones,
  };
}

export async function callOverhead({ sandbox, calls = 2000, block = 100, warmup = 200, log }) {
  const origin = new URL(sandbox.urls.drones).origin;
  const prefix = new URL(sandbox.urls.drones).pathname.replace(/\/+$/, "");
  const auth = { authorization: `Bearer ${sandbox.keys.drones}`, accept: "application/json" };
  const pool = new Pool(origin, { connections: 4 });
  const list = await pool.request({ path: `${prefix}/api/drones`, method: "GET", headers: auth });
  const droneId = (await list.body.json()).data[0]._id;

  const { client: switchboard } = await stdioClient([CLI], sandboxEnv(sandbox));
  const br = bridge();
  const { client: bridgeClient } = await stdioClient([br.path], bridgeEnv(sandbox, "drones"));
  const bridgeTool = (await bridgeClient.listTools()).tools.find(
    (t) => t.name === "get-drone" || /^get.?drone$/i.test(t.name),
  )?.name;
  if (!bridgeTool) throw new Error("the bridge exposes no get-drone tool");

  // The MCP floor: a round trip to a tool that does nothing, on the same SDK, over stdio.
  const { client: minimal } = await stdioClient([join(ROOT, "bench/minimal-server.mjs")], {
    PATH: process.env.PATH ?? "",
  });

  const { client: twohop } = await stdioClient([join(ROOT, "bench/two-hop-server.mjs")], twoHopEnv(sandbox));
  const errors = { direct: 0, mcpFloor: 0, twohop: 0, switchboard: 0, bridge: 0 };
  const paths = {
    direct: async () => {
      const res = await pool.request({
        path: `${prefix}/api/drones/${encodeURIComponent(droneId)}`,
        method: "GET",
        headers: auth,
      });
      const body = await res.body.json();
      if (res.statusCode !== 200 || !body.ok) errors.direct++;
    },
    mcpFloor: async () => {
      const r = await minimal.callTool({ name: "echo", arguments: { text: droneId } });
      if (r.isError) errors.mcpFloor++;
    },
    twohop: async () => {
      const r = await twohop.callTool({ name: "get", arguments: { id: droneId } });
      if (r.isError) errors.twohop++;
    },
    switchboard: async () => {
      const r = await switchboard.callTool({ name: "drones_get_drone", arguments: { id: droneId } });
      if (r.isError) errors.switchboard++;
    },
    bridge: async () => {
      const r = await bridgeClient.callTool({ name: bridgeTool, arguments: { id: droneId } });
      if (r.isError) errors.bridge++;
    },
  };
  const samples = Object.fromEntries(Object.keys(paths).map((k) => [k, []]));
  for (const fn of Object.values(paths)) for (let i = 0; i < warmup; i++) await fn();
  for (const k of Object.keys(errors)) errors[k] = 0;

  const ids = Object.keys(paths);
  for (let b = 0; b < calls / block; b++) {
    const order = b % 2 ? [...ids].reverse() : ids;
    for (const id of order) {
      const fn = paths[id];
      const out = samples[id];
      for (let i = 0; i < block; i++) {
        const t0 = performance.now();
        await fn();
        out.push(performance.now() - t0);
      }
    }
    if ((b + 1) % 5 === 0) log(`call overhead: ${(b + 1) * block}/${calls} calls per path`);
  }
  await switchboard.close();
  await minimal.close();
  await bridgeClient.close();
  await pool.close();

  const stats = Object.fromEntries(ids.map((id) => [id, summarize(samples[id])]));
  const added = {
    switchboard: {
      median: stats.switchboard.median - stats.direct.median,
      p99: stats.switchboard.p99 - stats.direct.p99,
    },
    bridge: { median: stats.bridge.median - stats.direct.median, p99: stats.bridge.p99 - stats.direct.p99 },
  };
  return {
    calls,
    droneId,
    bridgeTool,
    stats,
    added,
    errors,
    goal: {
      text: "switchboard median added latency over direct < 0.25 ms and below the bridge's",
      met: added.switchboard.median < 0.25 && added.switchboard.median < added.bridge.median,
      underQuarterMs: added.switchboard.median < 0.25,
      belowBridge: added.switchboard.median < added.bridge.median,
    },
  };
}
