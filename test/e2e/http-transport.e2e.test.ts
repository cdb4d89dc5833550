import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Sandbox } from "../../src/sandbox/index.js";
import { connectHttp, ok, sandboxEnv, spawnHttpServer, testSandbox, type HttpServerProcess } from "../harness.js";

const INIT = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
};
const MCP_HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };

describe("Streamable HTTP transport", () => {
  let sandbox: Sandbox;
  let server: HttpServerProcess;
  let secured: HttpServerProcess;
  const TOKEN = "test-http-token-7f3a9c";

  beforeAll(async () => {
    sandbox = await testSandbox();
    [server, secured] = await Promise.all([
      spawnHttpServer(sandboxEnv(sandbox)),
      spawnHttpServer(sandboxEnv(sandbox, { MCP_HTTP_TOKEN: TOKEN, MCP_ALLOWED_ORIGINS: "https://app.example.com" })),
    ]);
  });
  afterAll(async () => {
    await Promise.all([server?.stop(), secured?.stop()]);
    await sandbox?.close();
  });

  it("answers /healthz with a small JSON status", async () => {
    const res = await fetch(server.url.replace(/\/mcp$/, "/healthz"));
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ status: "ok", toolsets: ["build", "build_admin", "sizing", "drones"], readOnly: false });
  });

  it("serves tools to an SDK client over HTTP", async () => {
    const client = await connectHttp(server.url);
    const account = await ok<{ credits: number }>(client, "build_get_account");
    expect(account.credits).toBe(sandbox.build.balance().credits);
    await client.close();
  });

  it("requires the bearer token when MCP_HTTP_TOKEN is set", async () => {
    const denied = await fetch(secured.url, { method: "POST", headers: MCP_HEADERS, body: JSON.stringify(INIT) });
    expect(denied.status).toBe(401);
    expect(denied.headers.get("www-authenticate")).toMatch(/Bearer/);
    const wrong = await fetch(secured.url, { method: "POST", headers: { ...MCP_HEADERS, authorization: "Bearer nope" }, body: JSON.stringify(INIT) });
    expect(wrong.status).toBe(401);
    const client = await connectHttp(secured.url, { authorization: `Bearer ${TOKEN}` });
    expect((await client.listTools()).tools.length).toBeGreaterThan(20);
    await client.close();
  });

  it("refuses origins outside the allow-list with 403 and accepts listed ones", async () => {
    const evil = await fetch(server.url, { method: "POST", headers: { ...MCP_HEADERS, origin: "https://evil.example" }, body: JSON.stringify(INIT) });
    expect(evil.status).toBe(403);
    const local = await fetch(server.url, { method: "POST", headers: { ...MCP_HEADERS, origin: "http://localhost:5173" }, body: JSON.stringify(INIT) });
    expect(local.status).toBe(200);
    const listed = await fetch(secured.url, {
      method: "POST",
      headers: { ...MCP_HEADERS, origin: "https://app.example.com", authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify(INIT),
    });
    expect(listed.status).toBe(200);
    const loopbackNotListed = await fetch(secured.url, {
      method: "POST",
      headers: { ...MCP_HEADERS, origin: "http://localhost:5173", authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify(INIT),
    });
    expect(loopbackNotListed.status).toBe(403);
  });

  it("rejects a forged Host header (DNS rebinding)", async () => {
    const { request } = await import("node:http");
    const url = new URL(server.url);
    const status = await new Promise<number>((resolve, reject) => {
      const req = request({ host: url.hostname, port: url.port, path: "/mcp", method: "POST", headers: { ...MCP_HEADERS, host: "attacker.example:80" } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on("error", reject);
      req.end(JSON.stringify(INIT));
    });
    expect(status).toBe(403);
  });

  it("answers malformed requests with JSON-RPC errors", async () => {
    const garbage = await fetch(server.url, { method: "POST", headers: MCP_HEADERS, body: "{not json" });
    expect(garbage.status).toBe(400);
    expect(((await garbage.json()) as { error: { code: number } }).error.code).toBe(-32700);
    const noSession = await fetch(server.url, { method: "POST", headers: MCP_HEADERS, body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" }) });
    expect(noSession.status).toBe(400);
    const unknown = await fetch(server.url, {
      method: "POST",
      headers: { ...MCP_HEADERS, "mcp-session-id": "no-such-session" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 3, method: "tools/list" }),
    });
    expect(unknown.status).toBe(404);
    const huge = await fetch(server.url, { method: "POST", headers: MCP_HEADERS, body: JSON.stringify({ ...INIT, pad: "x".repeat(2 * 1024 * 1024) }) });
    expect(huge.status).toBe(413);
  });

  it("shuts down gracefully on SIGTERM", async () => {
    const extra = await spawnHttpServer(sandboxEnv(sandbox));
    const client = await connectHttp(extra.url);
    await ok(client, "drones_list_drones", { limit: 1 });
    const code = await extra.stop("SIGTERM");
    expect(code).toBe(0);
    expect(extra.stderr()).toMatch(/SIGTERM, shutting down/);
    expect(extra.stderr()).not.toContain("[stdout]");
  });
});

describe("HTTP session limits and shutdown", () => {
  let sandbox: Sandbox;
  beforeAll(async () => {
    sandbox = await testSandbox();
  });
  afterAll(async () => sandbox?.close());

  it("caps open sessions and expires idle ones", async () => {
    const server = await spawnHttpServer(sandboxEnv(sandbox, { MCP_MAX_SESSIONS: "2", MCP_SESSION_IDLE_MS: "300" }));
    // Raw sessions: initialize only, no standing GET stream (an open stream keeps a session alive).
    const open = async () => {
      const res = await fetch(server.url, { method: "POST", headers: MCP_HEADERS, body: JSON.stringify(INIT) });
      await res.text();
      return res.headers.get("mcp-session-id")!;
    };
    const a = await open();
    await open();
    const third = await fetch(server.url, { method: "POST", headers: MCP_HEADERS, body: JSON.stringify(INIT) });
    expect(third.status).toBe(503);
    expect(((await third.json()) as { error: { message: string } }).error.message).toMatch(/Too many open sessions \(2\)/);
    await new Promise((r) => setTimeout(r, 1000)); // idle for longer than 300 ms: both expire
    const health = (await (await fetch(server.url.replace(/\/mcp$/, "/healthz"))).json()) as { sessions: number };
    expect(health.sessions).toBe(0);
    const expired = await fetch(server.url, {
      method: "POST",
      headers: { ...MCP_HEADERS, "mcp-session-id": a, "mcp-protocol-version": "2025-06-18" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/list" }),
    });
    expect(expired.status).toBe(404);
    const fresh = await connectHttp(server.url);
    expect((await fresh.listTools()).tools.length).toBeGreaterThan(0);
    await fresh.close();
    await server.stop();
  });

  it("keeps a session with a long call in flight, and SIGTERM cancels in-flight waits", async () => {
    const server = await spawnHttpServer(sandboxEnv(sandbox, { MCP_SESSION_IDLE_MS: "200", BUILD_POLL_INTERVAL_MS: "50" }));
    const client = await connectHttp(server.url);
    await ok(client, "build_start_agent", { projectId: "booking-app", prompt: "Very long [minutes=100000]" });
    let progress = 0;
    const pending = client
      .callTool({ name: "build_wait", arguments: { projectId: "booking-app", until: "agent" } }, undefined, { onprogress: () => progress++, timeout: 60_000 })
      .catch((e: Error) => e);
    await new Promise((r) => setTimeout(r, 800)); // well past the idle time: the busy session must live on
    const seen = progress;
    await new Promise((r) => setTimeout(r, 400));
    expect(progress).toBeGreaterThan(seen);
    const key = "GET /api/v1/vcaas/projects/:projectId/agent/status";
    const started = Date.now();
    expect(await server.stop("SIGTERM")).toBe(0);
    expect(Date.now() - started).toBeLessThan(3000);
    await client.close(); // the SDK client would otherwise try to resume the stream
    expect(await pending).toBeInstanceOf(Error);
    const after = sandbox.build.router.count(key);
    await new Promise((r) => setTimeout(r, 300));
    expect(sandbox.build.router.count(key)).toBe(after);
  });
});

describe("HTTP bind safety", () => {
  it("refuses a non-loopback host without MCP_HTTP_TOKEN", async () => {
    await expect(spawnHttpServer({ PATH: process.env.PATH ?? "" }, ["--host", "0.0.0.0"])).rejects.toThrow(/without MCP_HTTP_TOKEN/);
  });
});
