// One driver per third-party MCP client library, each used the way its README shows, with its
// default settings (no timeout, no progress option, no retry setting touched). A driver only
// translates: list tools, call a tool, read a resource, get a prompt, close. Whatever the library
// does not offer stays undefined, and the matrix says so.
import { execFile, execFileSync, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createInterface } from "node:readline";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client as Sdk2Client, StreamableHTTPClientTransport as Sdk2Http } from "@modelcontextprotocol/client";
import { StdioClientTransport as Sdk2Stdio } from "@modelcontextprotocol/client/stdio";
import { Client as Sdk1Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport as Sdk1Stdio } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport as Sdk1Http } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { CLIENTS_MODULES, clientVersion as version } from "./installed.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const CLI = join(ROOT, "dist", "cli.js");
const BIN = join(CLIENTS_MODULES, ".bin");

/** Where the server is: a command the client starts over stdio, or a Streamable HTTP URL. */
export type Target = { kind: "stdio"; args: string[]; env: Record<string, string> } | { kind: "http"; url: string };

export interface ToolAnswer {
  text: string;
  isError: boolean;
}

export interface Driver {
  tools(): Promise<string[]>;
  call(name: string, args: Record<string, unknown>): Promise<ToolAnswer>;
  /** The text of the resource's first content. */
  read(uri: string): Promise<string>;
  /** The text of the prompt's first message; undefined when the library has no prompt API. */
  prompt?: (name: string, args: Record<string, string>) => Promise<string>;
  close(): Promise<void>;
}

export interface ClientSpec {
  id: string;
  /** As the table shows it: the package and its pinned version. */
  label: string;
  transports: Array<Target["kind"]>;
  /** Declares elicitation when given a handler; `asked` collects the messages it was asked to confirm. */
  elicitation: boolean;
  /** One line for the table: what a user of this client should know. */
  notes: string;
  /** Why this client cannot run here (its rows are skipped and the table is not compared), if it cannot. */
  unavailable?: string;
  connect(target: Target, asked: string[]): Promise<Driver>;
}

const accept = { action: "accept" as const, content: { confirm: true } };

/** The text of a CallToolResult-like answer, joined. */
function joinText(content: unknown): string {
  if (typeof content === "string") return content;
  const blocks = Array.isArray(content) ? content : [content];
  return blocks
    .map((b) =>
      typeof b === "string"
        ? b
        : b && typeof b === "object" && "text" in b
          ? String((b as { text: unknown }).text)
          : "",
    )
    .join("\n");
}

function fromResult(result: { content?: unknown; isError?: boolean }): ToolAnswer {
  return { text: joinText(result.content ?? []), isError: Boolean(result.isError) };
}

const firstText = (contents: Array<{ text?: string }>) => contents[0]?.text ?? "";
const firstMessage = (messages: Array<{ content: unknown }>) => joinText(messages[0]?.content);

/** The official TypeScript SDK 1.x (still what most libraries embed). */
const sdk1: ClientSpec = {
  id: "sdk1",
  label: `@modelcontextprotocol/sdk ${version("@modelcontextprotocol/sdk")}`,
  transports: ["stdio", "http"],
  elicitation: true,
  notes: "2025-11-25; elicitation when the client declares it and sets a handler",
  async connect(target, asked) {
    const client = new Sdk1Client({ name: "matrix-sdk1", version: "1.0.0" }, { capabilities: { elicitation: {} } });
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      asked.push(req.params.message);
      return accept;
    });
    await client.connect(
      target.kind === "stdio"
        ? new Sdk1Stdio({ command: process.execPath, args: target.args, env: target.env, stderr: "ignore" })
        : new Sdk1Http(new URL(target.url)),
    );
    return sdkDriver(client);
  },
};

function sdkDriver(client: Sdk1Client | Sdk2Client): Driver {
  const c = client as Sdk1Client;
  return {
    tools: async () => (await c.listTools()).tools.map((t) => t.name),
    call: async (name, args) =>
      fromResult((await c.callTool({ name, arguments: args })) as { content?: unknown; isError?: boolean }),
    read: async (uri) => firstText((await c.readResource({ uri })).contents as Array<{ text?: string }>),
    prompt: async (name, args) => firstMessage((await c.getPrompt({ name, arguments: args })).messages),
    close: () => c.close(),
  };
}

/** The official TypeScript SDK 2.x, in the era it negotiates by default or pinned to 2026-07-28. */
function sdk2(era: "legacy" | "modern"): ClientSpec {
  return {
    id: `sdk2-${era}`,
    label:
      `@modelcontextprotocol/client ${version("@modelcontextprotocol/client")} ` +
      `(${era === "modern" ? "2026-07-28" : "2025-11-25"})`,
    transports: ["stdio", "http"],
    elicitation: true,
    notes:
      era === "modern"
        ? "stateless 2026-07-28; a confirmation is an input_required round trip the SDK answers through the " +
          "elicitation handler; over stdio, negotiation (versionNegotiation auto, or this pin) probes " +
          "server/discover on a second, short-lived server process, so the server starts twice per connect"
        : "2025-11-25 session (the default versionNegotiation, legacy: one server start); elicitation when declared",
    async connect(target, asked) {
      const client = new Sdk2Client(
        { name: `matrix-sdk2-${era}`, version: "1.0.0" },
        {
          capabilities: { elicitation: {} },
          ...(era === "modern" ? { versionNegotiation: { mode: { pin: "2026-07-28" } } } : {}),
        },
      );
      client.setRequestHandler("elicitation/create", async (req) => {
        asked.push(req.params.message);
        return accept;
      });
      await client.connect(
        target.kind === "stdio"
          ? new Sdk2Stdio({ command: process.execPath, args: target.args, env: target.env, stderr: "ignore" })
          : new Sdk2Http(new URL(target.url)),
      );
      return sdkDriver(client);
    },
  };
}

/** LangChain's MultiServerMCPClient: tools become LangChain tools; resources through the client. */
const langchain: ClientSpec = {
  id: "langchain",
  label: `@langchain/mcp-adapters ${version("@langchain/mcp-adapters")}`,
  transports: ["stdio", "http"],
  elicitation: false,
  notes:
    "declares no elicitation (spends are not confirmed); prompts only through getClient(), the SDK 1 client underneath",
  async connect(target) {
    const { MultiServerMCPClient } = await import("@langchain/mcp-adapters");
    const server =
      target.kind === "stdio"
        ? {
            transport: "stdio" as const,
            command: process.execPath,
            args: target.args,
            env: target.env,
            stderr: "ignore" as const,
          }
        : { transport: "http" as const, url: target.url };
    const client = new MultiServerMCPClient({ mcpServers: { switchboard: server } });
    const tools = await client.getTools();
    return {
      tools: async () => tools.map((t) => t.name),
      call: async (name, args) => {
        const tool = tools.find((t) => t.name === name);
        if (!tool) throw new Error(`LangChain has no tool ${name}`);
        try {
          return { text: joinText(await tool.invoke(args)), isError: false };
        } catch (err) {
          // The adapter turns an isError result into a ToolException.
          return { text: String((err as Error).message), isError: true };
        }
      },
      read: async (uri) => firstText((await client.readResource("switchboard", uri)) as Array<{ text?: string }>),
      prompt: async (name, args) => {
        const sdk = await client.getClient("switchboard");
        return firstMessage((await sdk!.getPrompt({ name, arguments: args })).messages);
      },
      close: () => client.close(),
    };
  },
};

/** The OpenAI Agents SDK's MCP servers (@openai/agents re-exports these from agents-core). */
const openaiAgents: ClientSpec = {
  id: "openai-agents",
  label: `@openai/agents-core ${version("@openai/agents-core")}`,
  transports: ["stdio", "http"],
  elicitation: false,
  notes: "no prompt API, no abort API (a call cannot be cancelled) and no elicitation",
  async connect(target) {
    const { MCPServerStdio, MCPServerStreamableHttp } = await import("@openai/agents-core");
    const server =
      target.kind === "stdio"
        ? new MCPServerStdio({ command: process.execPath, args: target.args, env: target.env, name: "switchboard" })
        : new MCPServerStreamableHttp({ url: target.url, name: "switchboard" });
    await server.connect();
    return {
      tools: async () => (await server.listTools()).map((t) => t.name),
      call: async (name, args) =>
        fromResult((await server.callToolResult(name, args)) as { content?: unknown; isError?: boolean }),
      read: async (uri) => firstText((await server.readResource(uri)).contents as Array<{ text?: string }>),
      close: () => server.close(),
    };
  },
};

// mcp-use's type declarations pull in DOM types that break this repository's browser test's
// types; it is loaded through a specifier tsc does not follow, with the little it is used for typed here.
// Its main entry also loads its LangChain agent and fails without the optional peer `langchain`;
// the client alone is at mcp-use/client.
const MCP_USE: string = "mcp-use/client";
interface McpUseSession {
  listTools(): Promise<Array<{ name: string }>>;
  callTool(name: string, args: Record<string, unknown>): Promise<{ content?: unknown; isError?: boolean }>;
  readResource(uri: string): Promise<{ contents: unknown }>;
  getPrompt(name: string, args: Record<string, unknown>): Promise<{ messages: unknown }>;
}
interface McpUseModule {
  MCPClient: new (
    config: Record<string, unknown>,
    options: { onElicitation: (params: { message: string }) => Promise<typeof accept> },
  ) => { createSession(name: string): Promise<McpUseSession>; closeAllSessions(): Promise<void> };
}

/** mcp-use's MCPClient (1.x: its 2.x line needs Node 22 and a client package not on the registry). */
const mcpUse: ClientSpec = {
  id: "mcp-use",
  label: `mcp-use ${version("mcp-use")}`,
  transports: ["stdio", "http"],
  elicitation: true,
  notes:
    "1.x only (npm i mcp-use installs 2.x, which has no client); " +
    "import MCPClient from mcp-use/client (the main entry needs the optional peer langchain); " +
    "elicitation through onElicitation; anonymized telemetry unless MCP_USE_ANONYMIZED_TELEMETRY=false (set here)",
  async connect(target, asked) {
    const { MCPClient } = (await import(MCP_USE)) as McpUseModule;
    const server =
      target.kind === "stdio" ? { command: process.execPath, args: target.args, env: target.env } : { url: target.url };
    const client = new MCPClient(
      { mcpServers: { switchboard: server } },
      {
        onElicitation: async (params) => {
          asked.push(params.message);
          return accept;
        },
      },
    );
    const session = await client.createSession("switchboard");
    return {
      tools: async () => (await session.listTools()).map((t) => t.name),
      call: async (name, args) => fromResult(await session.callTool(name, args)),
      read: async (uri) => firstText((await session.readResource(uri)).contents as Array<{ text?: string }>),
      prompt: async (name, args) =>
        firstMessage((await session.getPrompt(name, args)).messages as Array<{ content: unknown }>),
      close: () => client.closeAllSessions(),
    };
  },
};

/** mcp-remote: the stdio-to-HTTP bridge Claude Desktop users put in front of an HTTP server, driven by SDK 1. */
function mcpRemote(configDir: string): ClientSpec {
  return {
    id: "mcp-remote",
    label: `mcp-remote ${version("mcp-remote")} (behind SDK 1)`,
    transports: ["http"],
    elicitation: true,
    notes: "a bridge: what passes is what the stdio client behind it declares and does",
    async connect(target, asked) {
      if (target.kind !== "http") throw new Error("mcp-remote bridges to HTTP only");
      const client = new Sdk1Client(
        { name: "matrix-mcp-remote", version: "1.0.0" },
        { capabilities: { elicitation: {} } },
      );
      client.setRequestHandler(ElicitRequestSchema, async (req) => {
        asked.push(req.params.message);
        return accept;
      });
      await client.connect(
        new Sdk1Stdio({
          command: join(BIN, "mcp-remote"),
          args: [target.url],
          // Its OAuth state would go to ~/.mcp-auth; the server asks for no OAuth, so nothing is written there.
          env: { PATH: process.env.PATH ?? "", MCP_REMOTE_CONFIG_DIR: configDir },
          stderr: "ignore",
        }),
      );
      return sdkDriver(client);
    },
  };
}

/** The Vercel AI SDK's MCP client: tools() for generateText, plus resources and prompts. */
const aiSdk: ClientSpec = {
  id: "ai-sdk",
  label: `@ai-sdk/mcp ${version("@ai-sdk/mcp")}`,
  transports: ["stdio", "http"],
  elicitation: true,
  notes:
    "no client timeout; elicitation when capabilities.elicitation and onElicitationRequest are set; over stdio an " +
    "aborted call sends no cancel, so a stopped wait goes on polling upstream until the cap (45 s)",
  async connect(target, asked) {
    const { createMCPClient, ElicitationRequestSchema } = await import("@ai-sdk/mcp");
    const { Experimental_StdioMCPTransport } = await import("@ai-sdk/mcp/mcp-stdio");
    const client = await createMCPClient({
      transport:
        target.kind === "stdio"
          ? new Experimental_StdioMCPTransport({
              command: process.execPath,
              args: target.args,
              env: target.env,
              stderr: "ignore",
            })
          : { type: "http", url: target.url },
      capabilities: { elicitation: {} },
    });
    client.onElicitationRequest(ElicitationRequestSchema, async (req) => {
      asked.push(req.params.message);
      return accept;
    });
    const tools = await client.tools();
    return {
      tools: async () => Object.keys(tools),
      call: async (name, args) => {
        const tool = tools[name] as unknown as { execute?: (input: unknown, options: unknown) => Promise<unknown> };
        // What generateText does with a model's tool call.
        return fromResult(
          (await tool.execute!(args, { toolCallId: "matrix", messages: [] })) as {
            content?: unknown;
            isError?: boolean;
          },
        );
      },
      read: async (uri) => firstText((await client.readResource({ uri })).contents as Array<{ text?: string }>),
      prompt: async (name, args) => firstMessage((await client.getPrompt({ name, arguments: args })).messages),
      close: () => client.close(),
    };
  },
};

/**
 * The MCP Inspector's CLI (1.x, the one that runs on Node 20): one process per request, as a user
 * types it. Over stdio every call starts a new server, so its stdio target points the server at a
 * sandbox that outlives the calls, as a real account's upstream would.
 */
const INSPECTOR_PKG = join(CLIENTS_MODULES, "@modelcontextprotocol", "inspector-cli");
const inspectorCli: ClientSpec = {
  id: "inspector-cli",
  label: `@modelcontextprotocol/inspector-cli ${version("@modelcontextprotocol/inspector-cli")}`,
  transports: ["stdio", "http"],
  elicitation: false,
  notes: "one process per request; no elicitation; exits 0 on an isError result",
  async connect(target) {
    // It hands its own environment to the server it starts.
    const where = target.kind === "stdio" ? [process.execPath, ...target.args] : [target.url];
    const env = target.kind === "stdio" ? { ...process.env, ...target.env } : process.env;
    const run = async (args: string[]) => {
      const out = await new Promise<string>((resolve, reject) => {
        // Run from its build/ directory (modelcontextprotocol/inspector#1334).
        execFile(
          process.execPath,
          [join(INSPECTOR_PKG, "build", "index.js"), ...where, ...args],
          { cwd: join(INSPECTOR_PKG, "build"), env, maxBuffer: 16 << 20 },
          (err, stdout, stderr) =>
            err ? reject(new Error(`inspector-cli ${args.join(" ")}: ${stderr || err.message}`)) : resolve(stdout),
        );
      });
      return JSON.parse(out) as Record<string, any>;
    };
    return {
      tools: async () => ((await run(["--method", "tools/list"])).tools as Array<{ name: string }>).map((t) => t.name),
      call: async (name, args) => {
        const toolArgs = Object.entries(args).map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`);
        return fromResult(
          await run([
            "--method",
            "tools/call",
            "--tool-name",
            name,
            ...(toolArgs.length ? ["--tool-arg", ...toolArgs] : []),
          ]),
        );
      },
      read: async (uri) => firstText((await run(["--method", "resources/read", "--uri", uri])).contents),
      prompt: async (name, args) =>
        firstMessage(
          (
            await run([
              "--method",
              "prompts/get",
              "--prompt-name",
              name,
              ...Object.entries(args).flatMap(([k, v]) => ["--prompt-args", `${k}=${v}`]),
            ])
          ).messages,
        ),
      close: async () => undefined,
    };
  },
};

/**
 * The official Python SDK (`mcp` 2.x, PyPI), in a virtual environment of this package:
 * test/clients/.venv, made by .ci/run (`python3 -m venv test/clients/.venv && test/clients/.venv/bin/pip
 * install -r test/clients/python/requirements.txt`). test/clients/python/driver.py drives it, one JSON
 * line per operation.
 */
const PYTHON = join(ROOT, "test", "clients", ".venv", "bin", "python");
const PYTHON_DRIVER = join(ROOT, "test", "clients", "python", "driver.py");
function pythonMcpVersion(): string | undefined {
  if (!existsSync(PYTHON)) return undefined;
  try {
    const script = "import importlib.metadata as m; print(m.version('mcp'))";
    return execFileSync(PYTHON, ["-c", script], { encoding: "utf8" }).trim();
  } catch {
    return undefined;
  }
}
const PYTHON_MCP = pythonMcpVersion();

const pythonMcp: ClientSpec = {
  id: "python-mcp",
  label: `mcp ${PYTHON_MCP ?? "2.x"} (Python)`,
  transports: ["stdio", "http"],
  elicitation: true,
  notes:
    "mcp.Client with its defaults: mode auto probes server/discover and lands on 2026-07-28; a confirmation " +
    "is an input_required round trip answered through elicitation_callback",
  ...(PYTHON_MCP
    ? {}
    : {
        unavailable:
          "the Python mcp SDK is not installed in test/clients/.venv (python3 -m venv test/clients/.venv && " +
          "test/clients/.venv/bin/pip install -r test/clients/python/requirements.txt)",
      }),
  async connect(target, asked) {
    const where =
      target.kind === "stdio"
        ? { kind: "stdio", command: process.execPath, args: target.args, env: target.env }
        : { kind: "http", url: target.url };
    const child = spawn(PYTHON!, [PYTHON_DRIVER, JSON.stringify(where)], { stdio: ["pipe", "pipe", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-4000);
    });
    const waiting: Array<{ resolve: (v: unknown) => void; reject: (e: Error) => void }> = [];
    const lines = createInterface({ input: child.stdout });
    lines.on("line", (line) => {
      const msg = JSON.parse(line) as { ok?: unknown; error?: string; asked?: string };
      if (msg.asked !== undefined) asked.push(msg.asked);
      else if (msg.error !== undefined) waiting.shift()?.reject(new Error(msg.error));
      else waiting.shift()?.resolve(msg.ok);
    });
    child.once("exit", (code) => {
      for (const w of waiting.splice(0)) w.reject(new Error(`the Python driver exited (${code}):\n${stderr}`));
    });
    const next = () => new Promise<unknown>((resolve, reject) => waiting.push({ resolve, reject }));
    const send = (req: Record<string, unknown>) => {
      const answer = next();
      child.stdin.write(`${JSON.stringify(req)}\n`);
      return answer;
    };
    await next(); // connected
    return {
      tools: async () => (await send({ op: "tools" })) as string[],
      call: async (name, args) => (await send({ op: "call", name, args })) as ToolAnswer,
      read: async (uri) => (await send({ op: "read", uri })) as string,
      prompt: async (name, args) => (await send({ op: "prompt", name, args })) as string,
      close: async () => {
        await send({ op: "close" }).catch(() => undefined);
        child.stdin.end();
        if (child.exitCode === null) await new Promise((resolve) => child.once("exit", resolve));
      },
    };
  },
};

export function clientSpecs(mcpRemoteConfigDir: string): ClientSpec[] {
  return [
    sdk1,
    sdk2("legacy"),
    sdk2("modern"),
    langchain,
    openaiAgents,
    mcpUse,
    mcpRemote(mcpRemoteConfigDir),
    aiSdk,
    inspectorCli,
    pythonMcp,
  ];
}

export { CLI };
