// The HTTP transport's bounds, set through the server's variables on a spawned `node dist/cli.js`
// (test/unit/http-limits.test.ts holds the detailed cases, in process): what a client on the open
// internet can make it hold, and the upstream body budget seen through a tool call.
import type { Client } from "@modelcontextprotocol/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Sandbox } from "../../../src/sandbox/index.js";
import { FAULTS } from "../../../src/sandbox/faults.js";
import {
  call,
  connectHttp,
  destroyRawSockets,
  ok,
  openRaw,
  rawStatus,
  retryStart,
  sandboxEnv,
  spawnHttpServer,
  testSandbox,
  text,
  type HttpServerProcess,
} from "../../harness.js";

const TOKEN = "hardening-token-3c9d1e";
const AUTH = { authorization: `Bearer ${TOKEN}` };

describe("HTTP bounds set by the server's variables", () => {
  let sandbox: Sandbox;
  let server: HttpServerProcess;
  let port: number;
  let client: Client | undefined;

  beforeAll(async () => {
    sandbox = await testSandbox();
    server = await retryStart(() =>
      spawnHttpServer(
        sandboxEnv(sandbox, {
          LOG_LEVEL: "info",
          MCP_HTTP_TOKEN: TOKEN,
          MCP_MAX_CONNECTIONS: "12",
          MCP_HEADERS_TIMEOUT_MS: "1000",
          MCP_UNAUTH_RATE: "1",
          MCP_BODY_BUDGET_BYTES: String(1024 * 1024),
          UPSTREAM_BODY_BUDGET_BYTES: String(16 * 1024 * 1024),
        }),
      ),
    );
    port = Number(new URL(server.url).port);
  });
  afterAll(async () => {
    destroyRawSockets();
    await client?.close();
    await server?.stop();
    await sandbox?.close();
  });

  it("MCP_MAX_CONNECTIONS, MCP_HEADERS_TIMEOUT_MS: excess sockets close at once, silent ones on timeout", async () => {
    const holders = await Promise.all(Array.from({ length: 12 }, () => openRaw(port)));
    await new Promise((r) => setTimeout(r, 200));
    const extras = await Promise.all(Array.from({ length: 5 }, () => openRaw(port)));
    await Promise.all(extras.map((e) => e.closed));
    for (const e of extras) expect(e.closedAt! - e.openedAt).toBeLessThan(500);
    expect(holders.every((h) => h.closedAt === undefined)).toBe(true);
    await Promise.all(holders.map((h) => h.closed));
    for (const h of holders) {
      expect(rawStatus(h)).toBe(408);
      expect(h.closedAt! - h.openedAt).toBeLessThan(2500);
    }
    expect(server.stderr()).toMatch(/connection cap reached.*MCP_MAX_CONNECTIONS/);
    client = await connectHttp(server.url, AUTH);
    expect((await client.listTools()).tools.length).toBeGreaterThan(10);
  });

  it("MCP_UNAUTH_RATE: tokenless requests get 401 then 429 with Retry-After, and their connection closes", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      const r = await openRaw(
        port,
        `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\n` +
          `content-length: 100\r\n\r\n{`,
      );
      await r.closed;
      expect(r.closedAt! - r.openedAt).toBeLessThan(500);
      expect(r.data()).toMatch(/connection: close/i);
      if (rawStatus(r) === 429) expect(r.data()).toMatch(/retry-after: \d+/i);
      statuses.push(rawStatus(r));
    }
    // A burst of twice the rate, then 429.
    expect(statuses).toEqual([401, 401, 429, 429]);
    expect((await client!.listTools()).tools.length).toBeGreaterThan(10);
  });

  it("MCP_BODY_BUDGET_BYTES: uploads past the budget get 503 and close; a tool call still goes through", async () => {
    const head =
      `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nauthorization: Bearer ${TOKEN}\r\n` +
      `content-type: application/json\r\naccept: application/json, text/event-stream\r\n` +
      `content-length: ${2 * 1024 * 1024}\r\n\r\n`;
    const uploads = await Promise.all(
      Array.from({ length: 3 }, () =>
        openRaw(port, Buffer.concat([Buffer.from(head), Buffer.alloc(700 * 1024, 0x20)])),
      ),
    );
    const deadline = Date.now() + 3000;
    while (uploads.filter((u) => u.closedAt !== undefined).length < 2 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    const refused = uploads.filter((u) => u.closedAt !== undefined);
    expect(refused.length).toBeGreaterThanOrEqual(2);
    for (const r of refused) {
      expect(rawStatus(r)).toBe(503);
      expect(r.data()).toContain("MCP_BODY_BUDGET_BYTES");
    }
    await ok(client!, "build_get_account");
    uploads.forEach((u) => u.socket.destroy());
  });

  it("UPSTREAM_BODY_BUDGET_BYTES: tiny objects parsing past the budget: refused once, variable named", async () => {
    const path = "/api/v1/vcaas/projects/acme-storefront";
    const before = sandbox.build.router.received.get(`GET ${path}`) ?? 0;
    // ~1 MB of {"i":7}: about 21 MB to parse, over 16 MiB (the default 64 MiB would let it through).
    sandbox.build.router.injectFault({ method: "GET", path, times: 5, action: FAULTS.tinyObjects(1_000_000) });
    try {
      const result = await call(client!, "build_get_project", { projectId: "acme-storefront" });
      const t = text(result);
      expect(result.isError, t).toBe(true);
      expect(t).toMatch(/BODY_TOO_LARGE/);
      expect(t).toMatch(/UPSTREAM_BODY_BUDGET_BYTES, 16 MiB/);
      expect(t).toMatch(/Next step: ask for less/);
      expect((sandbox.build.router.received.get(`GET ${path}`) ?? 0) - before).toBe(1);
    } finally {
      sandbox.build.router.clearFaults();
    }
    await ok(client!, "build_get_project", { projectId: "acme-storefront" });
  });
});
