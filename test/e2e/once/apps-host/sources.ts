import { Client, StreamableHTTPClientTransport, type CallToolResult } from "@modelcontextprotocol/client";
import { startSandbox, type Sandbox } from "../../../../src/sandbox/index.js";
import { sandboxEnv, spawnHttpServer, type HttpServerProcess } from "../../../harness.js";

/**
 * Where the browser test gets (a) a view's HTML and (b) tool results: from the running server,
 * over HTTP, like a host: (a) resources/read of ui://switchboard/<name>.html, (b) tools/call,
 * against the sandbox. The build simulator's clock is the test's, so a run can be moved along.
 */

export type ViewName = "fleet-map" | "build-console" | "fit-card";
export type Json = Record<string, unknown>;
export type CallTool = (name: string, args: Json) => Promise<CallToolResult>;

export interface SandboxTools {
  /** (b) A tool result, as the server's tools/call returns it. */
  callTool: CallTool;
  /** (a) The HTML of a view, as the server's ui:// resource holds it. */
  loadViewHtml(name: ViewName): Promise<string>;
  /** The view resource's metadata as listed (its CSP and border preference). */
  viewMeta(name: ViewName): Promise<Json | undefined>;
  sandbox: Sandbox;
  /** Moves the build simulator's clock forward (ms of simulated time). */
  advance(ms: number): void;
  close(): Promise<void>;
}

export async function sandboxTools(): Promise<SandboxTools> {
  let clock = Date.now();
  const sandbox = await startSandbox({ timeScale: 1, build: { now: () => clock } });
  const server: HttpServerProcess = await spawnHttpServer(sandboxEnv(sandbox, { LOG_LEVEL: "info" }));
  const client = new Client(
    { name: "apps-test-host", version: "1.0.0" },
    {
      capabilities: {
        extensions: { "io.modelcontextprotocol/ui": { mimeTypes: ["text/html;profile=mcp-app"] } },
      } as never,
    },
  );
  await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
  return {
    callTool: async (name, args) => (await client.callTool({ name, arguments: args })) as CallToolResult,
    loadViewHtml: async (name) => {
      const { contents } = await client.readResource({ uri: `ui://switchboard/${name}.html` });
      const content = contents[0] as { text?: string; mimeType?: string };
      if (content.mimeType !== "text/html;profile=mcp-app" || typeof content.text !== "string")
        throw new Error(`ui://switchboard/${name}.html is not an MCP Apps view`);
      return content.text;
    },
    viewMeta: async (name) => {
      const { resources } = await client.listResources();
      return resources.find((r) => r.uri === `ui://switchboard/${name}.html`)?._meta as Json | undefined;
    },
    sandbox,
    advance: (ms) => {
      clock += ms;
    },
    close: async () => {
      await client.close();
      await server.stop();
      await sandbox.close();
    },
  };
}

// ---- synthetic data ----

const STATUSES = ["active", "active", "active", "idle", "idle", "charging", "maintenance", "offline"];

/** A deterministic fleet of n drones over Europe, in the drones_list_drones output shape. */
export function syntheticFleet(n: number): Json {
  let seed = 42;
  const rand = () => (seed = (seed * 1664525 + 1013904223) % 4294967296) / 4294967296;
  const drones = Array.from({ length: n }, (_, i) => ({
    _id: `synthetic${String(i).padStart(8, "0")}`,
    name: `Drone-${String(i + 1).padStart(4, "0")}`,
    status: STATUSES[Math.floor(rand() * STATUSES.length)],
    battery_level: Math.round(rand() * 100),
    latitude: Math.round((36 + rand() * 24) * 1e5) / 1e5,
    longitude: Math.round((-9 + rand() * 33) * 1e5) / 1e5,
    model: "Synthetic X1",
  }));
  return { drones, total: n, matched: n, offset: 0, count: n, omitted: 0 };
}

const PREVIEW_TITLE_BAR = '<rect x="24" y="84" width="360" height="28" rx="6" fill="#d9cde8"/>';
const PREVIEW_SUBTITLE_BAR = '<rect x="24" y="128" width="280" height="16" rx="4" fill="#e6dcef"/>';
const PREVIEW_CARDS = Array.from(
  { length: 12 },
  (_, i) => `<rect x="${24 + (i % 6) * 98}" y="${172 + Math.floor(i / 6) * 84}" width="88" height="72" rx="8"/>`,
).join("");

/** Stands in for the preview screenshot the build service hosts (served by the test, never fetched). */
export const PREVIEW_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="640" height="360" viewBox="0 0 640 360">
<rect width="640" height="360" fill="#f5efe8"/><rect width="640" height="56" fill="#3b2f5c"/>
<text x="24" y="36" font-family="sans-serif" font-size="22" fill="#fff">Salon booking</text>
${PREVIEW_TITLE_BAR}${PREVIEW_SUBTITLE_BAR}
<g fill="#fff" stroke="#d9cde8">${PREVIEW_CARDS}</g>
</svg>`;
