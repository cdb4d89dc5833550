// Issue 19, across replicas: a client gives up on a paid build_launch_project { wait: true } (its
// own timeout: the connection closes) and calls again, and the retry lands on another replica.
// The launch goes upstream once: the retry follows the build the first call started. The record
// that says so lives on Redis, sealed. Behind scripts/cluster.mjs --sandbox, /healthz says sandbox.
import { afterAll, beforeAll, expect, it } from "vitest";
import { connectHttp, text, until } from "../harness.js";
import { describeCluster, startTestCluster, type TestCluster } from "./harness.js";

const LAUNCH = "POST /api/v1/vcaas/projects/launch";

describeCluster("two replicas, one Redis: a retried paid launch spends once", () => {
  let cluster: TestCluster;
  const launches = async () => (await cluster.sandbox!.stats()).services["/build"]?.[LAUNCH] ?? 0;

  beforeAll(async () => {
    cluster = await startTestCluster({ replicas: 2, pollIntervalMs: 250, timeScale: 600, args: ["--toolsets", "all"] });
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it("/healthz of a replica pointed at the cluster's sandbox says sandbox", async () => {
    expect((await cluster.replicas[0].healthz()).body).toMatchObject({ sandbox: true });
  });

  it("the first call cut off on r1, the same call on r2 follows the same build: one launch", async () => {
    // The caller asked to wait 120 s; the build takes about 5 s ([minutes=50] at 600x).
    const prompt = "Shop [minutes=50] secret-prompt-words";
    const args = { projectId: "retry-cluster", prompt, wait: true, timeoutSeconds: 120 };
    const before = await launches();
    const first = await connectHttp(cluster.replicas[0].url, {}, {}, "modern");
    const second = await connectHttp(cluster.replicas[1].url, {}, {}, "modern");
    try {
      const gaveUp = new AbortController();
      const lines: string[] = [];
      const cut = first
        .callTool(
          { name: "build_launch_project", arguments: args },
          {
            signal: gaveUp.signal,
            onprogress: (p) => lines.push(p.message ?? ""),
          },
        )
        .catch((err: unknown) => err);
      // The launch went through and the wait is on: the client's own timeout strikes now.
      await until(
        async () => lines.length,
        (n) => n >= 2,
        30_000,
      );
      gaveUp.abort("Request timed out");
      await cut;
      expect(await cluster.redis.keys("sb:spend:*")).not.toEqual([]);
      const dump = JSON.stringify(await cluster.redis.dump("sb:spend:*"));
      expect(dump).not.toContain("secret-prompt-words");
      expect(dump).not.toContain("retry-cluster");

      const retried = await second.callTool({ name: "build_launch_project", arguments: args });
      expect(retried.isError, text(retried)).toBeFalsy();
      expect(text(retried)).toMatch(/^Same call as the one at .*: nothing was sent again/);
      expect(retried.structuredContent).toMatchObject({ projectId: "retry-cluster", wait: { outcome: "done" } });
      expect((await launches()) - before).toBe(1);
    } finally {
      await Promise.allSettled([first.close(), second.close()]);
    }
  });
});
