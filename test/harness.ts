import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type Socket } from "node:net";
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Client, StreamableHTTPClientTransport, type CallToolResult } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import type { ServiceModule } from "../src/core/service/service.js";
import { sandboxEnv as serviceVariables } from "../src/launch.js";
import { startSandbox, type Sandbox, type SandboxOptions } from "../src/sandbox/index.js";
import type { SIMULATORS } from "../src/sandbox/registry.js";
import type { AnySimulator } from "../src/sandbox/simulator.js";
import { SERVICES } from "../src/services/registry.js";

export const CLI = fileURLToPath(new URL("../dist/cli.js", import.meta.url));

/**
 * Which protocol era the end-to-end suites speak: vitest runs them once per era (vitest.config.ts,
 * projects e2e-2025 and e2e-2026). 2025: the initialize handshake (2025-11-25). 2026: an SDK v2
 * client pinned to 2026-07-28 (server/discover, per-request _meta, input_required, listen).
 */
export type Era = "legacy" | "modern";
export const ERA: Era = process.env.SWITCHBOARD_ERA === "modern" ? "modern" : "legacy";
export const MODERN = ERA === "modern";

type ClientOptions = NonNullable<ConstructorParameters<typeof Client>[1]>;

/** A client of the suite's era (or the one asked for). */
export function newClient(options: ClientOptions = {}, era: Era = ERA): Client {
  return new Client(
    { name: "switchboard-tests", version: "1.0.0" },
    { ...options, ...(era === "modern" ? { versionNegotiation: { mode: { pin: "2026-07-28" } } } : {}) },
  );
}

/**
 * Environment that points the server at a sandbox started by the test itself: every service of
 * the registry (or of `services`) at its simulator.
 */
export function sandboxEnv(
  sandbox: Pick<Sandbox, "urls" | "keys">,
  extra: Record<string, string> = {},
  services?: readonly ServiceModule<any>[],
): Record<string, string> {
  return {
    PATH: process.env.PATH ?? "",
    ...serviceVariables(sandbox, services),
    BUILD_POLL_INTERVAL_MS: "40",
    LOG_LEVEL: "debug",
    MCP_STATE_DIR: freshStateDir(),
    ...extra,
  };
}

/**
 * A state directory of its own (the spend ledger's files): a server spawned by a test must not
 * remember the paid calls of another test, or of an earlier run, in the user's ~/.local/state.
 */
export function freshStateDir(): string {
  return mkdtempSync(join(tmpdir(), "sb-state-"));
}

const isolated = (env: Record<string, string>) =>
  env.MCP_STATE_DIR ? env : { ...env, MCP_STATE_DIR: freshStateDir() };

/** Every service's base URL at its simulator, and no key: per-user mode, where callers bring the keys. */
export function sandboxUrlsEnv(sandbox: Pick<Sandbox, "urls" | "keys">): Record<string, string> {
  const keys = new Set(SERVICES.map((s) => s.apiKeyVar));
  return Object.fromEntries(Object.entries(serviceVariables(sandbox)).filter(([name]) => !keys.has(name)));
}

/**
 * The build simulator's stale reads (details cached 2 s, a 1 s lag after deploy, recover, import
 * and restart) and its 60-minute run budget are off unless a test sets them: most suites assume
 * fresh reads and [minutes=100000] runs that never end. test/e2e/builder-traps turns them on.
 */
const TEST_BUILD_OPTIONS = { detailsCacheMs: 0, startLagMs: 0, runBudgetMinutes: Number.POSITIVE_INFINITY };

/** The sandbox's options with the tests' time scale (3000) unless one is given. */
export async function testSandbox<T extends readonly AnySimulator[] = typeof SIMULATORS>(
  options: Partial<SandboxOptions<T>> = {},
): Promise<Sandbox<T>> {
  const build = { ...TEST_BUILD_OPTIONS, ...(options as SandboxOptions).build };
  return startSandbox<T>({ timeScale: 3000, ...options, build } as SandboxOptions<T>);
}

export interface StdioConnection {
  client: Client;
  /** Everything the server wrote on stderr so far. */
  stderr(): string;
  /** Lines the server wrote on stdout that were not JSON-RPC (must stay empty). */
  strayStdout(): string[];
  close(): Promise<void>;
}

/** Every toolset unless a test names its own: the suites exercise tools that are off by default. */
const withToolsets = (args: string[]) => (args.includes("--toolsets") ? args : [...args, "--toolsets", "all"]);

/** Spawns `node dist/cli.js` and connects an SDK client of the suite's era over stdio. */
export async function connectStdio(
  env: Record<string, string>,
  args: string[] = [],
  options: ClientOptions = {},
  era: Era = ERA,
): Promise<StdioConnection> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, ...withToolsets(args)],
    env: isolated(env),
    stderr: "pipe",
  });
  let err = "";
  transport.stderr?.on("data", (chunk: Buffer) => {
    err += chunk.toString();
  });
  const stray: string[] = [];
  const client = newClient(options, era);
  // The SDK reports stdout lines that are not JSON-RPC through onerror; collect them.
  client.onerror = (e) => stray.push(String(e.message));
  await client.connect(transport);
  return { client, stderr: () => err, strayStdout: () => stray, close: () => client.close() };
}

export interface HttpServerProcess {
  url: string;
  child: ChildProcess;
  stderr(): string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Spawns the server with --transport http on a free port and waits until it is ready. No balancer
 * holds its connections: a SIGTERM waits 2 s, not MCP_DRAIN_IDLE_MS's 6 s, for idle ones to close.
 */
export async function spawnHttpServer(env: Record<string, string>, args: string[] = []): Promise<HttpServerProcess> {
  const child = spawn(process.execPath, [CLI, "--transport", "http", "--port", "0", ...withToolsets(args)], {
    env: isolated({ MCP_DRAIN_IDLE_MS: "2000", ...env }),
    stdio: ["ignore", "pipe", "pipe"],
  });
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

export async function connectHttp(
  url: string,
  headers: Record<string, string> = {},
  options: ClientOptions = {},
  era: Era = ERA,
): Promise<Client> {
  const client = newClient(options, era);
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
export async function ok<T = Record<string, unknown>>(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
): Promise<T> {
  const result = await call(client, name, args);
  if (result.isError) throw new Error(`${name} failed: ${text(result)}`);
  return result.structuredContent as T;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * One request and its answer on `client`'s connection (2025: ping; 2026-07-28, which has no ping:
 * server/discover). Over stdio the server's messages arrive in the order it wrote them, so whatever
 * it sent before that answer has reached the client's handlers by then: a check that a notification
 * did NOT come waits for this, not for a fixed time. (A check that nothing comes within a span,
 * such as before a first request, still waits that span.)
 */
export async function roundTrip(client: Client): Promise<void> {
  if (client.getNegotiatedProtocolVersion() === "2026-07-28") await client.discover();
  else await client.ping();
}

/**
 * Waits until `count()` (requests an upstream saw, say) stays the same for `spanMs`: a poll that
 * must stop is checked without guessing how late, under load, its last request lands. Fails when
 * no such span comes within `timeoutMs`.
 */
export async function settles(count: () => number, spanMs: number, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const at = count();
    await sleep(spanMs);
    if (count() === at) return;
    if (Date.now() > deadline) throw new Error(`still counting after ${timeoutMs} ms: ${count()}`);
  }
}

/** Polls `probe` until `accept` holds, or fails with the last value. */
export async function until<T>(probe: () => Promise<T>, accept: (v: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (accept(v)) return v;
    if (Date.now() > deadline) throw new Error(`condition not met: ${JSON.stringify(v)}`);
    await sleep(25);
  }
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

type Json = Record<string, any>;

/**
 * A raw 2026-07-28 request: the envelope in `_meta` (after any `_meta` the params bring), the
 * standard headers with `Mcp-Name` from the params' name, uri or task id, then `options.headers`.
 */
export function request2026(
  method: string,
  params: Json = {},
  options: { capabilities?: Json; headers?: Record<string, string> } = {},
): { id: number; headers: Record<string, string>; body: string } {
  const name = params.name ?? params.uri ?? params.taskId;
  const id = Math.floor(Math.random() * 1e9);
  const message = {
    jsonrpc: "2.0",
    id,
    method,
    params: {
      ...params,
      _meta: {
        ...params._meta,
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": { name: "raw-2026", version: "1.0.0" },
        "io.modelcontextprotocol/clientCapabilities": options.capabilities ?? {},
      },
    },
  };
  const headers = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "mcp-protocol-version": "2026-07-28",
    "mcp-method": method,
    ...(name !== undefined ? { "mcp-name": String(name) } : {}),
    ...options.headers,
  };
  return { id, headers, body: JSON.stringify(message) };
}

/**
 * One raw 2026-07-28 request over HTTP (`request2026`), answered as JSON or SSE: for what an SDK
 * client does not expose, such as one task's tasks/get from anywhere.
 */
export async function rpc2026(
  url: string,
  method: string,
  params: Json = {},
  options: { capabilities?: Json; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: Json }> {
  const { id, headers, body } = request2026(method, params, options);
  const res = await fetch(url, { method: "POST", headers, body });
  const text = await res.text();
  if (res.headers.get("content-type")?.includes("text/event-stream")) {
    for (const line of text.split("\n")) {
      if (!line.startsWith("data:")) continue;
      const data = JSON.parse(line.slice(5)) as Json;
      if (data.id === id) return { status: res.status, body: data };
    }
    throw new Error(`no answer in the stream: ${text}`);
  }
  return { status: res.status, body: JSON.parse(text) as Json };
}

/** A raw client socket (node:net) that records what it received and when the server closed it. */
export interface RawSocket {
  socket: Socket;
  data(): string;
  openedAt: number;
  closedAt?: number;
  closed: Promise<void>;
}

const rawSockets: Socket[] = [];

/** Opens a raw socket to a loopback port and, once connected, writes `send`. */
export function openRaw(port: number, send?: string | Buffer): Promise<RawSocket> {
  return new Promise((resolve) => {
    let received = "";
    let closeNow!: () => void;
    const socket = connect(port, "127.0.0.1");
    rawSockets.push(socket);
    const r: RawSocket = {
      socket,
      data: () => received,
      openedAt: 0,
      closed: new Promise<void>((c) => (closeNow = c)),
    };
    socket.on("data", (c) => (received += c.toString("latin1")));
    socket.on("error", () => undefined);
    socket.once("close", () => {
      r.closedAt = performance.now();
      closeNow();
    });
    socket.once("connect", () => {
      r.openedAt = performance.now();
      if (send) socket.write(send);
      resolve(r);
    });
  });
}

/** Destroys every raw socket opened so far (an afterAll). */
export function destroyRawSockets(): void {
  rawSockets.splice(0).forEach((s) => s.destroy());
}

/** The HTTP status a raw socket received, or 0. */
export const rawStatus = (r: RawSocket) => Number(/^HTTP\/1\.1 (\d{3})/.exec(r.data())?.[1] ?? 0);
