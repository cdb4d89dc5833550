// 2026-07-28 over HTTP is stateless: each request is answered by a server instance made for it,
// which registers only what that request can reach (core/mcp/server.ts, registrationsFor). These
// tests drive many requests at once and check that none sees another's context, and that an
// instance that registers nothing still answers with the server's whole description.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Sandbox } from "../../src/sandbox/index.js";
import { rpc2026, sandboxEnv, spawnHttpServer, testSandbox, type HttpServerProcess } from "../harness.js";

type Json = Record<string, any>;

const UI = { extensions: { "io.modelcontextprotocol/ui": { mimeTypes: ["text/html;profile=mcp-app"] } } };

/** One raw 2026-07-28 request; every JSON-RPC message of the answer (notifications, then the result). */
async function exchange(
  url: string,
  method: string,
  params: Json,
  capabilities: Json,
  logLevel?: string,
): Promise<Json[]> {
  const id = Math.floor(Math.random() * 1e9);
  const meta = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": { name: "stateless-test", version: "1.0.0" },
    "io.modelcontextprotocol/clientCapabilities": capabilities,
    ...(logLevel ? { "io.modelcontextprotocol/logLevel": logLevel } : {}),
  };
  const res = await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": method,
      ...(params.name ? { "mcp-name": params.name } : {}),
    },
    body: JSON.stringify({ jsonrpc: "2.0", id, method, params: { ...params, _meta: meta } }),
  });
  const text = await res.text();
  expect(res.status, text).toBe(200);
  if (!res.headers.get("content-type")?.includes("text/event-stream")) return [JSON.parse(text) as Json];
  return text
    .split("\n")
    .filter((line) => line.startsWith("data:"))
    .map((line) => JSON.parse(line.slice(5)) as Json);
}

describe("stateless 2026-07-28 requests", () => {
  let sandbox: Sandbox;
  let http: HttpServerProcess;

  beforeAll(async () => {
    sandbox = await testSandbox();
    http = await spawnHttpServer(sandboxEnv(sandbox));
  });
  afterAll(async () => {
    await http?.stop();
    await sandbox?.close();
  });

  it("keep their own envelope when they run at once: capabilities, log level, arguments", async () => {
    const { body } = await rpc2026(http.url, "tools/call", { name: "drones_list_drones", arguments: {} });
    const drones = (body.result.structuredContent.drones as Json[]).slice(0, 6).map((d) => String(d._id));
    expect(drones.length).toBeGreaterThan(2);
    // Interleaved: lists with and without the UI extension, calls with and without a log level, each for its own drone.
    const requests = Array.from({ length: 24 }, (_, i) => {
      const views = i % 4 === 0;
      const logs = i % 3 === 0;
      const drone = drones[i % drones.length];
      if (i % 2 === 0)
        return exchange(http.url, "tools/list", {}, views ? UI : {}).then((messages) => ({
          kind: "list" as const,
          views,
          messages,
        }));
      return exchange(
        http.url,
        "tools/call",
        { name: "drones_get_drone", arguments: { id: drone } },
        {},
        logs ? "debug" : undefined,
      ).then((messages) => ({ kind: "call" as const, logs, drone, messages }));
    });
    const answers = await Promise.all(requests);
    for (const a of answers) {
      const result = a.messages.at(-1)!.result;
      expect(result, JSON.stringify(a.messages)).toBeDefined();
      if (a.kind === "list") {
        const linked = (result.tools as Json[]).filter((t) => t._meta?.ui);
        if (a.views) expect(linked.map((t) => t.name)).toContain("drones_list_drones");
        else expect(linked).toEqual([]);
      } else {
        expect(result.isError ?? false, JSON.stringify(result)).toBe(false);
        expect(result.structuredContent._id).toBe(a.drone);
        const logged = a.messages.filter((m) => m.method === "notifications/message");
        if (a.logs) expect(logged.map((m) => m.params.data.message)).toContain("tool call");
        else expect(logged).toEqual([]);
      }
    }
  });

  it("an instance that registers no tool, resource or prompt still describes the whole server", async () => {
    // server/discover registers nothing: its capabilities must still include what registrations add (completions).
    const discover = (await rpc2026(http.url, "server/discover")).body.result;
    expect(Object.keys(discover.capabilities)).toEqual(
      expect.arrayContaining(["tools", "resources", "prompts", "completions", "logging"]),
    );
    // completion/complete registers the resources, so a template's completion still answers.
    const completion = (
      await rpc2026(http.url, "completion/complete", {
        ref: { type: "ref/resource", uri: "build://projects/{projectId}" },
        argument: { name: "projectId", value: "acm" },
      })
    ).body;
    expect(completion.result?.completion.values, JSON.stringify(completion)).toEqual(["acme-storefront"]);
    // A tools/call of an unknown tool is the protocol error it always was.
    const unknown = (await rpc2026(http.url, "tools/call", { name: "no_such_tool", arguments: {} })).body;
    expect(unknown.error?.message ?? JSON.stringify(unknown)).toMatch(/no_such_tool/);
  });
});
