// BuildPush (services/builder/push.ts) against the build simulator over HTTP: it subscribes an
// account's two events on the first wait, leaves a webhook the account already had, and on unlink
// (ENV.credentials=linked) removes exactly the subscriptions it made.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createLogger } from "../../src/core/base/logger.js";
import { Egress } from "../../src/core/base/egress.js";
import { ByteBudget } from "../../src/core/upstream/budget.js";
import { DEFAULT_UPSTREAM_BODY_BUDGET, UpstreamClient } from "../../src/core/upstream/upstream.js";
import { WebhooksClient } from "../../src/services/builder/api/webhooks.js";
import { BuildPush } from "../../src/services/builder/push.js";
import type { Sandbox } from "../../src/sandbox/index.js";
import { testSandbox, until } from "../harness.js";

const API = "/api/v1/vcaas";
const USERS = { url: "https://hooks.example.com/users-own", event: "project.credit_limit.reached", headers: {} };

describe("BuildPush subscriptions", () => {
  let sandbox: Sandbox;
  let webhooks: WebhooksClient;
  const quiet = createLogger("error", new Egress());
  const endpoint = {
    url: "https://mcp.example.com/hooks/build/abc",
    headers: { "x-switchboard-hook-secret": "s".repeat(43) },
    listen: () => () => undefined,
    count: () => undefined,
    tell: () => undefined,
    hear: () => () => undefined,
  };
  const listed = async () => ((await webhooks.list()).webhooks ?? []).map((w) => ({ url: w.url, event: w.event }));

  beforeAll(async () => {
    sandbox = await testSandbox();
    webhooks = new WebhooksClient(
      new UpstreamClient({
        service: "build",
        baseUrl: sandbox.urls.build,
        headers: { "api-key": sandbox.keys.build },
        envelope: "errors-data",
        timeoutMs: 5000,
        logger: quiet,
        keyVariable: "BUILD_API_KEY",
        bodyBudget: new ByteBudget(DEFAULT_UPSTREAM_BODY_BUDGET),
      }),
    );
    const put = await fetch(`${sandbox.urls.build}${API}/webhooks`, {
      method: "PUT",
      headers: { "api-key": sandbox.keys.build, "content-type": "application/json" },
      body: JSON.stringify(USERS),
    });
    expect(put.status).toBe(200);
  });
  afterAll(() => sandbox?.close());

  it("subscribes what is free, keeps the account's own, and removes only its own on unlink", async () => {
    const push = new BuildPush(endpoint, () => webhooks, { normalMs: 1000, slowMs: 60_000 }, quiet);
    push.ensure();
    await until(listed, (l) => l.length === 2);
    expect(await listed()).toEqual([
      { url: USERS.url, event: USERS.event },
      { url: endpoint.url, event: "agent.prompt.finished" },
    ]);
    // A second ensure (another wait, another replica) changes nothing.
    push.ensure();
    await new Promise((r) => setTimeout(r, 200));
    expect((await listed()).length).toBe(2);

    await push.unsubscribe();
    expect(await listed()).toEqual([{ url: USERS.url, event: USERS.event }]);
    push.close();
  });

  it("counts a delivery arriving just after a poll saw the end as a match, also before push is proven", () => {
    vi.useFakeTimers();
    try {
      const counted: string[] = [];
      let deliver: (body: unknown) => void = () => undefined;
      const push = new BuildPush(
        {
          ...endpoint,
          listen: (on: (body: unknown) => void) => {
            deliver = on;
            return () => undefined;
          },
          count: (outcome: string) => void counted.push(outcome),
        },
        () => webhooks,
        { normalMs: 1000, slowMs: 60_000 },
        quiet,
      );
      const finished = (projectId: string) =>
        deliver({ event: "agent.prompt.finished", timestamp: new Date().toISOString(), data: { projectId } });
      // The first run of a tenant: a poll sees its end, its delivery comes a moment later (under load).
      push.ended("p1", Date.now() - 1000);
      vi.advanceTimersByTime(500);
      finished("p1");
      expect(counted).toEqual(["matched"]);
      expect(push.pace()).toBe(60_000); // push works: polls slow down
      // Healthy now: an end with no delivery within the grace period is a miss, and polls speed up.
      push.ended("p2", Date.now() - 1000);
      vi.advanceTimersByTime(3000);
      expect(counted).toEqual(["matched", "missed"]);
      expect(push.pace()).toBe(1000);
      // Not healthy: an end with no delivery counts nothing.
      push.ended("p3", Date.now() - 1000);
      vi.advanceTimersByTime(3000);
      expect(counted).toEqual(["matched", "missed"]);
      push.close();
    } finally {
      vi.useRealTimers();
    }
  });
});
