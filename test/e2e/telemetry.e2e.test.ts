// Traces and metrics by the MCP semantic conventions, exported by the real OpenTelemetry SDK to an
// OTLP/HTTP receiver that decodes what arrives, and a /metrics listener of its own that real
// Prometheus scrapes (docs/observability.md). The client's trace context rides in params._meta.
import { randomBytes } from "node:crypto";
import type { Client } from "@modelcontextprotocol/client";
import { Client as LegacyClient } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CreateTaskResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Sandbox } from "../../src/sandbox/index.js";
import {
  connectHttp,
  type HttpServerProcess,
  MODERN,
  rpc2026,
  sandboxEnv,
  spawnHttpServer,
  testSandbox,
  until,
} from "../harness.js";
import {
  freePort,
  hasPrometheus,
  type Metric,
  promtoolCheckMetrics,
  type Receiver,
  type RecordingProxy,
  type Span,
  startPrometheus,
  under,
  startReceiver,
  startRecordingProxy,
} from "../telemetry-receiver.js";

const MCP_BUCKETS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300];
const TASKS = { extensions: { "io.modelcontextprotocol/tasks": {} } };
const ELICIT = { elicitation: { form: {} } };

describe("telemetry: OTLP traces and metrics, Prometheus", () => {
  let sandbox: Sandbox;
  let receiver: Receiver;
  let proxy: RecordingProxy;
  let server: HttpServerProcess;
  let client: Client;
  let metricsAddress: string;

  beforeAll(async () => {
    sandbox = await testSandbox();
    receiver = await startReceiver();
    proxy = await startRecordingProxy(sandbox.urls.sizing);
    metricsAddress = `127.0.0.1:${await freePort()}`;
    server = await spawnHttpServer(
      sandboxEnv(sandbox, {
        SIZING_API_BASE_URL: proxy.url,
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_BSP_SCHEDULE_DELAY: "50",
        OTEL_METRIC_EXPORT_INTERVAL: "300",
        MCP_METRICS_ADDRESS: metricsAddress,
        MCP_REPLICA_ID: "replica-t1",
        MCP_TRACE_RESOURCE_URIS: "true",
      }),
    );
    client = await connectHttp(server.url);
  });
  afterAll(async () => {
    await client?.close();
    await server?.stop();
    await proxy?.close();
    await receiver?.close();
    await sandbox?.close();
  });

  const traceparent = () => {
    const traceId = randomBytes(16).toString("hex");
    const parentId = randomBytes(8).toString("hex");
    return { traceId, parentId, header: `00-${traceId}-${parentId}-01` };
  };
  const spansOf = (traceId: string, accept: (spans: Span[]) => boolean) =>
    until(async () => receiver.spans().filter((s) => s.traceId === traceId), accept, 10_000);

  it("continues the client trace in a SERVER span, then the upstream request (CLIENT span, traceparent)", async () => {
    const t = traceparent();
    const result = await client.callTool({
      name: "sizing_get_catalog",
      arguments: {},
      _meta: { traceparent: t.header },
    });
    expect(result.isError).toBeFalsy();
    const spans = await spansOf(t.traceId, (s) => s.some((x) => x.kind === 2) && s.some((x) => x.kind === 3));
    const serverSpan = spans.find((s) => s.kind === 2)!;
    expect(serverSpan.name).toBe("tools/call sizing_get_catalog");
    expect(serverSpan.parentSpanId).toBe(t.parentId);
    expect(serverSpan.attributes).toMatchObject({
      "mcp.method.name": "tools/call",
      "gen_ai.tool.name": "sizing_get_catalog",
      "gen_ai.operation.name": "execute_tool",
      "network.transport": "tcp",
      "mcp.protocol.version": MODERN ? "2026-07-28" : expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/),
    });
    expect(typeof serverSpan.attributes["jsonrpc.request.id"]).toBe("string");
    expect(serverSpan.attributes["error.type"]).toBeUndefined();
    expect(serverSpan.resource).toMatchObject({
      "service.name": "switchboard-mcp",
      "service.instance.id": "replica-t1",
      "switchboard.replica.id": "replica-t1",
    });
    const upstream = spans.find((s) => s.kind === 3)!;
    expect(upstream.parentSpanId).toBe(serverSpan.spanId);
    expect(upstream.name).toBe("GET /api/retailer/catalog");
    expect(upstream.attributes).toMatchObject({
      "switchboard.upstream.service": "sizing",
      "http.request.method": "GET",
      "url.template": "/api/retailer/catalog",
      "http.response.status_code": 200,
    });
    // The upstream request carried the CLIENT span's context.
    expect(proxy.seen.map((r) => r.headers.traceparent)).toContain(`00-${t.traceId}-${upstream.spanId}-01`);
  });

  it("records an isError tool result as error.type tool_error, the upstream's status on its CLIENT span", async () => {
    sandbox.sizing.router.injectFault({
      method: "GET",
      path: /\/api\/retailer\/catalog$/,
      action: {
        kind: "respond",
        response: { status: 400, body: { ok: false, error: { code: "BAD", message: "no" } } },
      },
    });
    const t = traceparent();
    const result = await client.callTool({
      name: "sizing_get_catalog",
      arguments: {},
      _meta: { traceparent: t.header },
    });
    expect(result.isError).toBe(true);
    const spans = await spansOf(t.traceId, (s) => s.some((x) => x.kind === 2) && s.some((x) => x.kind === 3));
    const serverSpan = spans.find((s) => s.kind === 2)!;
    expect(serverSpan.attributes["error.type"]).toBe("tool_error");
    expect(serverSpan.status.code).toBe(2);
    const upstream = spans.find((s) => s.kind === 3)!;
    expect(upstream.attributes).toMatchObject({ "http.response.status_code": 400, "error.type": "400" });
  });

  it("a task is a span under its request's: the launch and the wait under it, each poll under the wait", async () => {
    const t = traceparent();
    const other = traceparent();
    const { body } = await rpc2026(
      server.url,
      "tools/call",
      {
        name: "build_launch_project",
        arguments: { projectId: "traced-task", prompt: "Landing page [minutes=150]", wait: true },
        _meta: { traceparent: t.header },
      },
      { capabilities: TASKS },
    );
    expect(body.result?.resultType, JSON.stringify(body)).toBe("task");
    const taskId = body.result.taskId as string;
    // A second wait on the same project, in a trace of its own, shares the task's polls.
    const waited = await client.callTool({
      name: "build_wait",
      arguments: { projectId: "traced-task", until: "agent" },
      _meta: { traceparent: other.header },
    });
    expect(waited.isError, JSON.stringify(waited)).toBeFalsy();
    await until(
      async () => (await rpc2026(server.url, "tasks/get", { taskId }, { capabilities: TASKS })).body.result?.status,
      (s) => s === "completed",
      20_000,
    );

    const isTask = (s: Span) => s.name === "task build_launch_project";
    const spans = await spansOf(t.traceId, (s) => s.some(isTask));
    const call = spans.find((s) => s.name === "tools/call build_launch_project")!;
    expect(call.parentSpanId).toBe(t.parentId);
    const task = spans.find(isTask)!;
    expect(task).toMatchObject({ kind: 1, parentSpanId: call.spanId });
    expect(task.attributes).toMatchObject({ "switchboard.task.id": taskId, "switchboard.task.status": "completed" });
    // The client's polls of the task (tasks/get, each a trace of its own) link to the task's span.
    const linksTask = (s: Span) =>
      s.kind === 2 &&
      s.name === "tasks/get" &&
      s.links.some((l) => l.spanId === task.spanId && l.attributes["switchboard.link"] === "task");
    await until(
      async () => receiver.spans(),
      (all) => all.some(linksTask),
      10_000,
    );
    const launch = spans.find((s) => s.kind === 3 && s.name === "POST /api/v1/vcaas/projects/launch")!;
    expect(launch.parentSpanId).toBe(task.spanId);
    const wait = spans.find((s) => s.name === "wait")!;
    expect(under(wait, task.spanId, spans)).toBe(true);
    expect(wait.attributes["switchboard.wait.outcome"]).toBe("done");

    // Whichever wait followed first has the polls as children; the other links the polls it read.
    const otherSpans = await spansOf(other.traceId, (s) => s.some((x) => x.name === "wait"));
    const waits = [wait, otherSpans.find((s) => s.name === "wait")!];
    const all = [...spans, ...otherSpans];
    const polls = all.filter((s) => s.name === "poll");
    const parentWait = waits.find((w) => polls.some((p) => p.parentSpanId === w.spanId))!;
    expect(parentWait).toBeDefined();
    const status = all.find((s) => s.kind === 3 && s.name === "GET /api/v1/vcaas/projects/{id}/agent/status")!;
    expect(polls.map((p) => p.spanId)).toContain(status.parentSpanId);
    const linker = waits.find((w) => w !== parentWait)!;
    const linked = linker.links.filter((l) => l.attributes["switchboard.link"] === "poll");
    expect(linked.length).toBeGreaterThan(0);
    for (const l of linked) expect(polls.find((p) => p.spanId === l.spanId)?.parentSpanId).toBe(parentWait.spanId);
    // The project id names no span, no route and no metric label.
    expect(JSON.stringify(all)).not.toContain("traced-task");
    expect(await (await fetch(`http://${metricsAddress}/metrics`)).text()).not.toContain("traced-task");
  });

  it.runIf(!MODERN)("links a 2025 client's tasks/get, answered by a server instance, to the task's span", async () => {
    const legacy = new LegacyClient({ name: "telemetry-2025", version: "1.0.0" });
    await legacy.connect(new StreamableHTTPClientTransport(new URL(server.url)));
    try {
      const t = traceparent();
      const { task } = await legacy.request(
        {
          method: "tools/call",
          params: {
            name: "build_launch_project",
            arguments: { projectId: "traced-legacy", prompt: "Landing page [minutes=60]", wait: true },
            task: { ttl: 60_000 },
            _meta: { traceparent: t.header },
          },
        },
        CreateTaskResultSchema,
      );
      await until(
        async () => (await legacy.experimental.tasks.getTask(task.taskId)).status,
        (s) => s === "completed",
        20_000,
      );
      const taskSpan = (await spansOf(t.traceId, (s) => s.some((x) => x.name === "task build_launch_project"))).find(
        (s) => s.name === "task build_launch_project",
      )!;
      await until(
        async () => receiver.spans(),
        (all) =>
          all.some((s) => s.kind === 2 && s.name === "tasks/get" && s.links.some((l) => l.spanId === taskSpan.spanId)),
        10_000,
      );
    } finally {
      await legacy.close();
    }
  });

  it("shows a credit confirmation as events on the calls' spans: asked, then accepted", async () => {
    const asked = traceparent();
    const first = (
      await rpc2026(
        server.url,
        "tools/call",
        { name: "build_create_project", arguments: { projectId: "traced-one" }, _meta: { traceparent: asked.header } },
        { capabilities: ELICIT },
      )
    ).body.result;
    expect(first.resultType).toBe("input_required");
    const answered = traceparent();
    const retry = await rpc2026(
      server.url,
      "tools/call",
      {
        name: "build_create_project",
        arguments: { projectId: "traced-one" },
        inputResponses: { confirm_spend: { action: "accept", content: { confirm: true } } },
        requestState: first.requestState,
        _meta: { traceparent: answered.header },
      },
      { capabilities: ELICIT },
    );
    expect(retry.body.result?.isError, JSON.stringify(retry.body)).toBeFalsy();
    const outcomes = async (traceId: string) =>
      (await spansOf(traceId, (s) => s.some((x) => x.kind === 2)))
        .find((s) => s.kind === 2)!
        .events.filter((e) => e.name === "switchboard.confirmation")
        .map((e) => e.attributes.outcome);
    expect(await outcomes(asked.traceId)).toEqual(["asked"]);
    expect(await outcomes(answered.traceId)).toEqual(["accepted"]);
  });

  it("records mcp.resource.uri on a resources/read span if MCP_TRACE_RESOURCE_URIS is on, not as a label", async () => {
    const { resources } = await client.listResources();
    const uri = resources.find((r) => r.uri.startsWith("build://"))?.uri ?? resources[0].uri;
    const t = traceparent();
    await client.readResource({ uri, _meta: { traceparent: t.header } });
    const spans = await spansOf(t.traceId, (s) => s.some((x) => x.kind === 2));
    const read = spans.find((s) => s.kind === 2)!;
    expect(read.name).toBe("resources/read");
    expect(read.attributes).toMatchObject({ "mcp.method.name": "resources/read", "mcp.resource.uri": uri });
    const text = await (await fetch(`http://${metricsAddress}/metrics`)).text();
    expect(text).toMatch(/mcp_method_name="resources\/read"/);
    expect(text).not.toContain("mcp_resource_uri");
  });

  it("counts credits via the build service's reply hook: each spend once, however many polls repeat it", async () => {
    // What /metrics says the build service spent, in all, and under one tool.
    const spent = async (tool?: string) => {
      const text = await (await fetch(`http://${metricsAddress}/metrics`)).text();
      let total = 0;
      for (const m of text.matchAll(/^switchboard_credits_spent_total\{([^}]*)\} (\S+)$/gm))
        if (m[1].includes('service="build"') && (!tool || m[1].includes(`tool="${tool}"`))) total += Number(m[2]);
      return total;
    };
    const balance = () => sandbox.build.balance().credits;

    // A flat price (CREATE_PROJECT): the create answer reports no credits; the service's hook prices it.
    let before = { spent: await spent("build_create_project"), balance: balance() };
    const first = (
      await rpc2026(
        server.url,
        "tools/call",
        { name: "build_create_project", arguments: { projectId: "priced-one" } },
        { capabilities: ELICIT },
      )
    ).body.result;
    const created = await rpc2026(
      server.url,
      "tools/call",
      {
        name: "build_create_project",
        arguments: { projectId: "priced-one" },
        inputResponses: { confirm_spend: { action: "accept", content: { confirm: true } } },
        requestState: first.requestState,
      },
      { capabilities: ELICIT },
    );
    expect(created.body.result?.isError, JSON.stringify(created.body)).toBeFalsy();
    expect(before.balance - balance()).toBe(1);
    expect(
      await until(
        () => spent("build_create_project"),
        (n) => n > before.spent,
      ),
    ).toBe(before.spent + 1);

    // A launch that waits: its price, then the prompt's credits once, though every poll after it repeats them.
    before = { spent: await spent(), balance: balance() };
    const { body } = await rpc2026(
      server.url,
      "tools/call",
      {
        name: "build_launch_project",
        arguments: { projectId: "priced-run", prompt: "Landing page [minutes=150]", wait: true },
      },
      { capabilities: TASKS },
    );
    const taskId = body.result?.taskId as string;
    await until(
      async () => (await rpc2026(server.url, "tasks/get", { taskId }, { capabilities: TASKS })).body.result?.status,
      (s) => s === "completed",
      20_000,
    );
    const cost = before.balance - balance();
    expect(cost).toBeGreaterThan(10);
    // More polls of the finished prompt: nothing more is counted.
    await client.callTool({ name: "build_wait", arguments: { projectId: "priced-run", until: "agent" } });
    await client.callTool({ name: "build_wait", arguments: { projectId: "priced-run", until: "agent" } });
    expect(await spent()).toBe(before.spent + cost);
    expect(await spent("build_launch_project")).toBeGreaterThanOrEqual(cost);
  });

  it("a tool name the server does not have names no span and labels no metric", async () => {
    const t = traceparent();
    await client
      .callTool({ name: "no_such_tool_9f3a", arguments: {}, _meta: { traceparent: t.header } })
      .catch(() => undefined);
    const spans = await spansOf(t.traceId, (s) => s.some((x) => x.kind === 2));
    expect(spans.find((s) => s.kind === 2)!.name).toBe("tools/call");
    expect(spans.find((s) => s.kind === 2)!.attributes["gen_ai.tool.name"]).toBeUndefined();
    const text = await (await fetch(`http://${metricsAddress}/metrics`)).text();
    expect(text).toMatch(/mcp_server_operation_duration_count\{mcp_method_name="tools\/call"/);
    expect(text).not.toContain("no_such_tool_9f3a");
  });

  it("exports mcp.server.operation.duration in the conventions' buckets, upstream metric by status class", async () => {
    const metrics = await until(
      async () => receiver.metrics(),
      (m) =>
        hasPoint(m, "mcp.server.operation.duration", { "gen_ai.tool.name": "sizing_get_catalog" }) &&
        hasPoint(m, "switchboard.upstream.duration", { status_class: "4xx" }),
      10_000,
    );
    const op = metrics
      .filter((m) => m.name === "mcp.server.operation.duration")
      .flatMap((m) => m.histogram!.dataPoints);
    expect(op[0].explicitBounds).toEqual(MCP_BUCKETS);
    const upstream = metrics
      .filter((m) => m.name === "switchboard.upstream.duration")
      .flatMap((m) => m.histogram!.dataPoints);
    expect(upstream.map((p) => p.attributes)).toContainEqual({
      service: "sizing",
      operation: "GET /api/retailer/catalog",
      status_class: "2xx",
    });
    expect(metrics.find((m) => m.name === "switchboard.tenants.cached")).toBeDefined();
  });

  it("carries no key of any service, in any span or metric", () => {
    const raw = receiver.raw();
    expect(raw.length).toBeGreaterThan(0);
    for (const key of Object.values(sandbox.keys as Record<string, string>)) expect(raw).not.toContain(key);
  });

  it("serves /metrics on its own listener only, in a form promtool accepts", async () => {
    const text = await (await fetch(`http://${metricsAddress}/metrics`)).text();
    expect(text).toMatch(
      /^mcp_server_operation_duration_bucket\{.*gen_ai_tool_name="sizing_get_catalog".*le="300"\} \d+$/m,
    );
    expect(text).toMatch(/^target_info\{.*switchboard_replica_id="replica-t1".*\} 1$/m);
    const mcpPort = new URL(server.url);
    const onMcpPort = await fetch(`${mcpPort.origin}/metrics`);
    expect(await onMcpPort.text()).not.toContain("mcp_server_operation_duration");
    const mcpOnMetrics = await fetch(`http://${metricsAddress}/mcp`, { method: "POST", body: "{}" });
    expect(mcpOnMetrics.status).toBe(404);
    const check = promtoolCheckMetrics(text);
    expect(check.output).not.toMatch(/error/i);
    expect(check.status).toBe(0);
  });

  it.runIf(!MODERN && hasPrometheus())("real Prometheus scrapes the replica", { timeout: 40_000 }, async () => {
    const prometheus = await startPrometheus([metricsAddress]);
    try {
      const series = await until(
        () => prometheus.query('sum(mcp_server_operation_duration_count{gen_ai_tool_name="sizing_get_catalog"})'),
        (r) => r.length > 0,
        20_000,
      );
      expect(Number(series[0].value[1])).toBeGreaterThanOrEqual(2);
      const up = await prometheus.query('up{job="switchboard"}');
      expect(up[0]?.value[1]).toBe("1");
    } finally {
      await prometheus.close();
    }
  });
});

function hasPoint(metrics: Metric[], name: string, labels: Record<string, unknown>): boolean {
  return metrics
    .filter((m) => m.name === name)
    .flatMap((m) => [...(m.histogram?.dataPoints ?? []), ...(m.sum?.dataPoints ?? [])])
    .some((p) => Object.entries(labels).every(([k, v]) => p.attributes[k] === v));
}
