// The server card over real HTTP (a spawned server against the sandbox): at <endpoint>/server-card,
// without credentials, with its media type, CORS and an ETag honoured by If-None-Match, valid
// against the extension's schema, and saying what the live server/discover answer says.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Sandbox } from "../../../src/sandbox/index.js";
import { rpc2026, sandboxEnv, spawnHttpServer, testSandbox, type HttpServerProcess } from "../../harness.js";
import { cardProblems } from "../../server-card.js";

describe("the server card (SEP-2127) over HTTP", () => {
  let sandbox: Sandbox;
  let http: HttpServerProcess;
  const token = "server-card-test-token-0123456789abcdef";

  beforeAll(async () => {
    sandbox = await testSandbox();
    http = await spawnHttpServer(sandboxEnv(sandbox, { MCP_HTTP_TOKEN: token }));
  }, 60_000);
  afterAll(async () => {
    await http?.stop();
    await sandbox?.close();
  });

  it("is served without the token, valid, and agrees with server/discover", async () => {
    const res = await fetch(`${http.url}/server-card`, {
      headers: { accept: "application/mcp-server-card+json", origin: "https://catalog.example" },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/mcp-server-card+json");
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    expect(res.headers.get("cache-control")).toBe("public, max-age=3600");
    const card = (await res.json()) as Record<string, any>;
    expect(cardProblems(card)).toEqual([]);
    expect(card.remotes[0].url).toBe(http.url);
    expect(card.remotes[0].headers).toEqual([expect.objectContaining({ name: "Authorization", isRequired: true })]);

    const discover = await rpc2026(http.url, "server/discover", {}, { headers: { authorization: `Bearer ${token}` } });
    expect(discover.status).toBe(200);
    const result = discover.body.result as { supportedVersions: string[] };
    // The endpoint serves both eras: server/discover names the 2026-07-28 ones, initialize the rest.
    expect(card.remotes[0].supportedProtocolVersions).toEqual(expect.arrayContaining(result.supportedVersions));
    expect(card.remotes[0].supportedProtocolVersions).toContain("2025-11-25");
    const health = await fetch(new URL("/healthz", http.url), { headers: { authorization: `Bearer ${token}` } });
    expect(card.version).toBe(((await health.json()) as { version: string }).version);

    const etag = res.headers.get("etag")!;
    expect(etag).toMatch(/^".+"$/);
    const again = await fetch(`${http.url}/server-card`, { headers: { "if-none-match": etag } });
    expect(again.status).toBe(304);
    expect((await fetch(`${http.url}/server-card`, { method: "POST" })).status).toBe(405);
  });
});
