// MCP Apps views are optional: only a host that declares the UI extension hears of them, and
// every tool answers the same text and structured content either way.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Sandbox } from "../../src/sandbox/index.js";
import { connectStdio, sandboxEnv, testSandbox, type StdioConnection } from "../harness.js";

const UI = { extensions: { "io.modelcontextprotocol/ui": { mimeTypes: ["text/html;profile=mcp-app"] } } };

describe("views are optional", () => {
  let sandbox: Sandbox;
  let plain: StdioConnection;
  let apps: StdioConnection;

  beforeAll(async () => {
    sandbox = await testSandbox();
    plain = await connectStdio(sandboxEnv(sandbox));
    apps = await connectStdio(sandboxEnv(sandbox), [], { capabilities: UI as never });
  });
  afterAll(async () => {
    await plain?.close();
    await apps?.close();
    await sandbox?.close();
  });

  it("a host without MCP Apps sees no view links; a host with them sees each view's link", async () => {
    const withoutViews = (await plain.client.listTools()).tools;
    expect(withoutViews.filter((t) => t._meta && "ui" in t._meta)).toEqual([]);
    const withViews = (await apps.client.listTools()).tools;
    const linked = Object.fromEntries(
      withViews.filter((t) => t._meta?.ui).map((t) => [t.name, (t._meta!.ui as { resourceUri: string }).resourceUri]),
    );
    expect(linked).toEqual({
      drones_list_drones: "ui://switchboard/fleet-map.html",
      drones_fleet_summary: "ui://switchboard/fleet-map.html",
      drones_find_nearest: "ui://switchboard/fleet-map.html",
      build_launch_project: "ui://switchboard/build-console.html",
      build_start_agent: "ui://switchboard/build-console.html",
      build_wait: "ui://switchboard/build-console.html",
      build_deploy: "ui://switchboard/build-console.html",
      sizing_recommend_size: "ui://switchboard/fit-card.html",
    });
    expect(withViews.find((t) => t.name === "drones_list_drones")?._meta?.["ui/resourceUri"]).toBe(
      "ui://switchboard/fleet-map.html",
    );
  });

  it("the same result either way", async () => {
    const a = await plain.client.callTool({ name: "drones_fleet_summary", arguments: {} });
    const b = await apps.client.callTool({ name: "drones_fleet_summary", arguments: {} });
    expect(b.structuredContent).toEqual(a.structuredContent);
    expect(b.content).toEqual(a.content);
  });

  it("each view is a self-contained HTML resource with a strict CSP and no network", async () => {
    for (const name of ["fleet-map", "build-console", "fit-card"]) {
      const { contents } = await apps.client.readResource({ uri: `ui://switchboard/${name}.html` });
      const view = contents[0] as { mimeType: string; text: string };
      expect(view.mimeType).toBe("text/html;profile=mcp-app");
      expect(view.text).toMatch(/<meta http-equiv="Content-Security-Policy" content="default-src 'none'/);
      expect(view.text).not.toMatch(/<script[^>]+src=|<link[^>]+href="http/);
      expect(Buffer.byteLength(view.text)).toBeLessThan(400_000);
    }
  });
});
