// The one registration path, in process: which tools a configuration publishes and how a
// definition becomes a listed tool and a call result. No network: every upstream points at
// a closed port, so a call that reaches the client fails the way an unreachable service does.
import { Client } from "@modelcontextprotocol/client";
import { InMemoryTransport } from "@modelcontextprotocol/server";
import { afterEach, describe, expect, it } from "vitest";
import { allServicesConfig } from "../../scripts/manifest.js";
import type { Config } from "../../src/config.js";
import { createMcpServer } from "../../src/core/mcp/server.js";
import { createApp } from "../../src/server.js";
import { loadServices } from "../../src/services/registry.js";

const services = await loadServices();

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (closers.length) await closers.pop()!();
});

async function connect(overrides: Partial<Config>) {
  const app = createApp({ ...allServicesConfig(), ...overrides }, undefined, services);
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await createMcpServer(app.runtime, "legacy").connect(serverSide);
  const client = new Client({ name: "registration-test", version: "1" });
  await client.connect(clientSide);
  closers.push(async () => {
    await client.close();
    await app.close();
  });
  return { client, defs: app.runtime.definition.tools };
}

describe("registration", () => {
  it("publishes exactly the tools of the asked toolsets", async () => {
    const { client, defs } = await connect({ toolsets: ["drones", "build_files"] });
    const { tools } = await client.listTools();
    expect(tools.length).toBeGreaterThan(0);
    expect(tools.map((t) => t.name).sort()).toEqual(defs.map((d) => d.name).sort());
    const names = tools.map((t) => t.name);
    expect(names).toContain("drones_list_drones");
    expect(names.some((n) => n.startsWith("build_"))).toBe(true);
    expect(names.some((n) => n.startsWith("sizing_"))).toBe(false);
    expect(names).not.toContain("build_launch_project");
  });

  it("--read-only keeps only tools of kind read", async () => {
    const all = await connect({});
    const ro = await connect({ readOnly: true });
    const names = (await ro.client.listTools()).tools.map((t) => t.name);
    const reads = all.defs.filter((d) => d.kind === "read").map((d) => d.name);
    expect(names.sort()).toEqual(reads.sort());
    expect(names.length).toBeLessThan(all.defs.length);
  });

  it("annotations follow each definition's kind", async () => {
    const { client, defs } = await connect({});
    const { tools } = await client.listTools();
    for (const t of tools) {
      const def = defs.find((d) => d.name === t.name)!;
      expect(t.annotations?.readOnlyHint, t.name).toBe(def.kind === "read");
      // A write or spend that overwrites or drops user data declares `destroys` (issue 29).
      expect(t.annotations?.destructiveHint, t.name).toBe(def.kind === "destructive" || def.destroys !== undefined);
      expect(t.annotations?.openWorldHint, t.name).toBe(true);
      expect(t.inputSchema.type, t.name).toBe("object");
    }
  });

  it("bad arguments come back as isError naming the field, and nothing is sent", async () => {
    const { client, defs } = await connect({});
    const def = defs.find((d) => d.kind === "read" && Object.keys(d.input).length > 0 && !d.longRunning)!;
    const result = await client.callTool({
      name: def.name,
      arguments: { [Object.keys(def.input)[0]!]: { not: "valid" } },
    });
    expect(result.isError).toBe(true);
    const text = (result.content as Array<{ text: string }>)[0]!.text;
    expect(text).toContain(`Invalid arguments for ${def.name}`);
    expect(text).toContain("Nothing was sent upstream");
  });

  it("an unreachable upstream is an isError result that names the service, not a thrown error", async () => {
    const { client } = await connect({});
    const result = await client.callTool({ name: "drones_list_drones", arguments: {} });
    expect(result.isError).toBe(true);
    const text = (result.content as Array<{ text: string }>)[0]!.text;
    expect(text).toContain("drones service");
    expect(text).toContain("ECONNREFUSED");
    expect(text).toContain("Next step:");
    expect(text).not.toContain("definitions-only-key");
  });
});
