// Drives the built server with the official MCP Inspector CLI (@modelcontextprotocol/inspector-cli),
// over stdio and over Streamable HTTP, the way a user checks a server by hand:
//   mcp-inspector-cli --cli node dist/cli.js --sandbox --method tools/list
//   mcp-inspector-cli --cli http://127.0.0.1:PORT/mcp --method tools/call --tool-name ...
// The inspector exits 0 even when a tool returns isError, so every call checks the JSON it prints.
// Needs `npm run build` first, and the client package (test/clients/installed.ts).
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CONTRACT_TOOLS } from "../contract.js";
import { CLIENTS_MODULES, clientsMissing, describeClients } from "./installed.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const CLI = join(ROOT, "dist", "cli.js");
const INSPECTOR_PKG = join(CLIENTS_MODULES, "@modelcontextprotocol", "inspector-cli");
// The `mcp-inspector-cli` bin (build/cli.js) prints a deprecation banner and re-spawns build/index.js
// with the same arguments; most checks call build/index.js directly to save one Node start per call
// on slow CI machines, and one check goes through the bin itself.
const INSPECTOR_BIN = join(CLIENTS_MODULES, ".bin", "mcp-inspector-cli");
const INSPECTOR_MAIN = join(INSPECTOR_PKG, "build", "index.js");
// inspector-cli 1.0.3 decides where its own package.json is with a check relative to the working
// directory (upstream issue modelcontextprotocol/inspector#1334), so it crashes with "Cannot find
// module .../@modelcontextprotocol/package.json" when run from the project root. Running it from
// its build directory is the documented workaround; every path we pass is absolute.
const INSPECTOR_CWD = join(INSPECTOR_PKG, "build");

// Simulated ms per real ms in the sandbox; nothing here waits on a build, it only keeps timers short.
const ENV = { SANDBOX_TIME_SCALE: "3000", LOG_LEVEL: "warn" };

const CONTRACT_TOOL_NAMES = Object.values(CONTRACT_TOOLS).flat();

interface InspectorRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the inspector CLI on `<target...> <method args...>` and returns what it printed.
 * `viaBin` goes through `mcp-inspector-cli --cli -e KEY=VALUE ...`, the command users type.
 */
function inspector(target: string[], methodArgs: string[], viaBin = false): Promise<InspectorRun> {
  const entry = viaBin
    ? [INSPECTOR_BIN, "--cli", ...Object.entries(ENV).flatMap(([k, v]) => ["-e", `${k}=${v}`])]
    : [INSPECTOR_MAIN];
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...entry, ...target, ...methodArgs],
      { cwd: INSPECTOR_CWD, timeout: RUN_DEADLINE_MS, maxBuffer: 16 * 1024 * 1024, env: { ...process.env, ...ENV } },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === "number" ? err.code : null) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** Like inspector(), but fails unless it exited 0 and printed one JSON document. */
async function inspectJson<T = any>(target: string[], methodArgs: string[], viaBin = false): Promise<T> {
  const run = await inspector(target, methodArgs, viaBin);
  const context =
    `mcp-inspector-cli ${methodArgs.join(" ")} exited ${run.code}\n` +
    `stdout:\n${run.stdout.slice(0, 2000)}\nstderr:\n${run.stderr.slice(-2000)}`;
  expect(run.code, context).toBe(0);
  try {
    return JSON.parse(run.stdout) as T;
  } catch {
    throw new Error(`inspector output is not JSON: ${context}`);
  }
}

interface ToolResult {
  content: Array<{ type: string; text?: string }>;
  structuredContent?: any;
  isError?: boolean;
}

/** tools/call through the inspector; fails with the tool's text when it returned isError. */
async function callTool(target: string[], name: string, args: Record<string, unknown> = {}): Promise<ToolResult> {
  const toolArgs = Object.entries(args).map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`);
  const result = await inspectJson<ToolResult>(target, [
    "--method",
    "tools/call",
    "--tool-name",
    name,
    ...(toolArgs.length ? ["--tool-arg", ...toolArgs] : []),
  ]);
  const text = textOf(result);
  expect(result.isError, `${name} returned isError: ${text}`).toBeFalsy();
  expect(text.length, `${name} has no text rendering`).toBeGreaterThan(0);
  expect(result.structuredContent, `${name} has no structuredContent`).toBeTypeOf("object");
  return result;
}

function textOf(result: ToolResult): string {
  return (result.content ?? []).map((c) => (c.type === "text" ? (c.text ?? "") : "")).join("\n");
}

beforeAll(() => {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` first`);
  if (!clientsMissing() && !existsSync(INSPECTOR_MAIN)) throw new Error(`${INSPECTOR_MAIN} is missing`);
});

function checkToolList(tools: any[]): void {
  const names = tools.map((t) => t.name);
  expect(names).toEqual(expect.arrayContaining(CONTRACT_TOOL_NAMES));
  for (const tool of tools) {
    expect(tool.title ?? tool.annotations?.title, `${tool.name} title`).toBeTruthy();
    expect(tool.description, `${tool.name} description`).toBeTruthy();
    expect(tool.outputSchema?.type, `${tool.name} outputSchema`).toBe("object");
    for (const hint of ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"]) {
      expect(typeof tool.annotations?.[hint], `${tool.name} annotations.${hint}`).toBe("boolean");
    }
  }
}

// Each check spawns its own inspector (and, over stdio, its own server), so they run concurrently.
/**
 * Each run starts three node processes (the CLI, its child, our server) and the checks ran five at
 * a time (three now: maxConcurrency in vitest.config.ts): on two loaded cores one run took 28-83 s,
 * so a check of two runs missed a 45 s timeout.
 */
const RUN_DEADLINE_MS = 180_000;
const CHECK_TIMEOUT_MS = 2 * RUN_DEADLINE_MS + 10_000;

describeClients("MCP Inspector CLI over stdio", { concurrent: true, timeout: CHECK_TIMEOUT_MS }, () => {
  const target = () => ["node", CLI, "--sandbox", "--toolsets", "all"];

  it("inspector --method tools/list: every tool of the contract, with title, annotations, output schema", async () => {
    const { tools } = await inspectJson<{ tools: any[] }>(target(), ["--method", "tools/list"], true);
    checkToolList(tools);
  });

  it("calls build_get_account", async () => {
    const r = await callTool(target(), "build_get_account");
    expect(r.structuredContent.credits).toBeTypeOf("number");
    expect(textOf(r)).toMatch(/credits/i);
  });

  it("calls sizing_get_catalog, then sizing_recommend_size on an item it listed", async () => {
    const catalog = await callTool(target(), "sizing_get_catalog", { category: "tops" });
    const items: any[] = catalog.structuredContent.items;
    expect(items.length).toBeGreaterThan(0);
    expect(items.every((i) => i.category === "tops")).toBe(true);
    const rec = await callTool(target(), "sizing_recommend_size", {
      clothing_item_id: items[0]._id,
      measurements: { chest: 90, waist: 72, hips: 98 },
    });
    expect(rec.structuredContent).toMatchObject({ clothing_item_id: items[0]._id });
    expect(rec.structuredContent.recommended_size).toBeTruthy();
  });

  it("calls drones_fleet_summary", async () => {
    const r = await callTool(target(), "drones_fleet_summary");
    const s = r.structuredContent;
    expect(s.totalDrones).toBeGreaterThan(0);
    const counted = Object.values(s.byStatus as Record<string, number>).reduce((a, b) => a + b, 0);
    expect(counted).toBe(s.totalDrones);
  });

  it("calls drones_find_nearest from Madrid (numbers through --tool-arg)", async () => {
    const r = await callTool(target(), "drones_find_nearest", { latitude: 40.4168, longitude: -3.7038, limit: 3 });
    const drones: any[] = r.structuredContent.drones;
    expect(drones).toHaveLength(3);
    const distances = drones.map((d) => d.distanceKm);
    expect(distances).toEqual([...distances].sort((a, b) => a - b));
    expect(distances[0]).toBeLessThan(50); // the sandbox has drones based in Madrid
  });

  it("lists resources and reads one drone by the URI it lists", async () => {
    const { resources } = await inspectJson<{ resources: any[] }>(target(), ["--method", "resources/list"]);
    const uris = resources.map((r) => r.uri as string);
    expect(uris).toEqual(expect.arrayContaining(["build://account", "build://credit-costs"]));
    // Data resources are JSON; the MCP Apps views (ui://) are HTML.
    expect(
      resources.every(
        (r) => r.mimeType === (String(r.uri).startsWith("ui://") ? "text/html;profile=mcp-app" : "application/json"),
      ),
    ).toBe(true);
    const droneUri = uris.find((u) => u.startsWith("drones://drones/"));
    expect(droneUri, `no drones://drones/ resource in ${uris.slice(0, 20).join(", ")}`).toBeTruthy();
    const { contents } = await inspectJson<{ contents: any[] }>(target(), [
      "--method",
      "resources/read",
      "--uri",
      droneUri!,
    ]);
    expect(contents[0].mimeType).toBe("application/json");
    expect(JSON.parse(contents[0].text)._id).toBe(droneUri!.slice("drones://drones/".length));
  });

  it("gets the launch_and_track prompt with an idea", async () => {
    const idea = "a booking app for a dog grooming salon";
    const { messages } = await inspectJson<{ messages: any[] }>(target(), [
      "--method",
      "prompts/get",
      "--prompt-name",
      "launch_and_track",
      "--prompt-args",
      `idea=${idea}`,
    ]);
    expect(messages.length).toBeGreaterThan(0);
    const text = messages.map((m) => m.content?.text ?? "").join("\n");
    expect(text).toContain(idea);
    expect(text).toContain("build_launch_project");
  });

  it("shows an upstream failure as an isError result naming the HTTP status (the inspector exits 0)", async () => {
    const r = await inspectJson<ToolResult>(target(), [
      "--method",
      "tools/call",
      "--tool-name",
      "drones_get_drone",
      "--tool-arg",
      "id=no-such-drone",
    ]);
    expect(r.isError).toBe(true);
    expect(textOf(r)).toMatch(/404/);
  });
});

describeClients("MCP Inspector CLI over Streamable HTTP", {}, () => {
  const TOKEN = "inspector-e2e-token";
  let server: ChildProcess | undefined;
  let url = "";
  let stderr = "";
  const withAuth = () => [url, "--transport", "http", "--header", `Authorization: Bearer ${TOKEN}`];

  beforeAll(async () => {
    server = spawn(process.execPath, [CLI, "--transport", "http", "--port", "0", "--sandbox", "--toolsets", "all"], {
      env: { ...process.env, ...ENV, LOG_LEVEL: "info", MCP_HTTP_TOKEN: TOKEN },
      stdio: ["ignore", "ignore", "pipe"],
    });
    url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`server did not start:\n${stderr}`)), 15_000);
      server!.stderr!.on("data", (chunk: Buffer) => {
        stderr += chunk.toString();
        const m = /ready on (http:\/\/[^\s"]+\/mcp)/.exec(stderr);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]);
        }
      });
      server!.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`server exited with ${code}:\n${stderr}`));
      });
    });
  });

  afterAll(async () => {
    if (!server || server.exitCode !== null) return;
    await new Promise((resolve) => {
      server!.once("exit", resolve);
      server!.kill("SIGTERM");
    });
  });

  describe("one server, one inspector per check", { concurrent: true, timeout: CHECK_TIMEOUT_MS }, () => {
    it("is refused without the bearer token (MCP_HTTP_TOKEN)", async () => {
      const run = await inspector([url], ["--method", "tools/list"]);
      expect(run.code, run.stdout).not.toBe(0);
      expect(run.stderr).toMatch(/401|unauthori[sz]ed/i);
    });

    it("lists the tools of the contract", async () => {
      const { tools } = await inspectJson<{ tools: any[] }>(withAuth(), ["--method", "tools/list"]);
      checkToolList(tools);
    });

    it("calls build_get_account and reads build://account", async () => {
      const r = await callTool(withAuth(), "build_get_account");
      const { contents } = await inspectJson<{ contents: any[] }>(withAuth(), [
        "--method",
        "resources/read",
        "--uri",
        "build://account",
      ]);
      expect(contents[0]).toMatchObject({ uri: "build://account", mimeType: "application/json" });
      expect(JSON.parse(contents[0].text).credits).toBe(r.structuredContent.credits);
    });

    it("calls drones_fleet_summary", async () => {
      const r = await callTool(withAuth(), "drones_fleet_summary");
      expect(r.structuredContent.totalDrones).toBeGreaterThan(0);
    });

    it("lists the resource templates of the contract", async () => {
      const { resourceTemplates } = await inspectJson<{ resourceTemplates: any[] }>(withAuth(), [
        "--method",
        "resources/templates/list",
      ]);
      expect(resourceTemplates.map((t) => t.uriTemplate)).toEqual(
        expect.arrayContaining([
          "build://projects/{projectId}",
          "sizing://catalog/{id}",
          "drones://drones/{id}",
          "drones://missions/{id}",
          "drones://alerts/{id}",
        ]),
      );
    });

    it("gets the fleet_status_report prompt", async () => {
      const { messages } = await inspectJson<{ messages: any[] }>(withAuth(), [
        "--method",
        "prompts/get",
        "--prompt-name",
        "fleet_status_report",
        "--prompt-args",
        "near=Madrid",
      ]);
      const text = messages.map((m) => m.content?.text ?? "").join("\n");
      expect(text).toContain("drones_fleet_summary");
      expect(text).toContain("Madrid");
    });
  });
});
