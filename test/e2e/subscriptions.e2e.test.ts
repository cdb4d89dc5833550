// Resource change notifications, over stdio and Streamable HTTP, in each era's own way:
// - 2025-11-25: resources/subscribe and resources/unsubscribe, then unsolicited
//   notifications/resources/updated and notifications/resources/list_changed;
// - 2026-07-28: no resources/subscribe; the client opens a subscriptions/listen stream naming the
//   resources (resourceSubscriptions) and/or the list (resourcesListChanged), and closes it.
// Either way: updates while someone listens, none after, no upstream polling once nobody listens.
import type { Client } from "@modelcontextprotocol/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Sandbox } from "../../src/sandbox/index.js";
import {
  connectHttp,
  connectStdio,
  MODERN,
  ok,
  sandboxEnv,
  settles,
  sleep,
  spawnHttpServer,
  testSandbox,
  until,
  type HttpServerProcess,
  type StdioConnection,
} from "../harness.js";

const API = "/api/v1/vcaas";
const DETAILS = `GET ${API}/projects/:projectId`;
const INTERVAL = 100;

/** Starts following a resource; the returned function stops. */
async function follow(client: Client, uri: string): Promise<() => Promise<void>> {
  if (MODERN) {
    const subscription = await client.listen({ resourceSubscriptions: [uri] });
    expect(subscription.honoredFilter.resourceSubscriptions).toEqual([uri]);
    return async () => {
      await subscription.close();
      expect(await subscription.closed).toBe("local");
    };
  }
  await expect(client.subscribeResource({ uri })).resolves.toEqual({});
  return async () => {
    await expect(client.unsubscribeResource({ uri })).resolves.toEqual({});
  };
}

/** Starts following the resource list; the returned function stops. */
async function followList(client: Client): Promise<() => Promise<void>> {
  if (MODERN) {
    const subscription = await client.listen({ resourcesListChanged: true });
    expect(subscription.honoredFilter.resourcesListChanged).toBe(true);
    return () => subscription.close();
  }
  return async () => undefined; // 2025: list_changed is unsolicited
}

const transports = [
  [
    "stdio",
    async (sandbox: Sandbox) => {
      const conn: StdioConnection = await connectStdio(
        sandboxEnv(sandbox, { BUILD_POLL_INTERVAL_MS: String(INTERVAL) }),
      );
      return { client: conn.client, close: () => conn.close() };
    },
  ],
  [
    "Streamable HTTP",
    async (sandbox: Sandbox) => {
      const http: HttpServerProcess = await spawnHttpServer(
        sandboxEnv(sandbox, { BUILD_POLL_INTERVAL_MS: String(INTERVAL) }),
      );
      const client = await connectHttp(http.url);
      return {
        client,
        close: async () => {
          await client.close();
          await http.stop();
        },
      };
    },
  ],
] as const;

describe.each(transports)("resource change notifications over %s", (_name, connect) => {
  let sandbox: Sandbox;
  let client: Client;
  let close: () => Promise<void>;
  const hits = (key: string) => sandbox.build.router.count(key);

  beforeAll(async () => {
    sandbox = await testSandbox();
    ({ client, close } = await connect(sandbox));
  });
  afterAll(async () => {
    await close?.();
    await sandbox?.close();
  });

  it("2026-07-28 has no resources/subscribe; 2025 has no subscriptions/listen", async () => {
    if (MODERN) await expect(client.subscribeResource({ uri: "build://account" })).rejects.toThrow();
    else await expect(client.listen({ resourceSubscriptions: ["build://account"] })).rejects.toThrow(/2026-07-28/);
  });

  it("sends resources/updated while following, and nothing after stopping", async () => {
    const updates: string[] = [];
    client.setNotificationHandler("notifications/resources/updated", (n) => {
      updates.push(n.params.uri);
    });
    const uri = "build://projects/spring-campaign";
    const unfollowed = hits(DETAILS);
    const stop = await follow(client, uri);
    // The poller's first read is its baseline: a change before it would be no change (the run below
    // takes 100 ms), and under load a fixed wait for it was sometimes too short.
    const before = await until(
      async () => hits(DETAILS),
      (n) => n > unfollowed,
    );
    await ok(client, "build_start_agent", { projectId: "spring-campaign", prompt: "New hero [minutes=5]" });
    await until(
      async () => updates.length,
      (n) => n >= 1,
    );
    expect(updates.every((u) => u === uri)).toBe(true);
    expect(hits(DETAILS)).toBeGreaterThan(before); // it was polled while followed
    await ok(client, "build_wait", { projectId: "spring-campaign", until: "agent" });
    await stop();
    // What the server sent before the stop may still be on its way: over HTTP (2025) an update
    // comes on the GET stream, the unsubscribe's answer on its POST, in no fixed order; 2026-07-28
    // closes its stream with a notification. Count from when updates stop coming.
    await settles(() => updates.length, INTERVAL * 3);
    const count = updates.length;
    const detailsAfter = hits(DETAILS);
    await ok(client, "build_start_agent", { projectId: "spring-campaign", prompt: "Another [minutes=5]" });
    await sleep(INTERVAL * 5);
    expect(updates.length).toBe(count);
    expect(hits(DETAILS)).toBe(detailsAfter); // nobody follows it any more
    await ok(client, "build_wait", { projectId: "spring-campaign", until: "agent" });
  });

  it("accepts following a resource that never changes on its own, without polling for it", async () => {
    const before = sandbox.build.router.count();
    const stop = await follow(client, "build://credit-costs");
    await sleep(INTERVAL * 3);
    expect(sandbox.build.router.count()).toBe(before);
    await stop();
  });

  it("announces list_changed after a create", async () => {
    let changes = 0;
    client.setNotificationHandler("notifications/resources/list_changed", () => {
      changes++;
    });
    const stop = await followList(client);
    try {
      await ok(client, "build_create_project", { projectId: "listed-later" });
      await until(
        async () => changes,
        (n) => n >= 1,
      );
      const { resources } = await client.listResources();
      expect(resources.map((r) => r.uri)).toContain("build://projects/listed-later");
    } finally {
      await stop();
    }
    if (MODERN) {
      // The stream is closed: the next create is announced to nobody.
      const seen = changes;
      await ok(client, "build_create_project", { projectId: "listed-unheard" });
      await sleep(300);
      expect(changes).toBe(seen);
    }
  });
});
