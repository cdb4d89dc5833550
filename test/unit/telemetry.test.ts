// The pieces of telemetry that need no process: when it turns on, the /metrics address, the route
// templates that keep ids out of spans and labels, and the SDK's two metric readers, in-process
// against a real OTLP/HTTP receiver and the real /metrics listener.
import { describe, expect, it } from "vitest";
import { pathId, plainPath } from "../../src/core/base/path-id.js";
import { NO_TELEMETRY, telemetryWanted } from "../../src/core/base/telemetry.js";
import { hostPort, startTelemetry } from "../../src/core/telemetry/otel.js";
import { Histograms } from "../../src/core/telemetry/histograms.js";
import { routeTemplate } from "../../src/core/telemetry/route.js";
import { scrubbingProcessor } from "../../src/core/telemetry/scrub.js";
import { freePort, startReceiver } from "../telemetry-receiver.js";
import { until } from "../harness.js";

describe("telemetry", () => {
  it("is wanted only when an exporter or MCP_METRICS_ADDRESS is configured, never under OTEL_SDK_DISABLED", () => {
    expect(telemetryWanted({})).toBe(false);
    expect(telemetryWanted({ OTEL_SERVICE_NAME: "x", OTEL_TRACES_SAMPLER: "always_on" })).toBe(false);
    expect(telemetryWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" })).toBe(true);
    expect(telemetryWanted({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://c:4318/v1/traces" })).toBe(true);
    expect(telemetryWanted({ OTEL_METRICS_EXPORTER: "otlp" })).toBe(true);
    expect(telemetryWanted({}, "127.0.0.1:9464")).toBe(true);
    expect(telemetryWanted({ OTEL_SDK_DISABLED: "true" }, "127.0.0.1:9464")).toBe(false);
  });

  it("off, runs what it wraps and records nothing", async () => {
    expect(await NO_TELEMETRY.operation({ method: "tools/call" }, async () => 7, String)).toBe(7);
    expect(NO_TELEMETRY.upstream("build", "GET", "/x", 0, undefined).headers).toEqual({});
    expect(NO_TELEMETRY.begin("task x", {}, "none").traceparent).toBeUndefined();
  });

  it("reads MCP_METRICS_ADDRESS as host:port", () => {
    expect(hostPort("127.0.0.1:9464")).toEqual({ host: "127.0.0.1", port: 9464 });
    expect(hostPort("[::1]:9464")).toEqual({ host: "::1", port: 9464 });
    expect(hostPort(":9464")).toEqual({ host: "0.0.0.0", port: 9464 });
    for (const bad of ["9464", "host", "host:99999", "http://h:1", "127.0.0.1:0"])
      expect(() => hostPort(bad)).toThrow(/host:port/);
  });

  it("names an upstream request by its route, never by the ids in its path", () => {
    expect(routeTemplate("/api/v1/vcaas/projects/prj_8f2a1c/agent/status")).toBe(
      "/api/v1/vcaas/projects/{id}/agent/status",
    );
    expect(routeTemplate("/api/v1/vcaas/projects/prj_1/secrets/DATABASE_URL")).toBe(
      "/api/v1/vcaas/projects/{id}/secrets/{id}",
    );
    expect(routeTemplate("/api/alerts/64b7f0c2e1d3a9b8c7d6e5f4?x=1")).toBe("/api/alerts/{id}");
    expect(routeTemplate("/api/retailer/try-on")).toBe("/api/retailer/try-on");
    expect(routeTemplate("/webhooks/tlm_sk_0123456789abcdef")).toBe("/webhooks/{id}");
    // An id that looks like a word (a project slug) is known by its mark, and sent without it.
    const marked = `/api/v1/vcaas/projects/${pathId("booking-app")}/versions/${pathId("v 2")}/recover`;
    expect(routeTemplate(marked)).toBe("/api/v1/vcaas/projects/{id}/versions/{id}/recover");
    expect(plainPath(marked)).toBe("/api/v1/vcaas/projects/booking-app/versions/v%202/recover");
  });

  // /metrics reads the OTLP reader's collection when both are cumulative (one aggregation per
  // record instead of two); under a delta preference it keeps its own, or a scrape would show
  // only what happened since the last export.
  for (const preference of ["cumulative", "delta"])
    it(`keeps /metrics cumulative and OTLP as preferred (${preference})`, async () => {
      const receiver = await startReceiver();
      const saved = { ...process.env };
      Object.assign(process.env, {
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE: preference,
      });
      const address = `127.0.0.1:${await freePort()}`;
      const telemetry = await startTelemetry({
        env: { ...process.env, OTEL_METRIC_EXPORT_INTERVAL: "100", OTEL_TRACES_EXPORTER: "none" },
        metricsAddress: address,
        version: "test",
        transport: "tcp",
        scrub: (t) => t,
      });
      const scraped = async () => {
        const text = await (await fetch(`http://${address}/metrics`)).text();
        return Number(/^switchboard_caps_hit_total\{setting="MCP_X"[^}]*\} (\d+)/m.exec(text)?.[1]);
      };
      const exported = () => {
        const points = receiver
          .metrics()
          .filter((m) => m.name === "switchboard.caps.hit")
          .flatMap((m) => m.sum?.dataPoints ?? [])
          .map((p) => Number(p.asInt ?? p.asDouble));
        return preference === "delta" ? points.reduce((a, b) => a + b, 0) : Math.max(0, ...points);
      };
      try {
        // A histogram (aggregated outside the SDK's instruments) reaches both, and /metrics once.
        await telemetry.operation({ method: "tools/call", tool: "drones_get_drone" }, async () => 1, String);
        const text = await (await fetch(`http://${address}/metrics`)).text();
        expect(text.match(/^# HELP mcp_server_operation_duration /gm)).toHaveLength(1);
        expect(text).toMatch(
          /^mcp_server_operation_duration_count\{[^}]*gen_ai_tool_name="drones_get_drone"[^}]*\} 1$/m,
        );
        await until(
          async () => receiver.metrics().filter((m) => m.name === "mcp.server.operation.duration"),
          (ms) => ms.some((m) => m.histogram?.dataPoints.some((p) => Number(p.count) === 1)),
          5_000,
        );
        telemetry.add("caps", 3, { setting: "MCP_X" });
        expect(await scraped()).toBe(3);
        await until(
          async () => exported(),
          (n) => n === 3,
          5_000,
        );
        telemetry.add("caps", 2, { setting: "MCP_X" });
        await until(
          async () => exported(),
          (n) => n === 5,
          5_000,
        );
        expect(await scraped()).toBe(5);
        expect(await scraped()).toBe(5);
      } finally {
        await telemetry.close();
        process.env = saved;
        await receiver.close();
      }
    });

  it("aggregates a histogram as the SDK's default does: inclusive upper bounds, one series per label set", async () => {
    const histograms = new Histograms({ name: "test", version: "1" });
    const h = histograms.define("d", "durations", "s", [0.1, 1]);
    expect((await histograms.collect()).resourceMetrics.scopeMetrics).toEqual([]);
    const labels = { tool: "a" };
    for (const v of [0.05, 0.1, 0.5, 1, 7]) h.record(v, labels);
    h.record(0.2, { tool: "a" }); // another object, the same set: the same series
    h.record(0.3, { tool: "b" });
    const [scope] = (await histograms.collect()).resourceMetrics.scopeMetrics;
    const points = scope.metrics[0].dataPoints as unknown as { attributes: object; value: Record<string, unknown> }[];
    expect(points).toHaveLength(2);
    expect(points[0].attributes).toEqual({ tool: "a" });
    expect(points[0].value).toMatchObject({
      buckets: { boundaries: [0.1, 1], counts: [2, 3, 1] },
      count: 6,
      min: 0.05,
      max: 7,
    });
    expect(points[0].value.sum).toBeCloseTo(8.85);
    expect(points[1].value).toMatchObject({ count: 1, buckets: { counts: [0, 1, 0] } });
    // As the SDK's limit: 1,999 series, then one overflow series for every further set.
    for (let i = 0; i < 2100; i++) h.record(1, { tool: `t${i}` });
    const [again] = (await histograms.collect()).resourceMetrics.scopeMetrics;
    const all = again.metrics[0].dataPoints as unknown as {
      attributes: Record<string, unknown>;
      value: { count: number };
    }[];
    expect(all).toHaveLength(2000);
    expect(all.find((p) => p.attributes["otel.metric.overflow"])?.value.count).toBe(103);
  });

  it("scrubs every span string but the attributes the server builds from its declarations", () => {
    const ended: Record<string, unknown>[] = [];
    const next = {
      onStart: () => undefined,
      onEnd: (span: { attributes: Record<string, unknown> }) => ended.push(span.attributes),
      forceFlush: async () => undefined,
      shutdown: async () => undefined,
    };
    const processor = scrubbingProcessor(next as never, (t) => t.replaceAll("sk_live_123", "[redacted]"));
    const span = {
      attributes: {
        "gen_ai.tool.name": "sk_live_123",
        "jsonrpc.request.id": "id sk_live_123",
        "url.template": "/x/sk_live_123",
        "http.response.status_code": 200,
      },
      events: [{ attributes: { note: "sk_live_123" } }],
      status: { code: 2, message: "failed with sk_live_123" },
    };
    processor.onEnd(span as never);
    expect(ended[0]).toEqual({
      "gen_ai.tool.name": "sk_live_123", // a declared tool name is not scrubbed (none is a secret)
      "jsonrpc.request.id": "id [redacted]",
      "url.template": "/x/[redacted]",
      "http.response.status_code": 200,
    });
    expect(span.events[0].attributes.note).toBe("[redacted]");
    expect(span.status.message).toBe("failed with [redacted]");
  });
});
