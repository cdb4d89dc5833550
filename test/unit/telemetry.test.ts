// The pieces of telemetry that need no process: when it turns on, the /metrics address, the route
// templates that keep ids out of spans and labels, and the SDK's two metric readers, in-process
// against a real OTLP/HTTP receiver and the real /metrics listener.
import { describe, expect, it } from "vitest";
import { pathId, plainPath } from "../../src/core/base/path-id.js";
import { NO_TELEMETRY, telemetryWanted } from "../../src/core/base/telemetry.js";
import { hostPort, startTelemetry } from "../../src/core/telemetry/otel.js";
import { routeTemplate } from "../../src/core/telemetry/route.js";
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
});
