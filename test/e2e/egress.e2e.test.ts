// Secrets driven in from the upstream side: an upstream that echoes the caller's own key back must
// never get it past the server, whatever way out the answer takes (tool results, resource reads and
// lists, errors cut into snippets, MCP log lines, stderr), however many caller secrets came before.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Sandbox } from "../../src/sandbox/index.js";
import { call, connectStdio, ok, sandboxEnv, testSandbox, text, type StdioConnection } from "../harness.js";

const API = "/api/v1/vcaas";
const KEY = "tlm_sk_canary_upstream_echo_0123456789abcdef";

describe("one way out: keys echoed by the upstream", () => {
  let sandbox: Sandbox;
  let conn: StdioConnection;
  const seen: string[] = [];

  beforeAll(async () => {
    sandbox = await testSandbox({ keys: { build: KEY } });
    conn = await connectStdio(sandboxEnv(sandbox, { LOG_LEVEL: "debug" }));
    conn.client.setNotificationHandler("notifications/message", (n) => void seen.push(JSON.stringify(n.params)));
  });
  afterAll(async () => {
    await conn?.close();
    await sandbox?.close();
  });

  const echo = (path: string | RegExp, data: unknown, times = 1) =>
    sandbox.build.router.injectFault({
      method: "GET",
      path,
      times,
      action: { kind: "respond", response: { status: 200, body: { errors: null, data } } },
    });

  function expectClean(value: unknown): void {
    const wire = JSON.stringify(value);
    expect(wire).not.toContain(KEY);
    // Not even a piece of it: the first 24 characters leaked when the cut came before the scrub.
    expect(wire).not.toContain(KEY.slice(0, 24));
  }

  it("resource reads and lists", async () => {
    echo(`${API}/projects/echo-project`, { projectId: "echo-project", description: `my key is ${KEY}` });
    expectClean(await conn.client.readResource({ uri: "build://projects/echo-project" }));
    echo(`${API}/projects`, [{ projectId: "echo-project", label: KEY, description: `key ${KEY}` }]);
    expectClean(await conn.client.listResources());
    echo(`${API}/account`, { credits: 1, note: KEY });
    expectClean(await conn.client.readResource({ uri: "build://account" }));
  });

  it("an HTML error page that carries the key across the snippet's cut", async () => {
    const page = `<html><body>${"x".repeat(150)}${KEY} gateway</body></html>`;
    sandbox.build.router.injectFault({
      method: "GET",
      path: `${API}/account`,
      times: 3,
      action: { kind: "respond", response: { status: 502, raw: page, headers: { "content-type": "text/html" } } },
    });
    const r = await call(conn.client, "build_get_account");
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(/HTTP 502/);
    expectClean(r);
  });

  it("the configured key is still scrubbed after a caller set 1,000 secrets of its own", async () => {
    for (let i = 0; i < 1001; i++) {
      await ok(conn.client, "build_set_secret", {
        projectId: "acme-storefront",
        secretName: `S_${i}`,
        secretValue: `caller-secret-value-${i}-${"z".repeat(8)}`,
      });
    }
    echo(`${API}/projects/acme-storefront`, { projectId: "acme-storefront", description: KEY });
    expectClean(await call(conn.client, "build_get_project", { projectId: "acme-storefront" }));
    // 1,001 calls one after another: 12 s alone, past the default 30 s with two suites at once.
  }, 90_000);

  it("a protocol error: a resources/read 404 whose message echoes the key comes back scrubbed", async () => {
    const droneKey = sandbox.keys.drones;
    const missing = {
      status: 404,
      body: { ok: false, error: { code: "NOT_FOUND", message: `no drone for key ${droneKey}` } },
    };
    sandbox.drones.router.injectFault({
      method: "GET",
      path: /missing-drone/,
      times: 3,
      action: { kind: "respond", response: missing },
    });
    const err = (await conn.client.readResource({ uri: "drones://drones/missing-drone" }).then(
      () => undefined,
      (e: unknown) => e,
    )) as { code?: number; message?: string } | undefined;
    expect(err?.code).toBe(-32602);
    expect(err?.message).toMatch(/Resource not found: .*no drone for key \[redacted\]/);
    expect(JSON.stringify(err)).not.toContain(droneKey);
    expect(err?.message).not.toContain(droneKey);
  });

  it("nothing of it in MCP log lines or on stderr", () => {
    expectClean(seen);
    expect(conn.stderr()).not.toContain(KEY);
    expect(conn.stderr()).not.toContain(KEY.slice(0, 24));
  });
});
