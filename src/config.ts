import { parseArgs } from "node:util";
import { z } from "zod";
import { isLoopbackHost } from "./core/base/loopback.js";
import {
  ENV,
  type KeyHeaders,
  type Section,
  SECTIONS,
  type SettingDecl,
  type SettingField,
  SETTINGS,
  type SettingValues,
} from "./core/base/settings.js";
import type { EnvVarDecl, ServiceDeclaration } from "./core/service/service.js";
import { SERVICES } from "./services/registry.js";

/** The header that carries a service's key in per-user mode, as HTTP reads it: x-build-api-key, ... */
export function credentialHeader(service: string): string {
  return `x-${service}-api-key`;
}

/** The same header as help and start-up lines write it: X-Build-Api-Key, X-Sizing-Api-Key, ... */
export function shownCredentialHeader(service: string): string {
  return credentialHeader(service).replace(/(^|-)([a-z])/g, (m) => m.toUpperCase());
}

/** The services' key headers, which ENV.credentials' help names. */
function keyHeaders(services: readonly ServiceDeclaration<any>[]): KeyHeaders {
  return {
    headers: services.map((s) => shownCredentialHeader(s.name)),
    bearers: services.flatMap((s) => (s.bearerKeyPrefix ? [`Authorization: Bearer ${s.bearerKeyPrefix}…`] : [])),
  };
}

/** Variables of the server itself, from their declarations (core/base/settings.ts), in section order. */
export function serverEnv(
  services: readonly ServiceDeclaration<any>[] = SERVICES,
): Array<EnvVarDecl & { section: Section }> {
  const keys = keyHeaders(services);
  return (Object.values(SETTINGS) as SettingDecl[])
    .map((d) => ({
      name: d.env,
      description: typeof d.help === "function" ? d.help(keys) : d.help,
      ...(d.secret ? { secret: true } : {}),
      ...shownDefault(d),
      section: d.section,
    }))
    .sort((x, y) => SECTION_ORDER.indexOf(x.section) - SECTION_ORDER.indexOf(y.section));
}

const SECTION_ORDER = Object.keys(SECTIONS) as Section[];

function shownDefault(d: SettingDecl): { default?: string } {
  const shown = d.shown ?? (typeof d.default === "string" ? d.default : undefined);
  return shown === undefined ? {} : { default: shown };
}

/** The flags of a start; every variable is a setting (core/base/settings.ts). */
const Flags = z.object({
  transport: z.enum(["stdio", "http"], { error: "--transport must be stdio or http" }),
  host: z.string().min(1, "--host must not be empty"),
  port: z.coerce
    .number({ error: "--port must be a number" })
    .int("--port must be a whole number")
    .min(0)
    .max(65535, "--port must be 0-65535"),
});

/**
 * Parses the settings `which` picks (default: all) from the environment, each one's default
 * applied when unset. An error names the variable.
 */
export function parseSettings(
  env: NodeJS.ProcessEnv,
  which: (decl: SettingDecl) => boolean = () => true,
): SettingValues {
  const raw = (field: string) => nonEmpty(env[SETTINGS[field as SettingField].env]);
  const out: Record<string, unknown> = {};
  for (const [field, decl] of Object.entries(SETTINGS) as Array<[SettingField, SettingDecl]>) {
    if (!which(decl)) continue;
    const text = raw(field) ?? (typeof decl.default === "function" ? decl.default(raw) : decl.default);
    const result = decl.type.safeParse(text, ONCE);
    if (!result.success) {
      const message = result.error.issues[0].message;
      throw new ConfigError(message.startsWith(decl.env) ? message : `${decl.env}: ${message}`);
    }
    out[field] = result.data;
  }
  return out as SettingValues;
}

/** Every setting at its default: what a start without variables runs with. */
export function serverDefaults(): SettingValues {
  return parseSettings({});
}

type ServerConfig = z.infer<typeof Flags> &
  Omit<SettingValues, "sandboxAccounts" | "sandboxFaults" | "sandboxWebhookCa">;

export interface Config extends ServerConfig {
  sandbox: boolean;
  readOnly: boolean;
  /** The toolsets asked for with --toolsets (validated), or undefined for the defaults. */
  toolsets?: string[];
  /** Services with everything they need, and their parsed settings. Empty under --sandbox until it starts. */
  services: Map<string, Record<string, unknown>>;
  sandboxFaults?: SettingValues["sandboxFaults"];
  /** --sandbox: build accounts to simulate (ENV.sandboxAccounts). */
  sandboxAccounts?: number;
  /** --sandbox: PEM of the CA the build simulator trusts for its deliveries (ENV.sandboxWebhookCa). */
  sandboxWebhookCa?: string;
  /** One-line notes for stderr: flags that do nothing in this mode, variables --sandbox overrides. */
  warnings: string[];
}

type Command =
  | { kind: "serve"; config: Config }
  | {
      kind: "sandbox";
      port: number;
      host: string;
      timeScale: number;
      faults?: Config["sandboxFaults"];
      accounts: number;
      webhookCa?: string;
    }
  | { kind: "help" }
  | { kind: "version" };

export class ConfigError extends Error {}

/** Every toolset of these services (default: the registry's), with the service it belongs to. */
export function allToolsets(services: readonly ServiceDeclaration<any>[] = SERVICES) {
  return services.flatMap((s) => s.toolsets.map((t) => ({ ...t, service: s.name })));
}

export const ALL_TOOLSETS = allToolsets();

export function helpText(services: readonly ServiceDeclaration<any>[] = SERVICES): string {
  const server = serverEnv(services);
  const vars = [...services.flatMap((s) => s.env), ...server];
  const toolsets = allToolsets(services);
  const defaults = toolsets
    .filter((t) => t.default)
    .map((t) => t.id)
    .join(",");
  const width = Math.max(...vars.map((v) => v.name.length));
  const line = (v: EnvVarDecl) =>
    `  ${v.name.padEnd(width)}  ${v.description}${v.default ? ` (default: ${v.default})` : ""}`;
  return [
    "switchboard-mcp: an MCP server for a project build service, a size recommendation API and a drone fleet API",
    "",
    "Usage:",
    "  switchboard-mcp [--transport stdio|http] [--host 127.0.0.1] [--port 3000]",
    `                  [--sandbox] [--toolsets ${defaults}|all] [--read-only]`,
    "  switchboard-mcp sandbox [--port N]    run only the simulated upstream services",
    "  switchboard-mcp --help | --version",
    "",
    "Toolsets (* = on by default when its service is configured):",
    ...toolsets.map((t) => `  ${t.default ? "*" : " "} ${t.id.padEnd(16)} ${t.description}`),
    "",
    "Environment, services:",
    ...services.flatMap((s) => s.env).map(line),
    ...SECTION_ORDER.flatMap((section) => {
      const rows = server.filter((v) => v.section === section);
      return rows.length ? ["", `Environment, ${SECTIONS[section].toLowerCase()}:`, ...rows.map(line)] : [];
    }),
    "",
    "Logs go to stderr; stdout carries only MCP protocol messages.",
  ].join("\n");
}

/**
 * Parses argv (without node and script) and the environment against the services given (default:
 * the registry's). Throws ConfigError with a one-line message.
 */
export function parseCommand(
  argv: string[],
  env: NodeJS.ProcessEnv,
  registry: readonly ServiceDeclaration<any>[] = SERVICES,
): Command {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        transport: { type: "string" },
        host: { type: "string" },
        port: { type: "string" },
        sandbox: { type: "boolean" },
        toolsets: { type: "string" },
        "read-only": { type: "boolean" },
        help: { type: "boolean", short: "h" },
        version: { type: "boolean", short: "v" },
      },
    });
  } catch (err) {
    const unknown = /Unknown option '([^']+)'/.exec((err as Error).message)?.[1];
    throw new ConfigError(
      unknown
        ? `unknown flag ${unknown}; see --help for the flags`
        : `${(err as Error).message.split("\n")[0]}; see --help`,
    );
  }
  const { values, positionals } = parsed;
  if (values.help) return { kind: "help" };
  if (values.version) return { kind: "version" };
  if (positionals.length > 1 || (positionals.length === 1 && positionals[0] !== "sandbox")) {
    throw new ConfigError(`unknown command "${positionals.join(" ")}"; the only command is "sandbox" (see --help)`);
  }
  if (positionals[0] === "sandbox") {
    const port = Number(values.port ?? 4010);
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ConfigError("--port must be 0-65535");
    const sandbox = parseSettings(env, (d) => d.section === "sandbox");
    return {
      kind: "sandbox",
      port,
      host: values.host ?? "127.0.0.1",
      timeScale: sandbox.sandboxTimeScale,
      faults: sandbox.sandboxFaults,
      accounts: sandbox.sandboxAccounts,
      webhookCa: sandbox.sandboxWebhookCa,
    };
  }

  const warnings: string[] = [];
  const transport = values.transport ?? "stdio";
  if (transport === "stdio") {
    for (const flag of ["port", "host"] as const)
      if (values[flag] !== undefined)
        warnings.push(`--${flag} has no effect with --transport stdio; it applies to --transport http`);
  }
  const flags = check(Flags, { transport, host: values.host ?? "127.0.0.1", port: values.port ?? "3000" });
  const sandbox = values.sandbox ?? false;
  const { sandboxAccounts, sandboxFaults, sandboxWebhookCa, ...settings } = parseSettings(
    env,
    (d) => sandbox || !d.sandboxOnly,
  );
  const server: ServerConfig = { ...flags, ...settings };
  checkAuth(server);
  if (server.stateUrl && !server.stateKey)
    throw new ConfigError(
      `${ENV.stateUrl} needs ${ENV.stateKey}: set it to 32+ random characters, the same on every replica`,
    );
  if (server.transport === "stdio") {
    if (server.credentials !== "operator")
      throw new ConfigError(
        `${ENV.credentials}=${server.credentials} needs --transport http (over stdio the one user's keys come from ` +
          "the environment)",
      );
    if (server.auth === "oauth")
      throw new ConfigError(`${ENV.auth}=oauth needs --transport http (a stdio server is its one user's own process)`);
    if (server.stateUrl) warnings.push(`${ENV.stateUrl} has no effect with --transport stdio; it is for HTTP replicas`);
  }
  if (server.transport === "http" && !isLoopbackHost(server.host) && !server.httpToken && server.auth !== "oauth") {
    throw new ConfigError(
      `refusing to bind non-loopback host ${server.host} without ${ENV.httpToken} or ${ENV.auth}=oauth: set one, ` +
        "or bind 127.0.0.1",
    );
  }
  const services = sandbox ? new Map() : configuredServices(env, server.credentials, registry);
  checkWebhooks(server, services, registry);
  if (server.credentials !== "operator" && !sandbox) {
    const ignored = registry.map((s) => s.apiKeyVar).filter((v) => nonEmpty(env[v]) !== undefined);
    if (ignored.length)
      warnings.push(
        `${ENV.credentials}=${server.credentials}: every ` +
          `${server.credentials === "caller" ? "request brings its" : "user links their"} own keys, ` +
          `so ${ignored.join(", ")} ${ignored.length > 1 ? "are" : "is"} ignored`,
      );
  }
  if (sandbox) {
    const overridden = registry
      .flatMap((s) => [s.baseUrlVar, s.apiKeyVar])
      .filter((v) => nonEmpty(env[v]) !== undefined);
    if (overridden.length)
      warnings.push(`--sandbox points every service at the built-in simulators: ${overridden.join(", ")} ignored`);
  }
  // stderr is where a user looks when a client lists nothing (docs/clients.md): say it there too.
  if (!sandbox && services.size === 0)
    warnings.push(`no service is configured, so no tools are registered: set ${serviceSetup(registry)}`);
  const configured = sandbox ? undefined : services;
  const toolsets = values.toolsets === undefined ? undefined : parseToolsets(values.toolsets, configured, registry);
  const accounts = sandbox ? { sandboxAccounts, sandboxWebhookCa } : {};
  const readOnly = values["read-only"] ?? false;
  const config = { ...server, sandbox, readOnly, toolsets, services, sandboxFaults, ...accounts, warnings };
  return { kind: "serve", config };
}

/**
 * Services whose key and base URL are set, with their settings parsed. A service set only half
 * (a key without its URL, or a URL without its key) stops the start: the user meant to use it.
 */
export function configuredServices(
  env: NodeJS.ProcessEnv,
  credentials: ServerConfig["credentials"] = "operator",
  registry: readonly ServiceDeclaration<any>[] = SERVICES,
): Map<string, Record<string, unknown>> {
  const out = new Map<string, Record<string, unknown>>();
  for (const service of registry) {
    const url = nonEmpty(env[service.baseUrlVar]);
    const urlDefault = service.env.find((v) => v.name === service.baseUrlVar)?.default;
    if (credentials !== "operator") {
      // Each request brings its key (or each user linked theirs); a service is offered where its base URL is known.
      if (url || urlDefault)
        out.set(service.name, serviceSettings(service, { ...env, [service.apiKeyVar]: CALLER_KEY }));
      continue;
    }
    const key = nonEmpty(env[service.apiKeyVar]);
    if (!key && !url) continue;
    if (!key)
      throw new ConfigError(
        `${service.baseUrlVar} is set but ${service.apiKeyVar} is not: set ${service.apiKeyVar} to use the ` +
          `${service.title}, or unset ${service.baseUrlVar}`,
      );
    if (!url && !urlDefault)
      throw new ConfigError(
        `${service.apiKeyVar} is set but ${service.baseUrlVar} is not: set ${service.baseUrlVar} to the ` +
          `${service.title}'s base URL, or unset ${service.apiKeyVar}`,
      );
    out.set(service.name, serviceSettings(service, env));
  }
  return out;
}

/**
 * What to set to configure each service, then --sandbox; said by the start-up warning and by the
 * instructions when no service is configured.
 */
export function serviceSetup(registry: readonly ServiceDeclaration<any>[] = SERVICES): string {
  const each = registry.map((s) => {
    const hasDefault = s.env.find((v) => v.name === s.baseUrlVar)?.default;
    const vars = hasDefault ? `${s.apiKeyVar} (and optionally ${s.baseUrlVar})` : `${s.baseUrlVar} and ${s.apiKeyVar}`;
    return `${vars} for the ${s.title}`;
  });
  return `${each.join("; ")}; or start with --sandbox to try every tool against built-in simulators`;
}

/** Stands in for the key in caller mode's settings; each tenant's runtime replaces it with the caller's. */
const CALLER_KEY = "(supplied by each caller)";

/**
 * The configuration is parsed once per start, before the first answer: zod's JIT (a parser compiled
 * with `new Function` per object schema, which pays off over many parses) would be made for one use.
 */
const ONCE = { jitless: true } as const;

/** Parses one service's variables; an error names the variable. */
function serviceSettings(service: ServiceDeclaration<any>, env: NodeJS.ProcessEnv): Record<string, unknown> {
  const values = Object.fromEntries(service.env.map((v) => [v.name, nonEmpty(env[v.name])]));
  const result = service.settings.safeParse(values, ONCE);
  if (result.success) return result.data as Record<string, unknown>;
  const issue = result.error.issues[0];
  const name = String(issue.path[0] ?? service.apiKeyVar);
  const shown = values[name] !== undefined && !service.env.find((v) => v.name === name)?.secret;
  throw new ConfigError(`${name}: ${issue.message}${shown ? ` (got "${values[name]}")` : ""}`);
}

function parseToolsets(
  raw: string,
  services: Map<string, unknown> | undefined,
  registry: readonly ServiceDeclaration<any>[],
): string[] {
  const names = raw
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  const toolsets = allToolsets(registry);
  const known = toolsets.map((t) => t.id);
  if (names.length === 0) throw new ConfigError(`--toolsets is empty: name one or more of ${known.join(", ")}, or all`);
  if (names.includes("all")) return toolsets.filter((t) => !services || services.has(t.service)).map((t) => t.id);
  const unknown = names.filter((n) => !known.includes(n));
  if (unknown.length)
    throw new ConfigError(`unknown toolset ${unknown.join(", ")}; the toolsets are ${known.join(", ")}, or all`);
  if (services) {
    for (const name of names) {
      const service = registry.find((s) => s.toolsets.some((t) => t.id === name))!;
      if (!services.has(service.name)) {
        const urlDefault = service.env.find((v) => v.name === service.baseUrlVar)?.default;
        const vars = urlDefault ? service.apiKeyVar : `${service.apiKeyVar} and ${service.baseUrlVar}`;
        throw new ConfigError(`toolset ${name} needs the ${service.title}: set ${vars}, or start with --sandbox`);
      }
    }
  }
  return names;
}

/** Toolsets to register: the requested ones, or the default ones of every configured service. */
export function enabledToolsets(
  config: Pick<Config, "toolsets">,
  services: Iterable<string>,
  registry: readonly ServiceDeclaration<any>[] = SERVICES,
): string[] {
  const configured = new Set(services);
  const available = allToolsets(registry).filter((t) => configured.has(t.service));
  return config.toolsets
    ? available.filter((t) => config.toolsets!.includes(t.id)).map((t) => t.id)
    : available.filter((t) => t.default).map((t) => t.id);
}

/** ENV.auth=oauth needs its resource URL and issuer; the other modes must not half-configure it. */
function checkAuth(server: ServerConfig): void {
  if (server.auth === "token" && !server.httpToken)
    throw new ConfigError(`${ENV.auth}=token needs ${ENV.httpToken}: set it, or use ${ENV.auth}=oauth`);
  if (server.credentials === "linked" && server.auth !== "oauth") {
    throw new ConfigError(
      `${ENV.credentials}=linked needs ${ENV.auth}=oauth: a linked key belongs to a signed-in user`,
    );
  }
  if (server.auth !== "oauth") return;
  if (!server.publicUrl)
    throw new ConfigError(
      `${ENV.auth}=oauth needs ${ENV.publicUrl}: the MCP endpoint's URL as clients reach it, e.g. ` +
        "https://mcp.example.com/mcp",
    );
  if (server.authIssuers.length === 0)
    throw new ConfigError(`${ENV.auth}=oauth needs ${ENV.authIssuers}: the issuer URL of your authorization server`);
  if (server.httpToken)
    throw new ConfigError(`${ENV.httpToken} and ${ENV.auth}=oauth exclude each other: unset ${ENV.httpToken}`);
  if (server.introspectionUrl && !(server.authClientId && server.authClientSecret)) {
    throw new ConfigError(
      `${ENV.introspectionUrl} needs ${ENV.authClientId} and ${ENV.authClientSecret} (this server's credentials ` +
        "at the endpoint)",
    );
  }
  const url = new URL(server.publicUrl);
  if (url.protocol !== "https:" && !isLoopbackHost(url.hostname))
    throw new ConfigError(`${ENV.publicUrl} must be https:// (http only on a loopback host, for tests)`);
  if (url.hash || url.search)
    throw new ConfigError(`${ENV.publicUrl} must have no query or fragment: it is the resource identifier of RFC 8707`);
}

/** A service's webhooks need a public https address to be delivered to and a key to derive secrets from. */
export function checkWebhooks(
  server: Pick<ServerConfig, "publicUrl" | "stateKey" | "transport">,
  services: ReadonlyMap<string, Record<string, unknown>>,
  registry: readonly ServiceDeclaration<any>[],
): void {
  for (const service of registry) {
    const settings = services.get(service.name);
    if (!service.webhooks || !settings || !service.webhooks.enabled(settings)) continue;
    const on = `${service.webhooks.variable}=on`;
    if (!server.publicUrl || new URL(server.publicUrl).protocol !== "https:")
      throw new ConfigError(
        `${on} needs ${ENV.publicUrl} with https:// (the address the ${service.title} delivers webhooks to, ` +
          `e.g. https://mcp.example.com/mcp): set it, or set ${service.webhooks.variable}=off`,
      );
    if (!server.stateKey)
      throw new ConfigError(`${on} needs ${ENV.stateKey}: each account's webhook secret is derived from it`);
    if (server.transport !== "http") throw new ConfigError(`${on} needs --transport http: deliveries arrive over HTTP`);
  }
}

function check<T extends z.ZodType>(schema: T, raw: unknown): z.infer<T> {
  const result = schema.safeParse(raw, ONCE);
  if (result.success) return result.data;
  throw new ConfigError(result.error.issues[0].message);
}

function nonEmpty(v: string | undefined): string | undefined {
  return v === undefined || v.trim() === "" ? undefined : v.trim();
}
