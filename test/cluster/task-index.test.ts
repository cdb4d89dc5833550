// A tenant's tasks/list reads its index on Redis (a sorted set of task ids by expiry). Each new
// task used to set the index's expiry to its own TTL, so a short-lived task took a longer one's
// entry with it: the longer task was still there (tasks/get found it) but gone from tasks/list.
// A 2026-07-28 tasks/get of a task that is not there used to read the store twice (the lean path,
// then the instance it fell back to).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CreateTaskResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { rpc2026, sleep, until } from "../harness.js";
import { describeCluster, startTestCluster, type TestCluster } from "./harness.js";

const SHORT_TTL = 1500;
const TASKS = { extensions: { "io.modelcontextprotocol/tasks": {} } };
const LONG_TTL = 600_000;

describeCluster("the per-tenant task index on Redis (one replica, 2025 tasks)", () => {
  let cluster: TestCluster;
  let client: Client;

  beforeAll(async () => {
    cluster = await startTestCluster({ replicas: 1, nginx: false, pollIntervalMs: 200 });
    client = new Client({ name: "task-index", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(cluster.url)));
  });
  afterAll(async () => {
    await client?.close();
    await cluster?.stop();
  });

  const createTask = async (ttl: number) => {
    const params = { name: "build_wait", arguments: { projectId: "booking-app", until: "agent" }, task: { ttl } };
    return (await client.request({ method: "tools/call", params }, CreateTaskResultSchema)).task;
  };
  const listed = async () => (await client.experimental.tasks.listTasks()).tasks.map((t) => t.taskId);
  const found = (taskId: string) =>
    client.experimental.tasks.getTask(taskId).then(
      () => true,
      () => false,
    );

  it("keeps a long task in tasks/list after a shorter one created later expires, and drops expired ids", async () => {
    const long = await createTask(LONG_TTL);
    const short = await createTask(SHORT_TTL);
    expect(await listed()).toEqual(expect.arrayContaining([long.taskId, short.taskId]));
    // Past the short task's end (and as long again), the long one is still listed.
    await until(
      () => found(short.taskId),
      (there) => !there,
      30_000,
    );
    await sleep(SHORT_TTL);
    expect(await found(long.taskId)).toBe(true);
    expect(await listed()).toContain(long.taskId);
    const [index] = await cluster.redis.keys("sb:owner:*");
    expect(Number(await cluster.redis.command("PTTL", index))).toBeGreaterThan(LONG_TTL / 2);
    // The next task's creation prunes the expired id, so a busy tenant's index stays bounded.
    const next = await createTask(LONG_TTL);
    expect((await cluster.redis.command("ZRANGE", index, "0", "-1")) as string[]).toEqual([long.taskId, next.taskId]);
  });

  it("answers a 2026-07-28 tasks/get of an unknown task from one store read, with the SDK entry's error", async () => {
    // redis-cli's MONITOR, one command a line: ioredis's monitor mode could mistake a monitored
    // line for the answer to its MONITOR under load ("Command queue state error").
    const monitor = spawn("redis-cli", ["-u", cluster.redis.url, "monitor"], { stdio: ["ignore", "pipe", "pipe"] });
    let seen = "";
    monitor.stdout.on("data", (chunk: Buffer) => (seen += chunk.toString()));
    const lines = () => seen.split("\n");
    const settled = async () => {
      const marker = `sb:marker:${randomUUID()}`;
      await cluster.redis.command("GET", marker);
      await until(
        async () => lines().some((line) => line.includes(`"${marker}"`)),
        (there) => there,
      );
    };
    try {
      const taskId = randomUUID();
      const reads = () => lines().filter((line) => line.includes(`"sb:task:${taskId}"`)).length;
      await until(
        async () => seen,
        (out) => out.startsWith("OK"),
      );
      await settled();
      const lean = await rpc2026(cluster.url, "tasks/get", { taskId }, { capabilities: TASKS });
      await settled();
      expect(reads()).toBe(1);
      // The SDK's entry (Mcp-Name in Base64 takes that path) answers the same.
      const base64 = `=?base64?${Buffer.from(taskId, "utf8").toString("base64")}?=`;
      const entry = await rpc2026(
        cluster.url,
        "tasks/get",
        { taskId },
        { capabilities: TASKS, headers: { "mcp-name": base64 } },
      );
      expect(lean.status).toBe(entry.status);
      expect({ ...lean.body, id: 0 }).toEqual({ ...entry.body, id: 0 });
      expect(lean.body.error?.message).toMatch(/Task not found/);
    } finally {
      monitor.kill();
    }
  });
});
