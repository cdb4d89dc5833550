import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from "node:child_process";
import { LOG_LEVEL_META_KEY, type LoggingLevel } from "@modelcontextprotocol/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ALL_TOOLSETS, credentialHeader } from "../../src/config.js";
import type { Sandbox } from "../../src/sandbox/index.js";
import { SERVICES } from "../../src/services/registry.js";
import { call, CLI, connectStdio, MODERN, ok, roundTrip, sandboxEnv, sleep, testSandbox, until } from "../harness.js";
import { CONTRACT_TOOLS } from "../contract.js";

type Json = Record<string, any>;

/** The per-request envelope of a 2026-07-28 request. */
const ENVELOPE = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1" },
  "io.modelcontextprotocol/clientCapabilities": {},
};

/**
 * `node dist/cli.js` driven with raw lines on stdin, in the suite's era: 2025 opens with
 * initialize, 2026-07-28 with server/discover and an envelope on every request.
 */
class RawStdio {
  readonly child: ChildProcessWithoutNullStreams;
  stdout = "";
  stderr = "";

  constructor(env: Record<string, string>, args: string[] = []) {
    this.child = spawn(process.execPath, [CLI, ...args], { env, stdio: ["pipe", "pipe", "pipe"] });
    this.child.stdout.on("data", (c: Buffer) => (this.stdout += c.toString()));
    this.child.stderr.on("data", (c: Buffer) => (this.stderr += c.toString()));
  }

  lines(): Json[] {
    return this.stdout
      .split("\n")
      .filter((l) => l.trim())
      .map((l) => JSON.parse(l) as Json);
  }

  line(text: string): void {
    this.child.stdin.write(`${text}\n`);
  }

  send(message: Json): void {
    this.line(JSON.stringify(message));
  }

  request(id: number, method: string, params: Json = {}): void {
    this.send({
      jsonrpc: "2.0",
      id,
      method,
      params: MODERN ? { ...params, _meta: { ...ENVELOPE, ...params._meta } } : params,
    });
  }

  async open(): Promise<Json> {
    if (MODERN) this.request(0, "server/discover");
    else
      this.request(0, "initialize", {
        protocolVersion: "2025-11-25",
        capabilities: {},
        clientInfo: { name: "raw", version: "1" },
      });
    const opened = await this.answer(0);
    if (!MODERN) this.send({ jsonrpc: "2.0", method: "notifications/initialized" });
    return opened;
  }

  /** The answer to request `id` (a result or an error). */
  async answer(id: number | null, timeoutMs = 15_000): Promise<Json> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.stdout.includes(`"id":${JSON.stringify(id)}`)
        ? this.lines().find((l) => l.id === id && ("result" in l || "error" in l))
        : undefined;
      if (found) return found;
      if (Date.now() > deadline)
        throw new Error(`no answer to ${id}: ${this.stdout.slice(-500)} ${this.stderr.slice(-500)}`);
      await sleep(25);
    }
  }

  /** Answers without an id (to lines the server could not read), once `n` of them arrived. */
  async anonymousErrors(n: number, timeoutMs = 15_000): Promise<Json[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.lines().filter((l) => l.id === null && "error" in l);
      if (found.length >= n) return found;
      if (Date.now() > deadline) throw new Error(`expected ${n} answers with id null: ${this.stdout.slice(-500)}`);
      await sleep(25);
    }
  }

  async close(): Promise<number | null> {
    const exited = new Promise<number | null>((resolve) => this.child.once("exit", (code) => resolve(code)));
    this.child.stdin.end();
    return exited;
  }
}

const ALL_TOOLS = Object.values(CONTRACT_TOOLS).flat();

describe("command line", () => {
  it("prints --help and --version", () => {
    const help = spawnSync(process.execPath, [CLI, "--help"], { encoding: "utf8" });
    expect(help.status).toBe(0);
    // The default toolsets of every service of the registry (build_admin is off by default).
    const defaults = ALL_TOOLSETS.filter((t) => t.default).map((t) => t.id);
    expect(defaults).toEqual(expect.arrayContaining(["build", "sizing", "drones"]));
    expect(defaults).not.toContain("build_admin");
    expect(help.stdout).toContain(`--toolsets ${defaults.join(",")}|all`);
    // MCP_CREDENTIALS names every service's header.
    for (const service of SERVICES) expect(help.stdout.toLowerCase()).toContain(credentialHeader(service.name));
    const version = spawnSync(process.execPath, [CLI, "--version"], { encoding: "utf8" });
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });

  it("stops on a bad value with a one-line message and exit code 2", () => {
    const bad = spawnSync(process.execPath, [CLI], {
      encoding: "utf8",
      env: { PATH: process.env.PATH, UPSTREAM_TIMEOUT_MS: "-5" },
    });
    expect(bad.status).toBe(2);
    expect(bad.stderr.trim().split("\n")).toHaveLength(1);
    expect(bad.stderr).toMatch(/UPSTREAM_TIMEOUT_MS: must be positive/);
    expect(bad.stdout).toBe("");
  });

  it.each([
    ["an unknown flag", ["--bogus"], {}, /^switchboard-mcp: unknown flag --bogus; see --help for the flags$/],
    ["an empty --toolsets", ["--toolsets", ""], {}, /^switchboard-mcp: --toolsets is empty: /],
    [
      "an unknown toolset",
      ["--toolsets", "rockets"],
      {},
      /^switchboard-mcp: unknown toolset rockets; the toolsets are /,
    ],
    [
      "a toolset whose service is not configured",
      ["--toolsets", "sizing"],
      {},
      new RegExp(
        /^switchboard-mcp: toolset sizing needs the garment size recommendation API: /.source +
          /set SIZING_API_KEY and SIZING_API_BASE_URL, or start with --sandbox$/.source,
      ),
    ],
    [
      "a key without its base URL",
      [],
      { SIZING_API_KEY: "k" },
      /^switchboard-mcp: SIZING_API_KEY is set but SIZING_API_BASE_URL is not: /,
    ],
    [
      "a base URL without its key",
      [],
      { DRONES_API_BASE_URL: "http://127.0.0.1:9/d" },
      /^switchboard-mcp: DRONES_API_BASE_URL is set but DRONES_API_KEY is not: /,
    ],
    [
      "a base URL that is not a URL",
      [],
      { BUILD_API_KEY: "tlm_sk_cli_test", BUILD_API_BASE_URL: "notaurl" },
      /^switchboard-mcp: BUILD_API_BASE_URL: must be an http\(s\) URL/,
    ],
    [
      "a poll interval under 2 s for a real service",
      [],
      { BUILD_API_KEY: "tlm_sk_cli_test", BUILD_POLL_INTERVAL_MS: "500" },
      /^switchboard-mcp: BUILD_POLL_INTERVAL_MS: must be at least 2000 ms for a real service/,
    ],
  ])("stops on %s with one line on stderr and exit code 2", (_label, args, env, message) => {
    const run = spawnSync(process.execPath, [CLI, ...(args as string[])], {
      encoding: "utf8",
      env: { PATH: process.env.PATH, ...(env as Record<string, string>) },
      timeout: 10_000,
    });
    expect(run.status).toBe(2);
    const lines = run.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(message);
    expect(run.stdout).toBe("");
    expect(run.stderr).not.toContain("tlm_sk_cli_test");
  });

  it("warns in one line that --port does nothing over stdio, and starts", async () => {
    const conn = await connectStdio({ PATH: process.env.PATH ?? "" }, ["--port", "4321"]);
    expect((await conn.client.listTools()).tools).toEqual([]);
    const warnings = conn
      .stderr()
      .split("\n")
      .filter((l) => l.includes("--port"));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toBe(
      "switchboard-mcp: --port has no effect with --transport stdio; it applies to --transport http",
    );
    await conn.close();
  });

  it("starts with no service configured, saying which variables to set in its instructions and on stderr", async () => {
    const conn = await connectStdio({ PATH: process.env.PATH ?? "" });
    expect((await conn.client.listTools()).tools).toEqual([]);
    const instructions = conn.client.getInstructions() ?? "";
    // docs/clients.md: "Nothing listed? ... stderr": one line there, besides the ready line.
    const warning = conn
      .stderr()
      .split("\n")
      .filter((l) => l.startsWith("switchboard-mcp: no service is configured"));
    expect(warning, conn.stderr()).toHaveLength(1);
    for (const v of ["BUILD_API_KEY", "SIZING_API_KEY", "DRONES_API_KEY", "--sandbox"]) {
      expect(instructions).toContain(v);
      expect(warning[0]).toContain(v);
    }
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
    const conn = await connectStdio(sandboxEnv(sandbox), ["--toolsets", "build,build_admin,sizing,drones"]);
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
    expect(
      (byName.build_list_projects.outputSchema?.properties as Record<string, unknown> | undefined)?.projects,
    ).toEqual({ type: "array" });
    expect(byName.build_delete_project.annotations?.destructiveHint).toBe(true);
    expect(byName.build_get_account.annotations?.readOnlyHint).toBe(true);
    expect(byName.build_launch_project.annotations?.readOnlyHint).toBe(false);
    expect(byName.build_launch_project.annotations?.idempotentHint).toBe(false);
    expect(byName.build_query_database.annotations?.readOnlyHint).toBe(true);
    await conn.close();
  });

  if (MODERN) {
    it("sends MCP log messages only at the level a request carries in its envelope (absent: none)", async () => {
      const conn = await connectStdio(sandboxEnv(sandbox, { LOG_LEVEL: "debug" }));
      const got: Array<{ level: string; message: string }> = [];
      conn.client.setNotificationHandler("notifications/message", (n) => {
        got.push({ level: n.params.level, message: String((n.params.data as { message?: string })?.message) });
      });
      const at = (level: LoggingLevel) => ({ _meta: { [LOG_LEVEL_META_KEY]: level } });
      const logged = (level: string, message: string) =>
        until(
          async () => got,
          (g) => g.some((m) => m.level === level && m.message === message),
        );
      await sleep(200);
      expect(got).toEqual([]); // nothing before the first request
      await ok(conn.client, "build_get_account");
      await call(conn.client, "build_get_project", { projectId: "no-such-project" });
      await roundTrip(conn.client);
      expect(got).toEqual([]); // no logLevel in the envelope: no logs, whatever LOG_LEVEL says

      const debug = await conn.client.callTool({ name: "build_get_account", arguments: {}, ...at("debug") });
      expect(debug.isError).toBeFalsy();
      await logged("debug", "tool call");

      got.length = 0;
      await conn.client.callTool({
        name: "build_get_project",
        arguments: { projectId: "no-such-project" },
        ...at("warning"),
      });
      await logged("warning", "tool call failed");
      await roundTrip(conn.client);
      expect(got.some((m) => m.level === "debug")).toBe(false);

      got.length = 0;
      await conn.client.callTool({
        name: "build_get_project",
        arguments: { projectId: "no-such-project" },
        ...at("error"),
      });
      await ok(conn.client, "build_get_account");
      await roundTrip(conn.client);
      expect(got).toEqual([]);
      await conn.close();
    });

    it("keeps stderr at LOG_LEVEL whatever a request asks for", async () => {
      const conn = await connectStdio(sandboxEnv(sandbox, { LOG_LEVEL: "info" }));
      await conn.client.callTool({
        name: "build_get_account",
        arguments: {},
        _meta: { [LOG_LEVEL_META_KEY]: "debug" },
      });
      await sleep(100);
      expect(conn.stderr()).not.toMatch(/"level":"debug"/);
      await conn.close();
    });
  } else {
    it("sends MCP logs at the level the client sets, LOG_LEVEL until then, none before the first request", async () => {
      const conn = await connectStdio(sandboxEnv(sandbox, { LOG_LEVEL: "info" }));
      const got: Array<{ level: string; message: string }> = [];
      conn.client.setNotificationHandler("notifications/message", (n) => {
        got.push({ level: n.params.level, message: String((n.params.data as { message?: string })?.message) });
      });
      const logged = (level: string, message: string) =>
        until(
          async () => got,
          (g) => g.some((m) => m.level === level && m.message === message),
        );
      await sleep(200);
      expect(got).toEqual([]); // the start-up lines stay on stderr
      await ok(conn.client, "build_get_account"); // logs "tool call" at debug: below LOG_LEVEL=info
      await call(conn.client, "build_get_project", { projectId: "no-such-project" }); // "tool call failed" at warn
      await logged("warning", "tool call failed");
      await roundTrip(conn.client);
      expect(got.some((m) => m.level === "debug")).toBe(false);

      await conn.client.setLoggingLevel("debug");
      got.length = 0;
      await ok(conn.client, "build_get_account");
      await logged("debug", "tool call");

      await conn.client.setLoggingLevel("error");
      got.length = 0;
      await call(conn.client, "build_get_project", { projectId: "no-such-project" });
      await roundTrip(conn.client);
      expect(got).toEqual([]);
      expect(conn.stderr()).not.toMatch(/"level":"debug"/); // stderr keeps LOG_LEVEL
      await conn.close();
    });
  }

  it("answers an unknown tool with a protocol error (-32602), not a tool result", async () => {
    const conn = await connectStdio(sandboxEnv(sandbox));
    await expect(conn.client.callTool({ name: "no_such_tool", arguments: {} })).rejects.toMatchObject({
      code: -32602,
      message: expect.stringMatching(/no_such_tool/),
    });
    // The connection goes on.
    expect(await ok(conn.client, "build_get_account")).toHaveProperty("credits");
    await conn.close();
  });

  it("--read-only keeps only tools that change nothing", async () => {
    const conn = await connectStdio(sandboxEnv(sandbox), ["--read-only"]);
    const { tools } = await conn.client.listTools();
    const names = tools.map((t) => t.name);
    for (const t of tools) expect(t.annotations?.readOnlyHint, t.name).toBe(true);
    for (const gone of [
      "build_launch_project",
      "build_create_project",
      "build_deploy",
      "build_delete_project",
      "build_set_secret",
      "drones_update_alert",
      "sizing_create_try_on",
      "build_start_agent",
      "build_stop_agent",
    ]) {
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

  it("writes nothing but JSON-RPC on stdout, even at LOG_LEVEL=debug, and answers what it cannot serve", async () => {
    const raw = new RawStdio(sandboxEnv(sandbox, { LOG_LEVEL: "debug" }));
    await raw.open();
    raw.request(2, "tools/call", { name: "build_get_account", arguments: {} });
    raw.request(3, "tools/call", { name: "build_get_project", arguments: { projectId: 42 } });
    raw.request(4, "tools/call", { name: "no_such_tool", arguments: {} });
    raw.line("this is not json");
    raw.line(
      JSON.stringify({ jsonrpc: "2.0", id: 6, result: "not a request" }).replace('"jsonrpc":"2.0"', '"jsonrpc":"1.0"'),
    );
    raw.request(5, "tools/list");

    expect((await raw.answer(2)).result.structuredContent).toMatchObject({ credits: sandbox.build.balance().credits });
    const invalid = (await raw.answer(3)).result;
    expect(invalid.isError).toBe(true);
    expect(invalid.content[0].text).toMatch(
      /^Invalid arguments for build_get_project: projectId: .+\. Nothing was sent upstream\.$/,
    );
    // An unknown tool is a protocol error, not a tool result.
    const unknown = await raw.answer(4);
    expect(unknown.error.code).toBe(-32602);
    expect(unknown.error.message).toMatch(/no_such_tool/);
    expect(unknown.result).toBeUndefined();
    const [notJson] = await raw.anonymousErrors(1);
    expect(notJson.error.code).toBe(-32700);
    expect((await raw.answer(6)).error.code).toBe(-32600); // JSON, but not JSON-RPC 2.0: answered with its id
    expect((await raw.answer(5)).result.tools.length).toBeGreaterThan(20); // still answering

    expect(await raw.close()).toBe(0);
    const lines = raw.stdout.split("\n").filter((l) => l.trim());
    expect(lines.length).toBeGreaterThanOrEqual(7);
    for (const line of lines) expect(JSON.parse(line).jsonrpc).toBe("2.0");
    expect(raw.stderr).toMatch(/"level":"debug"/);
    expect(raw.stderr).not.toContain(sandbox.keys.build);
  });

  // 16 and 21 MB lines through JSON parsing and scrubbing: 24-30 s at load 18, past the default 30 s.
  it("serves a 16 MB line (a launch with a 12 MB attachment), drops one over 20 MiB with -32600, and keeps answering", {
    timeout: 90_000,
  }, async () => {
    const raw = new RawStdio(sandboxEnv(sandbox, { BUILD_CONFIRM_SPEND: "never" }));
    await raw.open();
    const content = Buffer.alloc(12_000_000, 0x5a).toString("base64");
    raw.request(2, "tools/call", {
      name: "build_launch_project",
      arguments: {
        projectId: "big-attachment",
        prompt: "A gallery [minutes=5]",
        files: [{ name: "photo.bin", content }],
      },
    });
    const launched = await raw.answer(2, 25_000);
    expect(launched.error).toBeUndefined();
    // Answered as a tool result: the launch itself, or a refusal about credits.
    if (launched.result.isError) expect(launched.result.content[0].text).toMatch(/credit/i);
    else expect(launched.result.structuredContent).toMatchObject({ projectId: "big-attachment" });

    raw.line(`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"pad":"${"x".repeat(21 * 1024 * 1024)}"}}`);
    raw.request(4, "tools/list");
    const [tooLarge] = await raw.anonymousErrors(1, 25_000);
    expect(tooLarge.error.code).toBe(-32600);
    expect(tooLarge.error.message).toMatch(/^Request too large/);
    expect((await raw.answer(4)).result.tools.length).toBeGreaterThan(20);
    expect(raw.lines().some((l) => l.id === 3)).toBe(false); // dropped unread
    expect(await raw.close()).toBe(0);
  });
});

describe("--sandbox mode", () => {
  it("launches a project with wait: true against the built-in simulators, with progress", async () => {
    const conn = await connectStdio(
      { PATH: process.env.PATH ?? "", SANDBOX_TIME_SCALE: "3000", BUILD_POLL_INTERVAL_MS: "50" },
      ["--sandbox"],
    );
    const names = (await conn.client.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(ALL_TOOLS));
    const progress: string[] = [];
    const result = await conn.client.callTool(
      {
        name: "build_launch_project",
        arguments: { projectId: "sandbox-demo", prompt: "A todo app [minutes=6]", wait: true },
      },
      { onprogress: (p) => progress.push(p.message ?? ""), timeout: 30_000 },
    );
    expect(result.isError).toBeFalsy();
    const structured = result.structuredContent as {
      wait: { outcome: string; project: { agentProcessStatus: string } };
    };
    expect(structured.wait.outcome).toBe("done");
    expect(structured.wait.project.agentProcessStatus).toBe("done");
    expect(progress.length).toBeGreaterThan(1);
    const drones = await ok<{ drones: unknown[] }>(conn.client, "drones_list_drones", {});
    expect(drones.drones.length).toBeGreaterThan(0);
    await conn.close();
  });
});
