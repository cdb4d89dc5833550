// Issue 28: a paid call is sent once, even when the server forgets. Two replicas behind nginx, one
// Redis, a 6 s MCP_REPEAT_WINDOW_SECONDS, driven through the balancer with real SIGKILLs and a
// real Redis restart. Launches are counted from the sandbox's own record, never from the server.
//   K3: a launch cancelled mid-POST, Redis restarted, the same call in the window: one launch (its
//       replica sees the new generation and writes its record back; the other replica reads it).
//   K4: the answer dropped between nginx and the client, the same call: one launch.
//   K5: the same task-augmented launch twice, 2025 and 2026, on both replicas: one launch each.
//   K6: the replica SIGKILLed mid-POST, retries past the window: one launch.
//   K7: the replica SIGKILLed mid-POST, then Redis restarted empty (its record lost), the same call on
//       the other replica and on the dead one started again: checked with the tool's find, not sent;
//       a tool without find is not sent until repeat: true.
import { connect } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { request2026, rpc2026, sleep, until } from "../harness.js";
import { describeCluster, startTestCluster, type TestCluster, open2025 } from "./harness.js";

type Json = Record<string, any>;

const API = "/api/v1/vcaas";
const LAUNCH = `POST ${API}/projects/launch`;
const TASKS = { extensions: { "io.modelcontextprotocol/tasks": {} } };
const WINDOW_S = 6;

describeCluster("the spend ledger across replica deaths, Redis restarts and lost answers (issue 28)", () => {
  let cluster: TestCluster;
  const launches = async () => (await cluster.sandbox!.stats()).services["/build"]?.[LAUNCH] ?? 0;
  const launch = (url: string, projectId: string, signal?: AbortSignal) =>
    fetchCall(url, "build_launch_project", { projectId, prompt: "Landing page" }, signal);
  const slowLaunch = (ms: number) =>
    cluster.sandbox!.faults([
      { service: "build", fault: "slow", arg: ms, method: "POST", path: `${API}/projects/launch` },
    ]);

  beforeAll(async () => {
    cluster = await startTestCluster({
      replicas: 2,
      pollIntervalMs: 250,
      timeScale: 600,
      env: { MCP_REPEAT_WINDOW_SECONDS: WINDOW_S, BUILD_CONFIRM_SPEND: "never", MCP_LEASE_MS: 2000 },
      args: ["--toolsets", "all"],
    });
    expect(cluster.state).toBe(true);
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it("K4: an answer lost between nginx and its client: the same call says what the first did", async () => {
    const before = await launches();
    const { hostname: host, port } = new URL(cluster.url);
    const { headers, body } = request2026("tools/call", {
      name: "build_launch_project",
      arguments: { projectId: "lost-answer", prompt: "Landing page" },
    });
    // A client that sends the call and never reads the answer, then goes away: nginx holds the answer.
    const socket = connect(Number(port), host);
    const head = Object.entries({ ...headers, host: `${host}:${port}`, "content-length": Buffer.byteLength(body) })
      .map(([k, v]) => `${k}: ${v}`)
      .join("\r\n");
    socket.write(`POST ${new URL(cluster.url).pathname} HTTP/1.1\r\n${head}\r\n\r\n${body}`);
    socket.pause();
    await until(launches, (n) => n - before === 1, 15_000);
    // The server has answered (its log says the launch's call ended): the answer is lost with the socket.
    await sleep(1000);
    socket.destroy();

    const again = await launch(cluster.url, "lost-answer");
    expect(again.isError, textOf(again)).toBeFalsy();
    expect(textOf(again)).toMatch(/^Same call as the one at \d\d:\d\d:\d\d UTC .*nothing was sent again/s);
    expect(textOf(again)).toMatch(/repeat: true/);
    expect(textOf(again)).toMatch(/Launched project lost-answer/);
    expect((await launches()) - before).toBe(1);
    // On purpose: a second launch (the id is taken, so the service suffixes it).
    const forced = await fetchCall(cluster.url, "build_launch_project", {
      projectId: "lost-answer",
      prompt: "Landing page",
      repeat: true,
    });
    expect(forced.isError, textOf(forced)).toBeFalsy();
    expect((await launches()) - before).toBe(2);
  });

  it("K6: a replica SIGKILLed mid-POST; retries past the window check and find the launch: one launch", async () => {
    const [r1] = cluster.replicas;
    const before = await launches();
    await slowLaunch(3000);
    const first = launch(r1.url, "killed-mid-post").catch((err: unknown) => err);
    // The POST is in flight (the service acts on it at 3 s, whoever is still waiting) when its replica dies.
    await sleep(1000);
    await r1.kill("SIGKILL");
    await first;
    await until(launches, (n) => n - before === 1, 10_000);
    await r1.start();
    // Well past the window: the dead call's record must not have expired into a fresh spend.
    await sleep((WINDOW_S + 3) * 1000);
    const retried = await launch(cluster.url, "killed-mid-post");
    expect(textOf(retried)).toMatch(/Same call as the one at .*its caller stopped before its outcome was known/s);
    expect(textOf(retried)).toMatch(/Checked: found project killed-mid-post/);
    expect(textOf(retried)).toMatch(/repeat: true/);
    const later = await launch(cluster.url, "killed-mid-post");
    expect(textOf(later)).toMatch(/found project killed-mid-post/);
    expect((await launches()) - before).toBe(1);
  }, 60_000);

  it("K5: the same task-augmented launch, 2026 on both replicas: one task, one launch", async () => {
    const before = await launches();
    const args = { projectId: "task-once-2026", prompt: "Shop [minutes=30]", wait: true };
    const [r1, r2] = cluster.replicas;
    const first = (
      await rpc2026(r1.url, "tools/call", { name: "build_launch_project", arguments: args }, { capabilities: TASKS })
    ).body.result;
    expect(first?.resultType, JSON.stringify(first)).toBe("task");
    for (const url of [r2.url, r1.url, cluster.url]) {
      const again = (
        await rpc2026(url, "tools/call", { name: "build_launch_project", arguments: args }, { capabilities: TASKS })
      ).body.result;
      expect(again.taskId, JSON.stringify(again)).toBe(first.taskId);
    }
    await sleep(1000);
    expect((await launches()) - before).toBe(1);
  });

  it("K5: the same task-augmented launch, 2025 sessions on both replicas: one task, one launch", async () => {
    const before = await launches();
    const args = { projectId: "task-once-2025", prompt: "Shop [minutes=30]", wait: true };
    const [r1, r2] = cluster.replicas;
    const call = { name: "build_launch_project", arguments: args, task: { ttl: 600_000 } };
    const first = await (await open2025(r1.url)).request("tools/call", call);
    expect(first?.result?.task?.taskId, JSON.stringify(first)).toBeDefined();
    for (const url of [r2.url, r1.url]) {
      const again = await (await open2025(url)).request("tools/call", call);
      expect(again?.result?.task?.taskId, JSON.stringify(again)).toBe(first?.result.task.taskId);
    }
    await sleep(1000);
    expect((await launches()) - before).toBe(1);
  });
  it("K3: cancelled mid-POST, Redis restarted empty, same call in the window: checked, not sent", async () => {
    const [r1] = cluster.replicas;
    const before = await launches();
    await slowLaunch(2000);
    const gaveUp = new AbortController();
    const first = launch(r1.url, "cancelled-then-restart", gaveUp.signal).catch((err: unknown) => err);
    await sleep(700);
    gaveUp.abort();
    await first;
    // The service acts on it all the same.
    await until(launches, (n) => n - before === 1, 10_000);
    await until(
      async () => r1.output(),
      (out) => out.includes('"tool call cancelled"') || out.includes("tool call failed"),
      10_000,
    ).catch(() => undefined);
    await sleep(500);
    // Redis runs without persistence: every record is gone with the restart.
    await cluster.redis.kill("SIGKILL");
    await cluster.redis.start();
    for (const replica of cluster.replicas)
      await until(
        async () => (await replica.readyz()).status,
        (s) => s === 200,
        15_000,
      );
    // The replica that wrote the record put it back as soon as Redis answered again.
    await until(
      async () => r1.output(),
      (out) => out.includes("spend records written back"),
      10_000,
    );
    for (const replica of cluster.replicas) {
      const again = await launch(replica.url, "cancelled-then-restart");
      expect(textOf(again)).toMatch(/Same call as the one at .*Nothing was sent again/s);
      expect(textOf(again)).toMatch(/repeat: true/);
    }
    expect((await launches()) - before).toBe(1);
  }, 60_000);
});

describeCluster("the spend ledger after a Redis restart that lost a dead replica's records (issue 28)", () => {
  let cluster: TestCluster;
  const launches = async () => (await cluster.sandbox!.stats()).services["/build"]?.[LAUNCH] ?? 0;
  const launch = (url: string, projectId: string, signal?: AbortSignal) =>
    fetchCall(url, "build_launch_project", { projectId, prompt: "Landing page" }, signal);

  beforeAll(async () => {
    // A window long enough for a replica to be started again within it.
    cluster = await startTestCluster({
      replicas: 2,
      pollIntervalMs: 250,
      timeScale: 600,
      env: { MCP_REPEAT_WINDOW_SECONDS: 120, BUILD_CONFIRM_SPEND: "never", MCP_LEASE_MS: 2000 },
      args: ["--toolsets", "all"],
    });
    expect(cluster.state).toBe(true);
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it("K7: replica SIGKILLed after its launch, Redis restarted empty: the same call is checked, not sent", async () => {
    const [r1, r2] = cluster.replicas;
    const before = await launches();
    await cluster.sandbox!.faults([
      { service: "build", fault: "slow", arg: 3000, method: "POST", path: `${API}/projects/launch` },
    ]);
    const first = launch(r1.url, "lost-with-redis").catch((err: unknown) => err);
    // The POST is in flight when its replica dies: nobody is left to write its record back.
    await sleep(1000);
    await r1.kill("SIGKILL");
    await first;
    await until(launches, (n) => n - before === 1, 10_000);
    // Redis runs without persistence: the dead replica's record is gone with the restart.
    await cluster.redis.kill("SIGKILL");
    await cluster.redis.start();
    await until(
      async () => (await r2.readyz()).status,
      (s) => s === 200,
      15_000,
    );
    const onOther = await launch(r2.url, "lost-with-redis");
    expect(textOf(onOther)).toMatch(
      /state store restarted at .*Nothing was sent\. Checked: found project lost-with-redis/s,
    );
    expect(textOf(onOther)).toMatch(/repeat: true/);
    // Started again after the restart, the dead replica never saw the old generation: Redis's note tells it.
    await until(
      () => cluster.redis.command("GET", "sb:spend-restarted"),
      (v) => Boolean(v),
      10_000,
    );
    await r1.start();
    const onRestarted = await launch(r1.url, "lost-with-redis");
    expect(textOf(onRestarted)).toMatch(/state store restarted at .*Checked: found project lost-with-redis/s);
    expect((await launches()) - before).toBe(1);
    // A call nobody made before the restart: checked, nothing found, sent once.
    const fresh = await launch(cluster.url, "new-after-restart");
    expect(fresh.isError, textOf(fresh)).toBeFalsy();
    expect((await launches()) - before).toBe(2);
    // A spending tool with no way to look (no find): nothing is sent, the check is named; repeat: true sends.
    const writes = async () =>
      Object.entries((await cluster.sandbox!.stats()).services["/build"] ?? {})
        .filter(([route]) => route.startsWith("PUT ") && route.endsWith("/files/content"))
        .reduce((n, [, hits]) => n + Number(hits), 0);
    const written = await writes();
    const file = { projectId: "booking-app", path: "src/after-restart.txt", content: "hello" };
    const unchecked = await fetchCall(cluster.url, "build_write_file", file);
    expect(unchecked.isError).toBe(true);
    expect(textOf(unchecked)).toMatch(
      /state store restarted at .*Nothing was sent\. Check first: call build_read_file/s,
    );
    expect(await writes()).toBe(written);
    const forced = await fetchCall(cluster.url, "build_write_file", { ...file, repeat: true });
    expect(forced.isError, textOf(forced)).toBeFalsy();
    expect(await writes()).toBe(written + 1);
  }, 90_000);
});

/** One 2026-07-28 tools/call over HTTP, as a client with no capabilities sends it. */
async function fetchCall(url: string, name: string, args: Json, signal?: AbortSignal): Promise<Json> {
  const { id, headers, body } = request2026("tools/call", { name, arguments: args });
  const res = await fetch(url, { method: "POST", headers, body, signal });
  const text = await res.text();
  for (const line of text.split("\n"))
    if (line.startsWith("data:")) {
      const data = JSON.parse(line.slice(5)) as Json;
      if (data.id === id) return data.result ?? data;
    }
  const data = JSON.parse(text) as Json;
  return data.result ?? data;
}

function textOf(result: Json): string {
  return (result.content ?? []).map((c: Json) => c.text ?? "").join("\n") || JSON.stringify(result);
}
