// resources/list returns what the reachable services have and names what it skipped and why: a
// per-user caller with one key, or one failing service, never empties the list (issue 19). Views
// (ui://) are listed only to hosts that declare MCP Apps.
import type { Client } from "@modelcontextprotocol/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FAULTS } from "../../src/sandbox/faults.js";
import type { Sandbox } from "../../src/sandbox/index.js";
import { connectHttp, connectStdio, sandboxEnv, spawnHttpServer, testSandbox, until } from "../harness.js";
import type { HttpServerProcess, StdioConnection } from "../harness.js";

const SKIPPED = "io.github.switchboard-mcp/skipped";
const UI = { extensions: { "io.modelcontextprotocol/ui": { mimeTypes: ["text/html;profile=mcp-app"] } } };
type Skipped = Array<{ resource: string; service?: string; reason: string }>;

const schemes = (resources: Array<{ uri: string }>) =>
  [...new Set(resources.map((r) => r.uri.replace(/:\/\/([^/]*).*$/, "://$1")))].sort();

describe("one failing service empties nothing (operator keys)", () => {
  let sandbox: Sandbox;
  let plain: StdioConnection;
  let apps: StdioConnection;

  beforeAll(async () => {
    sandbox = await testSandbox();
    const withViews = { capabilities: UI as never };
    const env = sandboxEnv(sandbox);
    [plain, apps] = await Promise.all([connectStdio(env), connectStdio(env, [], withViews)]);
  });
  afterAll(async () => {
    await Promise.all([plain?.close(), apps?.close()]);
    await sandbox?.close();
  });

  it("a 503 on the missions listing: everything else is listed, the skip is named in _meta and logged", async () => {
    const action = FAULTS.htmlError(503);
    const fault = { method: "GET", path: "/api/missions", times: Number.POSITIVE_INFINITY, action };
    sandbox.drones.router.injectFault(fault);
    try {
      const listed = await plain.client.listResources();
      const build = ["build://account", "build://credit-costs", "build://projects"];
      expect(schemes(listed.resources)).toEqual([...build, "drones://alerts", "drones://drones", "sizing://catalog"]);
      const skipped = listed._meta?.[SKIPPED] as Skipped;
      expect(skipped).toHaveLength(1);
      expect(skipped[0]).toMatchObject({ service: "drones" });
      expect(skipped[0].reason).toMatch(/HTTP 503/);
      await until(
        async () => plain.stderr(),
        (e) => /"resources\/list skipped a listing".*"service":"drones"/.test(e),
      );
    } finally {
      sandbox.drones.router.clearFaults();
    }
  });

  it("views are listed only to a host that declares MCP Apps", async () => {
    const without = (await plain.client.listResources()).resources;
    expect(without.filter((r) => r.uri.startsWith("ui://"))).toEqual([]);
    const withViews = (await apps.client.listResources()).resources;
    expect(
      withViews
        .filter((r) => r.uri.startsWith("ui://"))
        .map((r) => r.uri)
        .sort(),
    ).toEqual([
      "ui://switchboard/build-console.html",
      "ui://switchboard/fit-card.html",
      "ui://switchboard/fleet-map.html",
    ]);
    // Reading one stays possible either way (a host may know the URI from elsewhere).
    const read = await plain.client.readResource({ uri: "ui://switchboard/fit-card.html" });
    expect(read.contents[0].mimeType).toBe("text/html;profile=mcp-app");
  });
});

describe("a per-user caller with one key lists that service's resources (--sandbox, SANDBOX_ACCOUNTS=2)", () => {
  let http: HttpServerProcess;
  const clients: Client[] = [];

  beforeAll(async () => {
    const env = { PATH: process.env.PATH ?? "", MCP_CREDENTIALS: "caller", SANDBOX_ACCOUNTS: "2", LOG_LEVEL: "debug" };
    http = await spawnHttpServer(env, ["--sandbox"]);
  });
  afterAll(async () => {
    await Promise.allSettled(clients.map((c) => c.close()));
    await http?.stop();
  });

  it("prints the demo keys a caller sends, the second account's too, and /healthz says sandbox", async () => {
    const keys = /for callers: X-Build-Api-Key: \S+ \(account 2: \S+\); X-Sizing-Api-Key: .*; X-Drones-Api-Key: \S+/;
    expect(http.stderr()).toMatch(keys);
    const health = await (await fetch(new URL("/healthz", http.url))).json();
    expect(health).toMatchObject({ sandbox: true, credentials: "caller" });
  });

  it("X-Build-Api-Key only (account 2): the build resources, and the skipped services name their headers", async () => {
    const account2 = /\(account 2: (\S+)\)/.exec(http.stderr())![1];
    const client = await connectHttp(http.url, { "x-build-api-key": account2 });
    clients.push(client);
    const listed = await client.listResources();
    expect(schemes(listed.resources)).toEqual(["build://account", "build://credit-costs", "build://projects"]);
    expect(listed.resources.some((r) => r.uri === "build://projects/acme-storefront")).toBe(true);
    const skipped = listed._meta?.[SKIPPED] as Skipped;
    expect(skipped.map((s) => s.service).sort()).toEqual(["drones", "drones", "drones", "sizing"]);
    expect(skipped.find((s) => s.service === "sizing")!.reason).toMatch(/x-sizing-api-key header/);
    expect(skipped.find((s) => s.service === "drones")!.reason).toMatch(/x-drones-api-key header/);
    expect(JSON.stringify(listed)).not.toContain(account2);
  });
});
