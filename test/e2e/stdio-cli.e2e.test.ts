import { spawn, spawnSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Sandbox } from "../../src/sandbox/index.js";
import { LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { call, CLI, connectStdio, ok, sandboxEnv, testSandbox } from "../harness.js";

const CONTRACT_TOOLS: Record<string, string[]> = {
  build: [
    "build_get_account",
    "build_get_credit_costs",
    "build_list_projects",
    "build_get_project",
    "build_create_project",
    "build_launch_project",
    "build_wait",
    "build_start_agent",
    "build_get_agent_status",
    "build_get_conversation",
    "build_stop_agent",
    "build_deploy",
    "build_get_deployment_status",
  ],
  build_admin: [
    "build_delete_project",
    "build_list_versions",
    "build_recover_version",
    "build_get_logs",
    "build_restart_server",
    "build_set_secret",
    "build_delete_secret",
    "build_set_domain",
    "build_remove_domain",
    "build_get_database_schema",
    "build_query_database",
  ],
  sizing: ["sizing_get_catalog", "sizing_recommend_size", "sizing_create_try_on"],
  drones: [
    "drones_list_drones",
    "drones_get_drone",
    "drones_list_missions",
    "drones_get_mission",
    "drones_list_alerts",
    "drones_get_alert",
    "drones_update_alert",
    "drones_list_api_keys",
    "drones_fleet_summary",
    "drones_find_nearest",
  ],
};
const ALL_TOOLS = Object.values(CONTRACT_TOOLS).flat();

describe("command line", () => {
  it("prints --help and --version", () => {
    const help = spawnSync(process.execPath, [CLI, "--help"], { encoding: "utf8" });
    expect(help.status).toBe(0);
    expect(help.stdout).toContain("--toolsets build,build_admin,sizing,drones");
    const version = spawnSync(process.execPath, [CLI, "--version"], { encoding: "utf8" });
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });

  it("stops on a bad value with a one-line message and exit code 2", () => {
    const bad = spawnSync(process.execPath, [CLI], { encoding: "utf8", env: { PATH: process.env.PATH, UPSTREAM_TIMEOUT_MS: "-5" } });
    expect(bad.status).toBe(2);
    expect(bad.stderr.trim().split("\n")).toHaveLength(1);
    expect(bad.stderr).toMatch(/UPSTREAM_TIMEOUT_MS must be positive/);
    expect(bad.stdout).toBe("");
  });

  it("starts with no service configured and says which variables to set", async () => {
    const conn = await connectStdio({ PATH: process.env.PATH ?? "" });
    expect((await conn.client.listTools()).tools).toEqual([]);
    const instructions = conn.client.getInstructions() ?? "";
    for (const v of ["BUILD_API_KEY", "SIZING_API_KEY", "DRONES_API_KEY", "--sandbox"]) expect(instructions).toContain(v);
    await conn.close();
  });
});

describe("tool catalogue over stdio", () => {
  let sandbox: Sandbox;
  beforeAll(async () => {
    sandbox = await testSandbox();
  });
  afterAll(async () => sandbox?.close());

  it("lists exactly the contract's tools, each fully described", async () => {
    const conn = await connectStdio(sandboxEnv(sandbox));
    const { tools } = await conn.client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([...ALL_TOOLS].sort());
    for (const tool of tools) {
      expect(tool.title, tool.name).toBeTruthy();
      expect(tool.description!.length, tool.name).toBeGreaterThan(20);
      expect(tool.outputSchema?.type, tool.name).toBe("object");
      expect(tool.inputSchema.type, tool.name).toBe("object");
      for (const hint of ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"] as const) {
        expect(typeof tool.annotations?.[hint], `${tool.name}.${hint}`).toBe("boolean");
      }
    }
    // The compacted tools/list (src/core/compact.ts): no generator noise, shallow output schemas.
    const wire = JSON.stringify(tools);
    expect(wire).not.toContain("$schema");
    expect(wire).not.toContain('"taskSupport":"forbidden"');
    expect(tools.every((t) => t.annotations?.title === undefined)).toBe(true);
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    expect(byName.build_list_projects.outputSchema?.properties?.projects).toEqual({ type: "array" });
    expect(byName.build_delete_project.annotations?.destructiveHint).toBe(true);
    expect(byName.build_get_account.annotations?.readOnlyHint).toBe(true);
    expect(byName.build_launch_project.annotations?.readOnlyHint).toBe(false);
    expect(byName.build_launch_project.annotations?.idempotentHint).toBe(false);
    expect(byName.build_query_database.annotations?.readOnlyHint).toBe(true);
    await conn.close();
  });

  it("sends MCP log messages at the level the client sets, LOG_LEVEL until then", async () => {
    const conn = await connectStdio(sandboxEnv(sandbox, { LOG_LEVEL: "info" }));
    const got: Array<{ level: string; message: string }> = [];
    conn.client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
      got.push({ level: n.params.level, message: String((n.params.data as { message?: string })?.message) });
    });
    await ok(conn.client, "build_get_account"); // logs "tool call" at debug: below LOG_LEVEL=info
    await call(conn.client, "build_get_project", { projectId: "no-such-project" }); // "tool call failed" at warn
    await new Promise((r) => setTimeout(r, 100));
    expect(got.some((m) => m.level === "warning" && m.message === "tool call failed")).toBe(true);
    expect(got.some((m) => m.level === "debug")).toBe(false);

    await conn.client.setLoggingLevel("debug");
    got.length = 0;
    await ok(conn.client, "build_get_account");
    await new Promise((r) => setTimeout(r, 100));
    expect(got.some((m) => m.level === "debug" && m.message === "tool call")).toBe(true);

    await conn.client.setLoggingLevel("error");
    got.length = 0;
    await call(conn.client, "build_get_project", { projectId: "no-such-project" });
    await new Promise((r) => setTimeout(r, 100));
    expect(got).toEqual([]);
    expect(conn.stderr()).not.toMatch(/"level":"debug"/); // stderr keeps LOG_LEVEL
    await conn.close();
  });

  it("--read-only keeps only tools that change nothing", async () => {
    const conn = await connectStdio(sandboxEnv(sandbox), ["--read-only"]);
    const { tools } = await conn.client.listTools();
    const names = tools.map((t) => t.name);
    for (const t of tools) expect(t.annotations?.readOnlyHint, t.name).toBe(true);
    for (const gone of ["build_launch_project", "build_create_project", "build_deploy", "build_delete_project", "build_set_secret", "drones_update_alert", "sizing_create_try_on", "build_start_agent", "build_stop_agent"]) {
      expect(names).not.toContain(gone);
    }
    expect(names).toContain("build_wait");
    expect(names).toContain("drones_fleet_summary");
    await conn.close();
  });

  it("--toolsets registers only the named groups", async () => {
    const conn = await connectStdio(sandboxEnv(sandbox), ["--toolsets", "drones,build_admin"]);
    const names = (await conn.client.listTools()).tools.map((t) => t.name).sort();
    expect(names).toEqual([...CONTRACT_TOOLS.drones, ...CONTRACT_TOOLS.build_admin].sort());
    await conn.close();
  });

  it("writes nothing but JSON-RPC on stdout, even at LOG_LEVEL=debug", async () => {
    const child = spawn(process.execPath, [CLI], { env: sandboxEnv(sandbox, { LOG_LEVEL: "debug" }), stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    const send = (msg: unknown) => child.stdin.write(`${JSON.stringify(msg)}\n`);
    send({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } } });
    send({ jsonrpc: "2.0", method: "notifications/initialized" });
    send({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "build_get_account", arguments: {} } });
    send({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "build_get_project", arguments: { projectId: "NOT VALID" } } });
    send({ jsonrpc: "2.0", id: 4, method: "tools/call", params: { name: "no_such_tool", arguments: {} } });
    child.stdin.write("this is not json\n");
    send({ jsonrpc: "2.0", id: 5, method: "ping" });
    const deadline = Date.now() + 10_000;
    while (!stdout.includes('"id":5') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    child.stdin.end();
    await new Promise((r) => child.once("exit", r));
    const lines = stdout.split("\n").filter((l) => l.trim());
    expect(lines.length).toBeGreaterThanOrEqual(5);
    for (const line of lines) expect(JSON.parse(line).jsonrpc).toBe("2.0");
    expect(stderr).toMatch(/"level":"debug"/);
    expect(stderr).not.toContain(sandbox.keys.build);
  });
});

describe("--sandbox mode", () => {
  it("launches a project with wait: true against the built-in simulators, with progress", async () => {
    const conn = await connectStdio({ PATH: process.env.PATH ?? "", SANDBOX_TIME_SCALE: "3000", BUILD_POLL_INTERVAL_MS: "50" }, ["--sandbox"]);
    const names = (await conn.client.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(ALL_TOOLS));
    const progress: string[] = [];
    const result = await conn.client.callTool(
      { name: "build_launch_project", arguments: { projectId: "sandbox-demo", prompt: "A todo app [minutes=6]", wait: true } },
      undefined,
      { onprogress: (p) => progress.push(p.message ?? ""), timeout: 30_000 },
    );
    expect(result.isError).toBeFalsy();
    const structured = result.structuredContent as { wait: { outcome: string; project: { agentProcessStatus: string } } };
    expect(structured.wait.outcome).toBe("done");
    expect(structured.wait.project.agentProcessStatus).toBe("done");
    expect(progress.length).toBeGreaterThan(1);
    const drones = await ok<{ drones: unknown[] }>(conn.client, "drones_list_drones", {});
    expect(drones.drones.length).toBeGreaterThan(0);
    await conn.close();
  });
});
