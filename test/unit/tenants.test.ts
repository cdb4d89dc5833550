// Tenants come and go in hosted mode: the cache closes idle ones, and nothing in the HTTP transport
// keeps a closed tenant's handler alive (a real server on loopback, real 2026-07-28 requests).
import { afterEach, describe, expect, it } from "vitest";
import { startHttpTransport, type RunningHttp } from "../../src/core/http/transport.js";
import { ChangeHub, type McpRuntime } from "../../src/core/mcp/runtime.js";
import { TenantCache } from "../../src/core/tenants.js";
import { createApp } from "../../src/server.js";
import { allServicesConfig } from "../../scripts/manifest.js";
import { rpc2026 } from "../harness.js";

class Closable {
  closed = 0;
  constructor(readonly id: string) {}
  async close(): Promise<void> {
    this.closed++;
  }
}

describe("TenantCache", () => {
  it("builds once per tenant, and past the cap closes the longest idle unpinned one", async () => {
    const cache = new TenantCache<Closable>({ idleMs: 60_000, max: 2 });
    let built = 0;
    const build = (id: string) => () => (built++, new Closable(id));
    const a = cache.get("a", build("a"));
    expect(cache.get("a", build("a"))).toBe(a);
    await new Promise((r) => setTimeout(r, 5));
    const b = cache.get("b", build("b"));
    const releaseA = cache.pin("a"); // a is older, but a task follows work with it
    cache.get("c", build("c"));
    expect(built).toBe(3);
    expect(a.closed).toBe(0);
    expect(b.closed).toBe(1);
    expect(cache.size).toBe(2);
    releaseA();
    releaseA(); // releases once
    await cache.close();
    expect(a.closed).toBe(1);
  });
});

describe("HTTP transport and closing tenants", () => {
  let running: RunningHttp | undefined;
  afterEach(async () => {
    await running?.close();
    running = undefined;
  });

  it("lets a tenant's 2026-07-28 handler go when the tenant's runtime closes, and builds a new one on its next request", async () => {
    const app = createApp({ ...allServicesConfig(), transport: "http" });
    // Each tenant: the app's runtime with its own change hub, as createApp builds them in caller mode.
    const runtimes = new Map<string, McpRuntime>();
    const tenantFor = (key: string): McpRuntime => {
      if (!runtimes.has(key)) runtimes.set(key, { ...app.runtime, changes: new ChangeHub() });
      return runtimes.get(key)!;
    };
    running = await startHttpTransport({
      host: "127.0.0.1",
      port: 0,
      allowedOrigins: [],
      logger: app.runtime.logger,
      runtime: app.runtime,
      runtimeFor: (headers) => tenantFor(String(headers["x-tenant"] ?? "none")),
      health: () => ({}),
    });
    const url = `http://127.0.0.1:${(running.server.address() as { port: number }).port}/mcp`;
    const tenantsLive = async () => ((await (await fetch(url.replace("/mcp", "/healthz"))).json()) as { tenants: number }).tenants;

    for (const key of ["one", "two", "three"]) expect((await rpc2026(url, "tools/list", {}, { headers: { "x-tenant": key } })).status).toBe(200);
    expect(await tenantsLive()).toBe(3);

    runtimes.get("two")!.changes.close(); // what closing an idle tenant does
    runtimes.delete("two");
    expect(await tenantsLive()).toBe(2);

    const again = await rpc2026(url, "tools/list", {}, { headers: { "x-tenant": "two" } });
    expect(again.status).toBe(200);
    expect(await tenantsLive()).toBe(3);
    await app.close();
  });
});
