// Tenants come and go in hosted mode: the cache closes idle ones, and nothing in the HTTP transport
// keeps a closed tenant's handler alive (a real server on loopback, real 2026-07-28 requests).
import { afterEach, describe, expect, it } from "vitest";
import { startHttpTransport, type RunningHttp } from "../../src/core/http/transport.js";
import { ChangeHub } from "../../src/core/mcp/changes.js";
import type { TenantRuntime } from "../../src/core/mcp/runtime.js";
import { TenantCache } from "../../src/core/tenancy/tenant-cache.js";
import { createApp } from "../../src/server.js";
import { loadServices } from "../../src/services/registry.js";

const services = await loadServices();
import { allServicesConfig } from "../../scripts/manifest.js";
import { request2026, rpc2026 } from "../harness.js";
import type { ServiceHost } from "../../src/core/service/service.js";

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
    const build = (id: string) => () => {
      built++;
      return new Closable(id);
    };
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

  it("at the cap closes the least recently requested tenant, not the first one built", async () => {
    const cache = new TenantCache<Closable>({ idleMs: 60_000, max: 3 });
    const [a, b, c] = ["a", "b", "c"].map((id) => cache.get(id, () => new Closable(id)));
    cache.get("a", () => new Closable("a2")); // a is used again: b is now the least recent
    cache.get("d", () => new Closable("d"));
    expect([a.closed, b.closed, c.closed]).toEqual([0, 1, 0]);
    cache.pin("c")(); // a task on c just ended: c counts as used
    cache.get("e", () => new Closable("e"));
    expect([a.closed, c.closed]).toEqual([1, 0]);
    await cache.close();
  });
});

describe("TenantCache with guests (keys no upstream accepted yet)", () => {
  it("keeps guests to one share: a new guest closes an idle guest, never an idle real tenant", async () => {
    const accepted = new Set(["real-1", "real-2"]);
    const cache = new TenantCache<Closable>({ idleMs: 60_000, max: 2, guest: (t) => !accepted.has(t.id) });
    const [r1, r2] = ["real-1", "real-2"].map((id) => cache.get(id, () => new Closable(id)));
    const guests = Array.from({ length: 20 }, (_, i) => cache.get(`made-up-${i}`, () => new Closable(`made-up-${i}`)));
    expect([r1.closed, r2.closed]).toEqual([0, 0]);
    expect(guests.slice(0, -1).every((g) => g.closed === 1)).toBe(true);
    expect(cache.size).toBe(3);
    // A guest in a request is not closed: the next guest waits beside it.
    const release = cache.pin("made-up-19");
    cache.get("made-up-20", () => new Closable("made-up-20"));
    expect(guests[19].closed).toBe(0);
    release();
    // A guest whose key an upstream accepted joins the real tenants on its next use (the cap applies there).
    accepted.add("made-up-20");
    cache.get("made-up-20", () => new Closable("again"));
    expect(r1.closed).toBe(1);
    await cache.close();
  });
});

describe("tool definitions shared by tenants", () => {
  it("a per-user app gives every tenant the same definitions, each run with its own services' deps", () => {
    const app = createApp(
      {
        ...allServicesConfig(),
        transport: "http",
        credentials: "caller",
        stateKey: "tenants-test-state-key-0123456789abcdef",
      },
      undefined,
      services,
    );
    const [one, two] = [app.runtimeFor({ build: "tlm_sk_one" }), app.runtimeFor({ build: "tlm_sk_two" })];
    expect(one).not.toBe(two);
    expect(one.definition).toBe(two.definition);
    expect(one.definition.tools).toBe(two.definition.tools);
    const account = one.definition.tools.find((t) => t.name === "build_get_account")!;
    const drone = one.definition.tools.find((t) => t.name === "drones_get_drone")!;
    const [depsOne, depsTwo] = [one.toolHost.deps(account), two.toolHost.deps(account)];
    expect(depsOne).toHaveProperty("client");
    expect(depsOne).not.toBe(depsTwo);
    // Each tool gets its own service's deps, and the same ones on every call.
    expect(one.toolHost.deps(drone)).not.toBe(depsOne);
    expect(one.toolHost.deps(account)).toBe(depsOne);
    void app.close();
  });

  it("defines resources, prompts and watchers once: two tenants share the very same objects", () => {
    const app = createApp(callerConfig(), undefined, services);
    const [one, two] = [app.runtimeFor({ build: "tlm_sk_one" }), app.runtimeFor({ build: "tlm_sk_two" })];
    expect(one.definition.resources.length).toBeGreaterThan(3);
    expect(one.definition.resources).toBe(two.definition.resources);
    expect(one.definition.prompts.length).toBeGreaterThan(0);
    expect(one.definition.prompts).toBe(two.definition.prompts);
    expect(one.watchers.map((w) => w.watch)).toEqual(two.watchers.map((w) => w.watch));
    // Each reads with its own tenant's deps of the resource's service.
    const project = one.definition.resources.find((r) => r.uri === "build://projects/{projectId}")!;
    expect(one.serviceDeps(project.service)).toHaveProperty("client");
    expect(one.serviceDeps(project.service)).not.toBe(two.serviceDeps(project.service));
    void app.close();
  });

  it("a tenant makes no service instance (client, pollers) until one is used, and only that service's", async () => {
    let instances = 0;
    let pollers = 0;
    const counted = services.map((m) => ({
      ...m,
      create: (settings: any, host: ServiceHost) => {
        instances++;
        return m.create(settings, {
          ...host,
          createPoller: ((...args: Parameters<ServiceHost["createPoller"]>) => {
            pollers++;
            return host.createPoller(...args);
          }) as ServiceHost["createPoller"],
        });
      },
    }));
    const app = createApp(callerConfig(), undefined, counted);
    // The keyless runtime the app builds at start (it asks it the task poll interval) is not counted.
    [instances, pollers] = [0, 0];
    const tenant = app.runtimeFor({ build: "tlm_sk_idle" });
    expect(tenant.definition.tools.length).toBeGreaterThan(0);
    expect(tenant.definition.resources.length).toBeGreaterThan(0);
    expect([instances, pollers]).toEqual([0, 0]);
    const account = tenant.definition.tools.find((t) => t.name === "build_get_account")!;
    expect(tenant.toolHost.deps(account)).toHaveProperty("client");
    expect(instances).toBe(1); // the build service's, not the drones' or sizing's
    expect(pollers).toBeGreaterThan(0);
    await app.close();
  });
});

function callerConfig() {
  return {
    ...allServicesConfig(),
    transport: "http" as const,
    credentials: "caller" as const,
    stateKey: "tenants-test-state-key-0123456789abcdef",
  };
}

describe("HTTP transport and closing tenants", () => {
  let running: RunningHttp | undefined;
  afterEach(async () => {
    await running?.close();
    running = undefined;
  });

  it("makes a tenant's 2026-07-28 listen handler on first listen only, drops it when the tenant closes", async () => {
    const app = createApp({ ...allServicesConfig(), transport: "http" }, undefined, services);
    // Each tenant: the app's runtime with its own change hub, as createApp builds them in caller mode.
    const runtimes = new Map<string, TenantRuntime>();
    const tenantFor = (key: string): TenantRuntime => {
      if (!runtimes.has(key)) runtimes.set(key, Object.create(app.runtime, { changes: { value: new ChangeHub() } }));
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
    const listening = async () =>
      ((await (await fetch(url.replace("/mcp", "/healthz"))).json()) as { listening: number }).listening;
    const streams: AbortController[] = [];
    /** Opens a listen stream for the tenant and returns once its answer's headers came. */
    const listen = async (key: string) => {
      const abort = new AbortController();
      streams.push(abort);
      const { headers, body } = request2026(
        "subscriptions/listen",
        { notifications: { resourcesListChanged: true } },
        { headers: { "x-tenant": key } },
      );
      const res = await fetch(url, { method: "POST", headers, body, signal: abort.signal });
      expect(res.status).toBe(200);
    };

    // Tenants that only ask (tools/list) share one handler: none is made for them.
    for (const key of ["one", "two", "three"])
      expect((await rpc2026(url, "tools/list", {}, { headers: { "x-tenant": key } })).status).toBe(200);
    expect(await listening()).toBe(0);

    for (const key of ["one", "two", "three"]) await listen(key);
    expect(await listening()).toBe(3);

    runtimes.get("two")!.changes.close(); // what closing an idle tenant does
    runtimes.delete("two");
    expect(await listening()).toBe(2);

    await listen("two");
    expect(await listening()).toBe(3);
    for (const abort of streams) abort.abort();
    await app.close();
  });
});
