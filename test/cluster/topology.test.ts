import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { processAlive, renderReplicaBlock, templateReplicaBlock } from "../../scripts/cluster.mjs";
import { call, connectHttp, newClient, ok, request2026, sleep, text, until } from "../harness.js";
import { accessLines, describeCluster, replicaPrefix, startTestCluster, type TestCluster } from "./harness.js";

describe("deploy/nginx.conf", () => {
  it("has the replicas block scripts/cluster.mjs generates, for the compose services replica1..3", () => {
    const compose = [1, 2, 3].map((i) => ({ id: `r${i}`, address: `replica${i}:3000` }));
    expect(templateReplicaBlock()).toBe(renderReplicaBlock(compose));
  });
});

describeCluster("cluster topology: 3 replicas, Redis, the sandbox and nginx as local processes", () => {
  let cluster: TestCluster | undefined;

  beforeAll(async () => {
    cluster = await startTestCluster({ replicas: 3, env: { MCP_ALLOWED_HOSTS: "mcp.example.test" } });
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  const running = () => {
    if (!cluster) throw new Error("the cluster is not running");
    return cluster;
  };

  it("runs 3 replicas, each answering /healthz, and /healthz answers through nginx", async () => {
    const c = running();
    expect(c.replicas.map((r) => r.id)).toEqual(["r1", "r2", "r3"]);
    expect(new Set(c.replicas.map((r) => r.pid)).size).toBe(3);
    for (const r of c.replicas) expect((await r.healthz()).status).toBe(200);
    const res = await fetch(`${c.baseUrl}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ status: "ok" });
    expect(await c.redis.command("PING")).toBe("PONG");
  });

  it("/readyz answers through nginx", async () => {
    const c = running();
    const res = await fetch(`${c.baseUrl}/readyz`);
    const body = await res.text();
    expect(res.status).toBe(200);
    expect(JSON.parse(body)).toMatchObject({ status: "ready" });
  });

  it("a 2026-07-28 client lists tools, calls drones_list_drones via nginx; requests spread over replicas", async () => {
    const c = running();
    const before = accessLines(c.nginxLog!()).length;
    const client = await connectHttp(c.url, {}, {}, "modern");
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toContain("drones_list_drones");
      for (let i = 0; i < 3; i++) {
        const page = await ok<{ drones: unknown[] }>(client, "drones_list_drones");
        expect(page.drones.length).toBeGreaterThan(0);
      }
    } finally {
      await client.close();
    }
    const posts = accessLines(c.nginxLog!())
      .slice(before)
      .filter((l) => l.method === "POST" && l.path === "/mcp");
    expect(posts.length).toBeGreaterThanOrEqual(4);
    expect(posts.every((l) => l.group === "switchboard_replicas" && l.status === 200)).toBe(true);
    // Stateless requests are balanced (least_conn, ties in turn): more than one replica answered.
    expect(new Set(posts.map((l) => l.upstream)).size).toBeGreaterThan(1);
  });

  it("a 2025 client initializes through nginx and its next calls reach the same replica (sticky routing)", async () => {
    const c = running();
    // The session id says which replica holds the session only once the server prefixes it with
    // MCP_REPLICA_ID ("r2.…", hosted mode, issue 13). Without the prefix nginx balances every
    // request and the session's next request lands on a replica that does not know it.
    const probe = await fetch(c.url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: {
          protocolVersion: "2025-11-25",
          capabilities: {},
          clientInfo: { name: "cluster-probe", version: "1.0.0" },
        },
      }),
    });
    await probe.arrayBuffer();
    expect(probe.status).toBe(200);
    const probeId = probe.headers.get("mcp-session-id");
    expect(probeId).toBeTruthy();
    expect(replicaPrefix(probeId)).toMatch(/^r\d$/);
    await fetch(c.url, {
      method: "DELETE",
      headers: { "mcp-session-id": probeId!, "mcp-protocol-version": "2025-11-25" },
    });

    const transport = new StreamableHTTPClientTransport(new URL(c.url));
    const client = newClient({}, "legacy");
    await client.connect(transport);
    try {
      const sessionId = transport.sessionId;
      const replica = c.replicaFor(sessionId);
      expect(
        replica,
        `session id ${sessionId} names no replica of ${c.replicas.map((r) => r.id).join(", ")}`,
      ).toBeDefined();
      await ok(client, "drones_list_drones");
      await ok(client, "drones_list_drones", { status: "active" });
      await ok(client, "drones_list_drones", { maxBattery: 50 });
      // nginx writes an access line after the response went out, so the last call's line may lag its
      // answer: read the log until notifications/initialized and the three calls are there (the SDK
      // may add a GET stream).
      const stickyLines = () => accessLines(c.nginxLog!()).filter((l) => l.group === `switchboard_${replica!.id}`);
      const sticky = await until(
        async () => stickyLines(),
        (lines) => lines.filter((l) => l.method === "POST").length >= 4,
        5_000,
      );
      expect(new Set(sticky.map((l) => l.upstream))).toEqual(new Set([`127.0.0.1:${replica!.port}`]));
    } finally {
      await client.close();
    }
  });

  it("loopback replicas answer the public name nginx passes if MCP_ALLOWED_HOSTS lists it, refuse others", async () => {
    const c = running();
    const asHost = async (host: string) => {
      const { port } = new URL(c.url);
      return new Promise<number>((resolve, reject) => {
        const req = httpRequest(
          {
            host: "127.0.0.1",
            port,
            path: "/mcp",
            method: "POST",
            headers: {
              host,
              "content-type": "application/json",
              accept: "application/json, text/event-stream",
              "mcp-protocol-version": "2026-07-28",
              "mcp-method": "tools/list",
            },
          },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on("error", reject);
        req.end(
          JSON.stringify({
            jsonrpc: "2.0",
            id: 1,
            method: "tools/list",
            params: {
              _meta: {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": { name: "t", version: "1" },
                "io.modelcontextprotocol/clientCapabilities": {},
              },
            },
          }),
        );
      });
    };
    expect(await asHost("mcp.example.test")).toBe(200);
    expect(await asHost("MCP.Example.Test:443")).toBe(200);
    expect(await asHost("attacker.example")).toBe(403);
  });

  it("a rolling restart under load, by the documented procedure, loses no request", async () => {
    const c = running();
    const nginx = c.nginx!;
    const statuses = new Map<string, number>();
    let stop = false;
    // 12 clients calling through nginx (keep-alive to the replicas) the whole time, each call on a
    // new connection to nginx: a reload closes the old workers' idle client connections, and a POST
    // a keep-alive client sends on one as it closes fails before nginx read it (docs/deployment.md,
    // "Rolling restart"): a client-side retry question, not what this test is about.
    const clients = Array.from({ length: 12 }, async () => {
      while (!stop) {
        const status = await callOnNewConnection(c.url).catch(
          (err: NodeJS.ErrnoException) => `${err.message} (${err.code ?? "no code"})`,
        );
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
      }
    });
    await sleep(500);
    // Two replicas in turn, as docs/deployment.md "Rolling restart" says: out of nginx (down, reload,
    // old workers gone), SIGTERM, wait for exit 0, start, back in. SIGTERM on a replica still in
    // rotation can lose a POST the kernel queued in its listen backlog; this way none reaches it.
    for (const replica of c.replicas.slice(0, 2)) {
      expect(await nginx.takeOut(replica.id)).toMatchObject({ oldWorkersGone: true });
      expect(nginx.config()).toMatch(new RegExp(`server 127\\.0\\.0\\.1:${replica.port} [^;]*down;`));
      const outFrom = accessLines(c.nginxLog!()).length;
      expect(await replica.kill("SIGTERM", 20_000)).toMatchObject({ code: 0 });
      await replica.start();
      // While out (old workers gone), nginx sent it nothing, and the others answered the load.
      const whileOut = accessLines(c.nginxLog!()).slice(outFrom);
      expect(whileOut.length).toBeGreaterThan(0);
      expect(whileOut.filter((l) => l.upstream.includes(`127.0.0.1:${replica.port}`))).toEqual([]);
      expect(await nginx.putBack(replica.id)).toMatchObject({ oldWorkersGone: true });
      await sleep(300);
    }
    expect(nginx.config()).not.toMatch(/ down;/);
    stop = true;
    await Promise.all(clients);
    // What nginx saw of a lost call: its status, the replica(s) tried, and why (error.log).
    const lost = [
      ...accessLines(c.nginxLog!()).filter((l) => l.status >= 500),
      ...c.nginxErrors!()
        .split("\n")
        .filter((l) => /upstream/.test(l)),
    ];
    expect(Object.fromEntries(statuses), JSON.stringify(lost)).toEqual({ "200": expect.any(Number) });
    expect(statuses.get("200")).toBeGreaterThan(200);
  });

  it("stop() leaves no process behind", async () => {
    const c = running();
    const pids = c.pids();
    // redis, the sandbox, 3 replicas, nginx's master and at least one worker
    expect(pids.length).toBeGreaterThanOrEqual(7);
    expect(pids.every(processAlive)).toBe(true);
    cluster = undefined;
    await c.stop();
    await until(
      async () => pids.filter(processAlive),
      (alive) => alive.length === 0,
      5000,
    );
  });
});

describeCluster("cluster topology: per-user keys (MCP_CREDENTIALS=caller) through nginx", () => {
  let cluster: TestCluster | undefined;

  beforeAll(async () => {
    cluster = await startTestCluster({ replicas: 2, credentials: "caller" });
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it("nginx passes X-Drones-Api-Key to replicas; a request without it is refused before an upstream call", async () => {
    const c = cluster!;
    const withKey = await connectHttp(c.url, { "X-Drones-Api-Key": c.sandbox!.keys.drones }, {}, "modern");
    const without = await connectHttp(c.url, {}, {}, "modern");
    try {
      const before = JSON.stringify(await c.sandbox!.stats());
      const refused = await call(without, "drones_list_drones");
      expect(refused.isError).toBe(true);
      expect(text(refused)).toMatch(/x-drones-api-key/i);
      expect(JSON.stringify(await c.sandbox!.stats())).toBe(before);
      for (let i = 0; i < 2; i++) {
        const page = await ok<{ drones: unknown[] }>(withKey, "drones_list_drones");
        expect(page.drones.length).toBeGreaterThan(0);
      }
    } finally {
      await withKey.close();
      await without.close();
    }
  });
});

/** A 2026 tools/call on a connection of its own (closed after the answer): its HTTP status, once answered. */
function callOnNewConnection(url: string): Promise<string> {
  const { headers, body } = request2026("tools/call", { name: "drones_list_drones", arguments: {} });
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: "POST", agent: false, headers }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        text += chunk;
      });
      res.on("end", () => resolve(/"result"/.test(text) ? String(res.statusCode) : `${res.statusCode} ${text}`));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}
