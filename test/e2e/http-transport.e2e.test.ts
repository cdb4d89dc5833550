import { request } from "node:http";
import { LOG_LEVEL_META_KEY, type Client, type StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ALL_TOOLSETS } from "../../src/config.js";
import type { Sandbox } from "../../src/sandbox/index.js";
import {
  connectHttp,
  MODERN,
  ok,
  sandboxEnv,
  sleep,
  spawnHttpServer,
  testSandbox,
  until,
  type HttpServerProcess,
} from "../harness.js";

const INIT = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
};
const MCP_HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };

/** The per-request envelope of a 2026-07-28 request. */
const ENVELOPE = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1" },
  "io.modelcontextprotocol/clientCapabilities": {},
};
/** A 2026-07-28 request, body and headers. */
const modernRequest = (method: string, id = 1) => ({
  body: { jsonrpc: "2.0", id, method, params: { _meta: ENVELOPE } },
  headers: { ...MCP_HEADERS, "mcp-protocol-version": "2026-07-28", "mcp-method": method },
});
/** The request a client of the suite's era opens with: 2025 initialize, 2026-07-28 server/discover. */
const OPEN = MODERN ? modernRequest("server/discover") : { body: INIT, headers: MCP_HEADERS };

/** POSTs with node:http (a body fetch would refuse to finish uploading): the status, or the socket error. */
function postRaw(url: string, body: Buffer, headers: Record<string, string>): Promise<number | string> {
  const u = new URL(url);
  return new Promise((resolve) => {
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname,
        method: "POST",
        headers: { ...headers, "content-length": String(body.length) },
      },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on("error", (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    req.end(body);
  });
}

const healthz = async (url: string) =>
  (await (await fetch(url.replace(/\/mcp$/, "/healthz"))).json()) as { sessions: number; replica: string };

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
    // The harness starts every toolset.
    expect(body).toMatchObject({ status: "ok", toolsets: ALL_TOOLSETS.map((t) => t.id), readOnly: false });
  });

  it("serves tools to an SDK client over HTTP (2025: in a session; 2026-07-28: statelessly)", async () => {
    const before = (await healthz(server.url)).sessions;
    const client = await connectHttp(server.url);
    const account = await ok<{ credits: number }>(client, "build_get_account");
    expect(account.credits).toBe(sandbox.build.balance().credits);
    const sessionId = (client.transport as StreamableHTTPClientTransport).sessionId;
    if (MODERN) {
      expect(client.getProtocolEra()).toBe("modern");
      expect(sessionId).toBeUndefined();
      expect((await healthz(server.url)).sessions).toBe(before);
    } else {
      expect(client.getProtocolEra()).toBe("legacy");
      // The replica's id (MCP_REPLICA_ID, here a random one) leads, so a balancer can route it back.
      const health = await healthz(server.url);
      expect(sessionId).toMatch(new RegExp(`^${health.replica}\\.[0-9a-f-]{36}$`));
      expect(health.sessions).toBe(before + 1);
    }
    await client.close();
  });

  it("requires the bearer token when MCP_HTTP_TOKEN is set", async () => {
    const denied = await fetch(secured.url, { method: "POST", headers: OPEN.headers, body: JSON.stringify(OPEN.body) });
    expect(denied.status).toBe(401);
    expect(denied.headers.get("www-authenticate")).toMatch(/Bearer/);
    const wrong = await fetch(secured.url, {
      method: "POST",
      headers: { ...OPEN.headers, authorization: "Bearer nope" },
      body: JSON.stringify(OPEN.body),
    });
    expect(wrong.status).toBe(401);
    const client = await connectHttp(secured.url, { authorization: `Bearer ${TOKEN}` });
    expect((await client.listTools()).tools.length).toBeGreaterThan(20);
    await client.close();
  });

  it("refuses origins outside the allow-list with 403 and accepts listed ones", async () => {
    const post = (url: string, headers: Record<string, string>) =>
      fetch(url, { method: "POST", headers: { ...OPEN.headers, ...headers }, body: JSON.stringify(OPEN.body) });
    const evil = await post(server.url, { origin: "https://evil.example" });
    expect(evil.status).toBe(403);
    // The default allow-list: loopback origins, IPv6 included, on any port.
    for (const origin of ["http://localhost:5173", "http://127.0.0.1:8080", "http://[::1]:5173", "http://[::1]"]) {
      const local = await post(server.url, { origin });
      expect(local.status, origin).toBe(200);
    }
    const notLoopback = await post(server.url, { origin: "http://[::2]:5173" });
    expect(notLoopback.status).toBe(403);
    const listed = await post(secured.url, { origin: "https://app.example.com", authorization: `Bearer ${TOKEN}` });
    expect(listed.status).toBe(200);
    const loopbackNotListed = await post(secured.url, {
      origin: "http://localhost:5173",
      authorization: `Bearer ${TOKEN}`,
    });
    expect(loopbackNotListed.status).toBe(403);
  });

  it("rejects a forged Host header (DNS rebinding)", async () => {
    const url = new URL(server.url);
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(
        {
          host: url.hostname,
          port: url.port,
          path: "/mcp",
          method: "POST",
          headers: { ...OPEN.headers, host: "attacker.example:80" },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on("error", reject);
      req.end(JSON.stringify(OPEN.body));
    });
    expect(status).toBe(403);
  });

  it("answers malformed requests with JSON-RPC errors", async () => {
    const garbage = await fetch(server.url, { method: "POST", headers: OPEN.headers, body: "{not json" });
    expect(garbage.status).toBe(400);
    expect(((await garbage.json()) as { error: { code: number } }).error.code).toBe(-32700);
    const emptyBatch = await fetch(server.url, { method: "POST", headers: OPEN.headers, body: "[]" });
    expect(emptyBatch.status).toBe(400);
    expect(((await emptyBatch.json()) as { error: { code: number } }).error.code).toBe(-32600);
    const unknown = await fetch(server.url, {
      method: "POST",
      headers: { ...MCP_HEADERS, "mcp-session-id": "no-such-session" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 3, method: "tools/list" }),
    });
    expect(unknown.status).toBe(404);
    // The body limit is 20 MiB (a launch with a 12 MB attachment is ~16 MB of base64); past it, 413.
    const huge = await postRaw(
      server.url,
      Buffer.from(JSON.stringify({ ...OPEN.body, params: { ...OPEN.body.params, pad: "x".repeat(21 * 1024 * 1024) } })),
      OPEN.headers,
    );
    expect(huge).toBe(413);
  });

  if (MODERN) {
    it("serves a 2026-07-28 request without a session: no Mcp-Session-Id, no initialize", async () => {
      const { body, headers } = modernRequest("tools/list", 2);
      const res = await fetch(server.url, { method: "POST", headers, body: JSON.stringify(body) });
      expect(res.status).toBe(200);
      expect(res.headers.get("mcp-session-id")).toBeNull();
      const answer = (await res.json()) as { id: number; result: { tools: unknown[] } };
      expect(answer.id).toBe(2);
      expect(answer.result.tools.length).toBeGreaterThan(20);
      // The envelope names 2026-07-28, so the header must too.
      const { "mcp-protocol-version": _dropped, ...withoutVersion } = headers;
      const mismatch = await fetch(server.url, { method: "POST", headers: withoutVersion, body: JSON.stringify(body) });
      expect(mismatch.status).toBe(400);
    });
  } else {
    it("answers a 2025 request without a session, other than initialize, with 400", async () => {
      const noSession = await fetch(server.url, {
        method: "POST",
        headers: MCP_HEADERS,
        body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" }),
      });
      expect(noSession.status).toBe(400);
    });
  }

  it("sends an MCP log line only to the client whose request caused it", async () => {
    const listen = (client: Client) => {
      const lines: string[] = [];
      client.setNotificationHandler(
        "notifications/message",
        (n) => void lines.push(String((n.params.data as { message?: string })?.message)),
      );
      return lines;
    };
    const [a, b] = await Promise.all([connectHttp(server.url), connectHttp(server.url)]);
    try {
      const [gotA, gotB] = [listen(a), listen(b)];
      // 2025: each session sets its level; 2026-07-28: the level travels with each request.
      if (!MODERN) await Promise.all([a.setLoggingLevel("debug"), b.setLoggingLevel("debug")]);
      const debugCall = (client: Client) =>
        client.callTool({
          name: "build_get_account",
          arguments: {},
          ...(MODERN ? { _meta: { [LOG_LEVEL_META_KEY]: "debug" as const } } : {}),
        });
      await debugCall(a);
      await sleep(150);
      expect(gotA).toContain("tool call");
      expect(gotB).toEqual([]);
      gotA.length = 0;
      await debugCall(b);
      await sleep(150);
      expect(gotB).toContain("tool call");
      expect(gotA).toEqual([]);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
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

  if (MODERN) {
    it("serves 2026-07-28 requests statelessly: no session to cap or expire", async () => {
      const server = await spawnHttpServer(sandboxEnv(sandbox, { MCP_MAX_SESSIONS: "2", MCP_SESSION_IDLE_MS: "300" }));
      try {
        const answers = await Promise.all(
          [1, 2, 3, 4].map(async (id) => {
            const { body, headers } = modernRequest("tools/list", id);
            const res = await fetch(server.url, { method: "POST", headers, body: JSON.stringify(body) });
            return {
              status: res.status,
              session: res.headers.get("mcp-session-id"),
              answer: (await res.json()) as { result?: { tools: unknown[] } },
            };
          }),
        );
        for (const a of answers) {
          expect(a.status).toBe(200);
          expect(a.session).toBeNull();
          expect(a.answer.result?.tools.length).toBeGreaterThan(0);
        }
        const clients = await Promise.all([1, 2, 3].map(() => connectHttp(server.url)));
        for (const c of clients) expect((await c.listTools()).tools.length).toBeGreaterThan(0);
        expect((await healthz(server.url)).sessions).toBe(0);
        await new Promise((r) => setTimeout(r, 1000)); // longer than the idle time: nothing to expire
        for (const c of clients) expect((await c.listTools()).tools.length).toBeGreaterThan(0);
        await Promise.all(clients.map((c) => c.close()));
      } finally {
        await server.stop();
      }
    });
  } else {
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
      expect(((await third.json()) as { error: { message: string } }).error.message).toMatch(
        /Too many open sessions \(2\)/,
      );
      // Idle for longer than 300 ms: both expire (when the sweep runs, later under load).
      await until(
        async () => (await healthz(server.url)).sessions,
        (n) => n === 0,
      );
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
  }

  it("keeps a long call past the idle time (2025: its session lives on); SIGTERM cancels in-flight waits", async () => {
    const server = await spawnHttpServer(
      // 1.5 s: the handshake's initialize and initialized notification (nothing keeps the session
      // alive between them) came more than 200 ms apart at load 15, and the session was gone.
      sandboxEnv(sandbox, { MCP_SESSION_IDLE_MS: "1500", BUILD_POLL_INTERVAL_MS: "50" }),
    );
    const client = await connectHttp(server.url);
    await ok(client, "build_start_agent", { projectId: "booking-app", prompt: "Very long [minutes=100000]" });
    let progress = 0;
    const pending = client
      .callTool(
        { name: "build_wait", arguments: { projectId: "booking-app", until: "agent" } },
        { onprogress: () => progress++, timeout: 60_000 },
      )
      .catch((e: Error) => e);
    await new Promise((r) => setTimeout(r, 4000)); // well past the idle time: the busy session must live on
    const seen = progress;
    await until(
      async () => progress,
      (n) => n > seen,
    );
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
    await expect(spawnHttpServer({ PATH: process.env.PATH ?? "" }, ["--host", "0.0.0.0"])).rejects.toThrow(
      /without MCP_HTTP_TOKEN/,
    );
  });
});
