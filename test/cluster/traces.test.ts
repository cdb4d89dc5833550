// One trace across two replicas (issue 30): a client sends its traceparent in params._meta and
// starts a paid build launch that waits, as a task; the replica following it is SIGKILLed mid-wait
// and the other takes the task over. The real OpenTelemetry SDK of each replica exports OTLP/HTTP
// to a receiver in this test, and a recording proxy in front of the build service sees the
// traceparent of every upstream request.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { rpc2026, sleep, until } from "../harness.js";
import {
  type Receiver,
  type RecordingProxy,
  type Span,
  startReceiver,
  startRecordingProxy,
  under,
} from "../telemetry-receiver.js";
import { describeCluster, startTestCluster, type TestCluster } from "./harness.js";

const TASKS = { extensions: { "io.modelcontextprotocol/tasks": {} } };
const TASK = "task build_launch_project";
const LAUNCH = "POST /api/v1/vcaas/projects/launch";

describeCluster("traces: two replicas on Redis behind nginx, a task taken over after a SIGKILL", () => {
  let cluster: TestCluster;
  let receiver: Receiver;
  let proxy: RecordingProxy;
  let sandboxUrl = "";
  const stateKey = randomBytes(32).toString("base64url");
  const requestStateKey = randomBytes(32).toString("base64url");

  beforeAll(async () => {
    receiver = await startReceiver();
    proxy = await startRecordingProxy(() => sandboxUrl);
    cluster = await startTestCluster({
      replicas: 2,
      pollIntervalMs: 250,
      timeScale: 300,
      stateKey,
      requestStateKey,
      env: {
        MCP_LEASE_MS: 2000,
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_BSP_SCHEDULE_DELAY: 100,
        OTEL_METRICS_EXPORTER: "none",
      },
      replicaEnv: () => ({ BUILD_API_BASE_URL: `${proxy.url}/build` }),
      log: (line: string) => {
        const m = /^sandbox on (\S+)/.exec(line);
        if (m) sandboxUrl = m[1];
      },
    });
    expect(cluster.state).toBe(true);
  });
  afterAll(async () => {
    await cluster?.stop();
    await proxy?.close();
    await receiver?.close();
  });

  it("holds one trace from the client through both replicas to the upstream requests, no secret in it", async () => {
    const traceId = randomBytes(16).toString("hex");
    const clientSpan = randomBytes(8).toString("hex");
    const { body } = await rpc2026(
      cluster.url,
      "tools/call",
      {
        name: "build_launch_project",
        arguments: { projectId: "traced-takeover", prompt: "Landing page [minutes=55]", wait: true },
        _meta: { traceparent: `00-${traceId}-${clientSpan}-01` },
      },
      { capabilities: TASKS },
    );
    expect(body.result?.resultType, JSON.stringify(body)).toBe("task");
    const taskId = body.result.taskId as string;
    const first = cluster.replicas.find((r) => r.output().includes(taskId))!;
    expect(first).toBeDefined();
    const second = cluster.replicas.find((r) => r !== first)!;
    const status = async () =>
      (await rpc2026(cluster.url, "tasks/get", { taskId }, { capabilities: TASKS })).body.result ?? {};
    // The task follows the agent run: the launch was sent and the checkpoint saved.
    await until(
      async () => (await status()).statusMessage ?? "",
      (m) => /^Agent running/.test(m),
      30_000,
    );
    const inTrace = () => receiver.spans().filter((s) => s.traceId === traceId);
    const from = (s: Span) => s.resource["switchboard.replica.id"];
    // What the first replica ended so far was exported: the request's span, the launch's.
    await until(
      async () => inTrace(),
      (spans) => spans.some((s) => s.name === LAUNCH) && spans.some((s) => s.kind === 2),
      15_000,
    );

    expect((await status()).status).toBe("working");
    await first.kill("SIGKILL");
    await until(status, (t) => t.status === "completed", 60_000);
    expect((await status()).statusMessage).not.toMatch(/failed/i);

    const spans = await until(
      async () => inTrace(),
      (all) => all.some((s) => s.name === TASK && from(s) === second.id),
      15_000,
    );
    await sleep(300); // the last batch of the second replica
    const trace = inTrace();
    expect(new Set(trace.map(from))).toEqual(new Set([first.id, second.id]));

    // The client's span is the request's parent, on the first replica.
    const request = trace.find((s) => s.kind === 2 && s.name === "tools/call build_launch_project")!;
    expect(request).toMatchObject({ parentSpanId: clientSpan });
    expect(from(request)).toBe(first.id);

    // The launch is a CLIENT span under the first replica's task span, and carried its traceparent.
    const launch = trace.find((s) => s.name === LAUNCH)!;
    expect(from(launch)).toBe(first.id);
    const firstTask = launch.parentSpanId!;
    expect(firstTask).toBeDefined();
    expect(proxy.seen.map((r) => r.headers.traceparent)).toContain(`00-${traceId}-${launch.spanId}-01`);

    // The takeover's span hangs under the first replica's task span and links to it.
    const takeover = spans.find((s) => s.name === TASK && from(s) === second.id)!;
    expect(takeover.parentSpanId).toBe(firstTask);
    expect(takeover.links).toContainEqual({
      traceId,
      spanId: firstTask,
      attributes: { "switchboard.link": "takeover" },
    });
    expect(takeover.attributes).toMatchObject({
      "switchboard.task.id": taskId,
      "switchboard.task.takeover": true,
      "switchboard.task.status": "completed",
    });

    // The client's tasks/get after the takeover link to the second replica's task span (the record's now).
    const linksTakeover = (s: Span) => s.links.some((l) => l.spanId === takeover.spanId && l.traceId === traceId);
    await until(
      async () => receiver.spans(),
      (all) => all.some((s) => s.kind === 2 && s.name === "tasks/get" && linksTakeover(s)),
      10_000,
    );

    // The second replica's requests (its polls among them) are CLIENT spans under its task span,
    // each with its traceparent sent upstream.
    const requests = trace.filter((s) => s.kind === 3 && from(s) === second.id);
    expect(requests.map((s) => s.name)).toContain("GET /api/v1/vcaas/projects/{id}/agent/status");
    for (const request of requests) {
      expect(under(request, takeover.spanId, trace)).toBe(true);
      expect(proxy.seen.map((r) => r.headers.traceparent)).toContain(`00-${traceId}-${request.spanId}-01`);
    }
    // The launch went upstream once.
    expect(trace.filter((s) => s.name === LAUNCH)).toHaveLength(1);

    // No key, secret or state key in anything exported.
    const raw = receiver.raw();
    const secrets = [...Object.values(cluster.sandbox!.keys as Record<string, string>), stateKey, requestStateKey];
    expect(secrets.length).toBeGreaterThan(3);
    for (const secret of secrets) expect(raw).not.toContain(secret);
    expect(raw).not.toMatch(/tlm_sk_|sz_sandbox|dfk_live/);
    // Nor the project id: routes name it {id}.
    expect(raw).not.toContain("traced-takeover");
  });
});
