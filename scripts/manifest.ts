// What the repository derives from the service registry and the tool definitions: smithery.yaml,
// server.json's environment list, the README's usage lines (from --help), tool tables and
// configuration table, and the tool snapshots. The tests in test/unit/generated.test.ts fail when
// a checked-in copy drifts; `npm run generate` rewrites them.
import { Client } from "@modelcontextprotocol/client";
import { InMemoryTransport } from "@modelcontextprotocol/server";
import { allToolsets, helpText, serverDefaults, serverEnv, type Config } from "../src/config.js";
import { SECTIONS } from "../src/core/base/settings.js";
import type { EnvVarDecl, ServiceDeclaration } from "../src/core/service/service.js";
import { createMcpServer } from "../src/core/mcp/server.js";
import type { ToolDef } from "../src/core/tools/tool.js";
import { LISTING } from "../src/instructions.js";
import { createApp } from "../src/server.js";
import { loadServices, SERVICES } from "../src/services/registry.js";

type Services = readonly ServiceDeclaration<any>[];

/**
 * Every service configured against an address nothing listens on: definitions only, no traffic.
 * Each function here takes the services to derive from (default: the registry's).
 */
export function allServicesConfig(registry: Services = SERVICES): Config {
  const services = new Map<string, Record<string, unknown>>();
  for (const s of registry) {
    const env = { [s.baseUrlVar]: `http://127.0.0.1:9/${s.name}`, [s.apiKeyVar]: "definitions-only-key" };
    services.set(
      s.name,
      s.settings.parse(Object.fromEntries(s.env.map((v) => [v.name, env[v.name]]))) as Record<string, unknown>,
    );
  }
  const { sandboxAccounts, sandboxFaults, ...defaults } = serverDefaults();
  return {
    ...defaults,
    transport: "stdio",
    host: "127.0.0.1",
    port: 0,
    upstreamTimeoutMs: 1000,
    maxSessions: 1,
    sessionIdleMs: 1000,
    allowedOrigins: [],
    logLevel: "error",
    sandbox: false,
    readOnly: false,
    toolsets: allToolsets(registry).map((t) => t.id),
    services,
    warnings: [],
    drainMs: 0,
  };
}

/** The tools/list answer of every toolset, as a 2025-11-25 client sees it, and the definitions behind it. */
export async function publishedTools(
  services: Services = SERVICES,
): Promise<{ listed: Array<Record<string, any>>; defs: readonly ToolDef<any, any>[] }> {
  const app = createApp(allServicesConfig(services), undefined, await loadServices(services));
  const server = createMcpServer(app.runtime, "legacy");
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: "manifest", version: "1" });
  await client.connect(clientSide);
  const { tools } = await client.listTools();
  await client.close();
  await app.close();
  return { listed: tools as Array<Record<string, any>>, defs: app.runtime.definition.tools };
}

export function smitheryYaml(services: Services = SERVICES): string {
  const toolsetIds = allToolsets(services)
    .map((t) => t.id)
    .join(",");
  const toolsetsHelp =
    `Comma-separated toolsets to enable (${toolsetIds}) or all; ` +
    "default the default toolsets of every configured service";
  const vars = services.flatMap((s) => s.env.filter((v) => v.name === s.apiKeyVar || v.name === s.baseUrlVar));
  const camel = (name: string) => name.toLowerCase().replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
  const props = vars.map((v) =>
    [
      `      ${camel(v.name)}:`,
      "        type: string",
      ...(v.default ? [`        default: ${v.default}`] : []),
      `        description: ${cap(v.description)}`,
    ].join("\n"),
  );
  return `# Smithery configuration: how to start switchboard-mcp over stdio from the user's settings.
# Generated from src/services/registry.ts by \`npm run generate\`; do not edit by hand.
startCommand:
  type: stdio
  configSchema:
    type: object
    properties:
${props.join("\n")}
      toolsets:
        type: string
        description: ${toolsetsHelp}
      readOnly:
        type: boolean
        default: false
        description: Register only tools that change nothing and spend no credits
      sandbox:
        type: boolean
        default: false
        description: Use the built-in simulators instead of real services (no keys needed)
  commandFunction: |-
    (config) => ({
      command: "npx",
      args: ["-y", "switchboard-mcp",
        ...(config.sandbox ? ["--sandbox"] : []),
        ...(config.readOnly ? ["--read-only"] : []),
        ...(config.toolsets ? ["--toolsets", config.toolsets] : [])],
      env: Object.fromEntries(Object.entries({
${vars.map((v) => `        ${v.name}: config.${camel(v.name)},`).join("\n")}
      }).filter(([, v]) => v !== undefined && v !== ""))
    })
`;
}

/** server.json with its environment list derived from the registry, the rest kept as it is. */
export function serverJson(existing: Record<string, any>, services: Services = SERVICES): string {
  const published = serverEnv(services).filter((v) => !v.name.startsWith("SANDBOX_") && v.name !== "MCP_STATE_URL");
  const env = [...services.flatMap((s) => s.env), ...published].map((v) => ({
    name: v.name,
    description: cap(v.description),
    ...(v.secret ? { isSecret: true } : {}),
    ...(registryDefault(v.default) ? { default: registryDefault(v.default) } : {}),
  }));
  const packages = (existing.packages as Array<Record<string, any>>).map((p) => ({ ...p, environmentVariables: env }));
  return `${JSON.stringify({ ...existing, ...LISTING, version: existing.version, packages }, null, 2)}\n`;
}

/** A default the registry can hold: a bare value, or the value before its note in parentheses ("64 MiB"). */
function registryDefault(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (!/\s/.test(value)) return value;
  return /^(\S+) \(.*\)$/.exec(value)?.[1];
}

/** The README's usage block: the Usage lines of --help, as a shell block. */
export function usageBlock(services: Services = SERVICES): string {
  const lines = helpText(services).split("\n");
  const from = lines.indexOf("Usage:") + 1;
  const to = lines.indexOf("", from);
  return ["```", ...lines.slice(from, to).map((l) => l.replace(/^ {2}/, "")), "```"].join("\n");
}

/** The README's configuration tables: the services' variables, then the server's by section, in --help's order. */
export function configTable(services: Services = SERVICES): string {
  const table = (vars: readonly EnvVarDecl[]) => [
    "| variable | meaning | default |",
    "|---|---|---|",
    ...vars.map((v) => `| \`${v.name}\` | ${cell(cap(v.description))} | ${defaultCell(v.default)} |`),
  ];
  const server = serverEnv(services);
  const sections = [...new Set(server.map((v) => v.section))];
  return [
    "**Services**",
    "",
    ...table(services.flatMap((s) => s.env)),
    ...sections.flatMap((section) => [
      "",
      `**${SECTIONS[section]}**`,
      "",
      ...table(server.filter((v) => v.section === section)),
    ]),
  ].join("\n");
}

/** A default as the table shows it: a bare value in code, a value with a note as code then text. */
function defaultCell(value: string | undefined): string {
  if (value === undefined) return "none";
  const m = /^(\S+)( \(.*\))$/.exec(value);
  if (m && /^[\w.:/-]+$/.test(m[1])) return `\`${m[1]}\`${cell(m[2])}`;
  return /\s/.test(value) ? cell(value) : `\`${value}\``;
}

/** Text for a markdown table cell: no pipe ends the cell, no <word> is taken for HTML. */
function cell(text: string): string {
  return text.replace(/\|/g, "\\|").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

const KIND_MARK: Record<string, string> = { spend: " 💳", destructive: " ⚠️", write: " ✏️", read: "" };

/** One markdown table per toolset: the tool, what it does (its description's first sentence), its upstream. */
export function toolTables(defs: readonly ToolDef<any, any>[], services: Services = SERVICES): string {
  const out: string[] = [];
  for (const service of services) {
    for (const toolset of service.toolsets) {
      const tools = defs.filter((d) => d.toolset === toolset.id);
      if (tools.length === 0) continue;
      out.push(
        `### \`${toolset.id}\`${toolset.default ? "" : " (off by default)"}`,
        "",
        `${cap(toolset.description)}.`,
        "",
        "| tool | does | upstream |",
        "|---|---|---|",
      );
      for (const t of tools) {
        const marks = `${KIND_MARK[t.kind]}${t.longRunning ? " ⏳" : ""}`;
        out.push(`| \`${t.name}\`${marks} | ${firstSentence(t.description)} | ${t.upstream ?? "computed"} |`);
      }
      out.push("");
    }
  }
  return out.join("\n").trimEnd();
}

function firstSentence(text: string): string {
  // "e.g." and "i.e." end no sentence.
  const m = /^(.+?(?<!\b(?:e\.g|i\.e))[.!?])(\s|$)/.exec(text);
  return (m ? m[1] : text).replace(/\|/g, "\\|");
}

function cap(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
