// What a server instance for one 2026-07-28 request registers (core/mcp/server.ts,
// registrationsFor), and that a tool's arguments are validated once per call. In process: each
// instance is connected to an SDK client over an in-memory pair and asked what it lists.
import { Client } from "@modelcontextprotocol/client";
import { InMemoryTransport } from "@modelcontextprotocol/server";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { allServicesConfig } from "../../scripts/manifest.js";
import { createMcpServer, type OneRequest } from "../../src/core/mcp/server.js";
import type { TenantRuntime } from "../../src/core/mcp/runtime.js";
import { defineTool } from "../../src/core/tools/tool.js";
import { createApp } from "../../src/server.js";
import { loadServices } from "../../src/services/registry.js";

const services = await loadServices();

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (closers.length) await closers.pop()!();
});

async function instance(rt: TenantRuntime, request?: OneRequest) {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await createMcpServer(rt, "legacy", request).connect(serverSide);
  const client = new Client({ name: "per-request-test", version: "1" });
  await client.connect(clientSide);
  closers.push(() => client.close());
  return client;
}

function app() {
  const a = createApp(allServicesConfig(), undefined, services);
  closers.push(() => a.close());
  return a;
}

describe("a server instance per request", () => {
  it("registers only what its request can reach", { timeout: 30_000 }, async () => {
    const rt = app().runtime;
    const everything = await instance(rt);
    const all = (await everything.listTools()).tools.map((t) => t.name);
    expect(all.length).toBe(rt.definition.tools.length);
    // tools/list answers from the runtime's shaped list whatever an instance registered, so a tool's
    // registration shows in a call: registered, it reaches the tool (an isError result, the upstream
    // being a closed port); not registered, the SDK answers that no such tool exists.
    const registered = async (client: Client, name: string) => {
      try {
        const result = await client.callTool({ name, arguments: { id: "d-1", droneId: "d-1" } });
        return !JSON.stringify(result.content).includes(`Tool ${name} not found`);
      } catch (err) {
        if (String(err).includes(`Tool ${name} not found`)) return false;
        throw err;
      }
    };

    const poll = await instance(rt, { method: "tasks/get", name: "some-task" });
    expect(await registered(poll, "drones_get_drone")).toBe(false);
    expect((await poll.listResources()).resources).toEqual([]);
    expect((await poll.listResourceTemplates()).resourceTemplates).toEqual([]);
    expect((await poll.listPrompts()).prompts).toEqual([]);
    // The same capabilities as an instance with everything registered (completions included).
    expect(poll.getServerCapabilities()).toEqual(everything.getServerCapabilities());
    expect(await registered(everything, "drones_get_drone")).toBe(true);

    const call = await instance(rt, { method: "tools/call", name: "drones_get_drone" });
    expect(await registered(call, "drones_get_drone")).toBe(true);
    expect(await registered(call, "drones_get_mission")).toBe(false);
    expect((await call.listResourceTemplates()).resourceTemplates).toEqual([]);

    // A name no tool has (or one in the header's Base64 form): every tool, so the SDK answers as before.
    const encoded = await instance(rt, { method: "tools/call", name: "=?base64?ZHJvbmVzX2dldF9kcm9uZQ==?=" });
    expect(await registered(encoded, "drones_get_drone")).toBe(true);

    const list = await instance(rt, { method: "tools/list" });
    expect((await list.listTools()).tools.map((t) => t.name)).toEqual(all);
    expect(await registered(list, "drones_get_mission")).toBe(true);

    const read = await instance(rt, { method: "resources/read", name: "build://account" });
    expect(await registered(read, "drones_get_drone")).toBe(false);
    expect((await read.listResourceTemplates()).resourceTemplates.length).toBeGreaterThan(0);
    expect((await read.listPrompts()).prompts).toEqual([]);

    const prompt = await instance(rt, { method: "prompts/get", name: "x" });
    expect((await prompt.listPrompts()).prompts.length).toBe(rt.definition.prompts.length);
    expect((await prompt.listResourceTemplates()).resourceTemplates).toEqual([]);
  });

  it("validates a call's arguments once: the SDK's handler gets the parsed values", async () => {
    let parses = 0;
    const counted = defineTool({
      name: "count_parses",
      title: "Count parses",
      description: "Test tool: counts how often its arguments are parsed.",
      toolset: "test",
      kind: "read",
      input: {
        word: z
          .string()
          .min(2)
          .transform((w) => {
            parses++;
            return w.toUpperCase();
          }),
      },
      output: z.object({ word: z.string() }),
      run: async ({ word }) => ({ word }),
      render: (r) => r.word,
    });
    const rt = app().runtime;
    const definition = { ...rt.definition, tools: [counted] };
    const client = await instance(Object.create(rt, { definition: { value: definition } }) as TenantRuntime);
    const done = await client.callTool({ name: "count_parses", arguments: { word: "hello" } });
    expect(done.structuredContent).toEqual({ word: "HELLO" });
    expect(parses).toBe(1);
    const bad = await client.callTool({ name: "count_parses", arguments: { word: "x" } });
    expect(bad.isError).toBe(true);
    expect(JSON.stringify(bad.content)).toMatch(
      /Invalid arguments for count_parses: word: .*Nothing was sent upstream/,
    );
    expect(parses).toBe(1);
  });
});
