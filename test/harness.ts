import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { startSandbox, type Sandbox, type SandboxOptions } from "../src/sandbox/index.js";

export const CLI = fileURLToPath(new URL("../dist/cli.js", import.meta.url));

/** Environment that points the server at a sandbox started by the test itself. */
export function sandboxEnv(sandbox: Sandbox, extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: process.env.PATH ?? "",
    BUILD_API_BASE_URL: sandbox.urls.build,
    BUILD_API_KEY: sandbox.keys.build,
    SIZING_API_BASE_URL: sandbox.urls.sizing,
    SIZING_API_KEY: sandbox.keys.sizing,
    DRONES_API_BASE_URL: sandbox.urls.drones,
    DRONES_API_KEY: sandbox.keys.drones,
    BUILD_POLL_INTERVAL_MS: "40",
    LOG_LEVEL: "debug",
    ...extra,
  };
}

export async function testSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  return startSandbox({ timeScale: 3000, ...options });
}

export interface StdioConnection {
  client: Client;
  /** Everything the server wrote on stderr so far. */
  stderr(): string;
  /** Lines the server wrote on stdout that were not JSON-RPC (must stay empty). */
  strayStdout(): string[];
  close(): Promise<void>;
}

/** Spawns `node dist/cli.js` and connects an SDK client over stdio. */
export async function connectStdio(env: Record<string, string>, args: string[] = [], capabilities: ConstructorParameters<typeof Client>[1] = {}): Promise<StdioConnection> {
  const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, ...args], env, stderr: "pipe" });
  let err = "";
  transport.stderr?.on("data", (chunk: Buffer) => {
    err += chunk.toString();
  });
  const stray: string[] = [];
  const client = new Client({ name: "switchboard-tests", version: "1.0.0" }, capabilities);
  // The SDK reports stdout lines that are not JSON-RPC through onerror; collect them.
  client.onerror = (e) => stray.push(String(e.message));
  await client.connect(transport);
  return {
    client,
    stderr: () => err,
    strayStdout: () => stray,
    close: () => client.close(),
  };
}

export interface HttpServerProcess {
  url: string;
  child: ChildProcess;
  stderr(): string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Spawns the server with --transport http on a free port and waits until it is ready. */
export async function spawnHttpServer(env: Record<string, string>, args: string[] = []): Promise<HttpServerProcess> {
  const child = spawn(process.execPath, [CLI, "--transport", "http", "--port", "0", ...args], { env, stdio: ["ignore", "pipe", "pipe"] });
  let err = "";
  let out = "";
  child.stdout!.on("data", (c: Buffer) => (out += c.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start: ${err}`)), 15_000);
    child.stderr!.on("data", (c: Buffer) => {
      err += c.toString();
      const m = /ready on (http:\/\/[^\s"]+\/mcp)/.exec(err);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}: ${err}`));
    });
  });
  return {
    url,
    child,
    stderr: () => err + (out ? `\n[stdout]${out}` : ""),
    stop: (signal = "SIGTERM") =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve(child.exitCode);
        child.once("exit", (code) => resolve(code));
        child.kill(signal);
      }),
  };
}

export async function connectHttp(url: string, headers: Record<string, string> = {}, capabilities: ConstructorParameters<typeof Client>[1] = {}): Promise<Client> {
  const client = new Client({ name: "switchboard-tests", version: "1.0.0" }, capabilities);
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  return client;
}

export function text(result: unknown): string {
  const r = result as CallToolResult;
  return r.content.map((c) => (c.type === "text" ? c.text : "")).join("\n");
}

export async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}

/** Calls a tool and fails the test with its text when it returns isError. */
export async function ok<T = Record<string, unknown>>(client: Client, name: string, args: Record<string, unknown> = {}): Promise<T> {
  const result = await call(client, name, args);
  if (result.isError) throw new Error(`${name} failed: ${text(result)}`);
  return result.structuredContent as T;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * Other work may rebuild dist/ while a test file runs (a developer's watch build, a parallel
 * bench); a server spawned in that instant exits at once ("Connection closed"). Setup retries.
 */
export async function retryStart<T>(start: () => Promise<T>, attempts = 3): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await start();
    } catch (err) {
      if (i >= attempts) throw err;
      await sleep(2000);
    }
  }
}
