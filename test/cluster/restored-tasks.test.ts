// A task Redis lost (a restart without persistence) is written back by the replica following it.
// The write-back used to restore the record, the owner's index and the working set, but not the
// owner's working set: the per-tenant cap (MCP_MAX_TASKS_PER_TENANT) did not count the restored
// task until it ended, so a tenant could hold the cap's worth of tasks again after every restart.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, expect, it } from "vitest";
import { connectHttp, ok, rpc2026, until } from "../harness.js";
import { describeCluster, startTestCluster, type TestCluster } from "./harness.js";

const CAP = 2;
const TASKS = { extensions: { "io.modelcontextprotocol/tasks": {} } };

describeCluster(
  "tasks written back after a Redis restart (one replica, per-user keys, MCP_MAX_TASKS_PER_TENANT=2)",
  () => {
    let cluster: TestCluster;
    let headers: Record<string, string>;

    beforeAll(async () => {
      cluster = await startTestCluster({
        replicas: 1,
        nginx: false,
        credentials: "caller",
        pollIntervalMs: 200,
        env: { MCP_MAX_TASKS_PER_TENANT: CAP, MCP_LEASE_MS: 2000 },
      });
      headers = { "x-build-api-key": cluster.sandbox!.accountKeys.build[0] };
    });
    afterAll(async () => {
      await cluster?.stop();
    });

    const wait = () =>
      rpc2026(
        cluster.url,
        "tools/call",
        { name: "build_wait", arguments: { projectId: "booking-app", until: "agent" } },
        { headers, capabilities: TASKS },
      );
    const status = async (taskId: string) =>
      (await rpc2026(cluster.url, "tasks/get", { taskId }, { headers, capabilities: TASKS })).body.result?.status;

    it("counts a restored working task against the owner's cap and lists it in the owner's tasks/list", async () => {
      const builder = await connectHttp(cluster.url, headers, {}, "modern");
      await ok(builder, "build_start_agent", { projectId: "booking-app", prompt: "Long work [minutes=100000]" });
      const started: string[] = [];
      for (let i = 0; i < CAP; i++) {
        const { body } = await wait();
        expect(body.result?.resultType, JSON.stringify(body)).toBe("task");
        started.push(body.result.taskId);
      }
      expect((await wait()).body.result?.content?.[0]?.text).toMatch(/MCP_MAX_TASKS_PER_TENANT/);

      // Redis restarts empty; the replica writes both records back as soon as it reconnects.
      await cluster.redis.restart("SIGKILL");
      await until(
        async () => (await cluster.replicas[0].readyz()).status,
        (s) => s === 200,
        20_000,
      );
      for (const taskId of started)
        await until(
          () => status(taskId).catch(() => undefined),
          (s) => s === "working",
          20_000,
        );

      // The cap still binds: a third task is refused, nothing started.
      const refused = (await wait()).body.result;
      expect(refused?.isError, JSON.stringify(refused)).toBe(true);
      expect(refused?.content?.[0]?.text).toMatch(
        /2 tasks working.*MCP_MAX_TASKS_PER_TENANT is 2.*Nothing was started/,
      );

      // The owner's tasks/list (2025-11-25) has both restored tasks.
      const legacy = new Client({ name: "restored-tasks", version: "1.0.0" });
      await legacy.connect(new StreamableHTTPClientTransport(new URL(cluster.url), { requestInit: { headers } }));
      const listed = (await legacy.experimental.tasks.listTasks()).tasks.map((t) => t.taskId);
      expect(listed).toEqual(expect.arrayContaining(started));

      // A restored task that ends frees its slot.
      await rpc2026(cluster.url, "tasks/cancel", { taskId: started[0] }, { headers, capabilities: TASKS });
      expect((await wait()).body.result?.resultType).toBe("task");

      await ok(builder, "build_stop_agent", { projectId: "booking-app" });
      await Promise.all([builder.close(), legacy.close()]);
    });
  },
);
