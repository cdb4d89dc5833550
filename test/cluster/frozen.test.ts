// Issue 18 item 10: a frozen replica. A SIGSTOPped process still accepts connections, so nginx kept
// sending it requests, each hanging up to proxy_read_timeout (3600 s). The quick 2026-07-28
// methods now get a 10 s read timeout and go to another replica; streams keep the long timeout.
import { afterAll, beforeAll, expect, it } from "vitest";
import { describeCluster, startTestCluster, type TestCluster } from "./harness.js";

const MODERN = "2026-07-28";
const TASKS = { extensions: { "io.modelcontextprotocol/tasks": {} } };

/** A raw 2026-07-28 request through nginx, with a deadline; its status, body and duration. */
async function timed(url: string, method: string, params: Record<string, unknown>, deadlineMs: number) {
  const started = Date.now();
  const res = await fetch(url, {
    method: "POST",
    signal: AbortSignal.timeout(deadlineMs),
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": MODERN,
      "mcp-method": method,
      ...(params.taskId ? { "mcp-name": String(params.taskId) } : {}),
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method,
      params: {
        ...params,
        _meta: {
          "io.modelcontextprotocol/protocolVersion": MODERN,
          "io.modelcontextprotocol/clientInfo": { name: "frozen", version: "1.0.0" },
          "io.modelcontextprotocol/clientCapabilities": TASKS,
        },
      },
    }),
  });
  const text = await res.text();
  return { status: res.status, text, ms: Date.now() - started };
}

describeCluster("a frozen replica behind nginx", () => {
  let cluster: TestCluster;

  beforeAll(async () => {
    cluster = await startTestCluster({ replicas: 3 });
  });
  afterAll(async () => {
    for (const r of cluster?.replicas ?? []) r.signal("SIGCONT");
    await cluster?.stop();
  });

  it("keeps a quiet listen stream open past the quick requests' 10 s read timeout", async () => {
    const controller = new AbortController();
    const res = await fetch(cluster.url, {
      method: "POST",
      signal: controller.signal,
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": MODERN,
        "mcp-method": "subscriptions/listen",
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "subscriptions/listen",
        params: {
          notifications: { resourcesListChanged: true },
          _meta: {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientInfo": { name: "frozen", version: "1.0.0" },
            "io.modelcontextprotocol/clientCapabilities": {},
          },
        },
      }),
    });
    expect(res.status).toBe(200);
    let ended = false;
    void res.text().then(
      () => (ended = true),
      () => undefined,
    );
    await new Promise((r) => setTimeout(r, 12_000));
    expect(ended).toBe(false);
    controller.abort();
  });

  it("answers quick requests within a bound while one replica is SIGSTOPped", async () => {
    const frozen = cluster.replicas[1];
    const before = cluster.nginxLog!().length;
    expect(frozen.signal("SIGSTOP")).toBe(true);
    try {
      // least_conn spreads these over the three replicas: some reach the frozen one first.
      for (let i = 0; i < 9; i++) {
        const method = i % 3 === 2 ? "tasks/get" : "tools/list";
        const answer = await timed(
          cluster.url,
          method,
          method === "tasks/get" ? { taskId: "no-such-task" } : {},
          40_000,
        );
        expect(answer.status, answer.text).toBe(200);
        expect(answer.ms).toBeLessThan(25_000);
        if (method === "tools/list") expect(answer.text).toContain("build_get_project");
        else expect(answer.text).toMatch(/Task not found/);
      }
    } finally {
      frozen.signal("SIGCONT");
    }
    // nginx did try the frozen replica and moved on: a retried request lists two addresses, the first timed out.
    const lines = cluster.nginxLog!().slice(before).split("\n");
    expect(
      lines.some((l) => l.includes(`upstream=127.0.0.1:${frozen.port}, `) && /upstream_status=504, 200/.test(l)),
    ).toBe(true);
  });
});
