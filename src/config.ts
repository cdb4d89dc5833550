import { parseArgs } from "node:util";
import { z } from "zod";
import { isLoopbackHost } from "./core/base/loopback.js";
import { LOOPBACK_ORIGINS } from "./core/base/loopback.js";
import type { EnvVarDecl, ServiceDeclaration } from "./core/service/service.js";
import { positiveInt } from "./core/service/settings.js";
import { SERVICES } from "./services/registry.js";

/** The header that carries a service's key in per-user mode: X-Build-Api-Key, X-Sizing-Api-Key, ... */
export function credentialHeader(service: string): string {
  return `x-${service}-api-key`;
}

/** Variables of the server itself (the services declare their own in their modules). */
export function serverEnv(services: readonly ServiceDeclaration<any>[] = SERVICES): EnvVarDecl[] {
  const headers = services.map((s) => credentialHeader(s.name).replace(/(^|-)([a-z])/g, (m) => m.toUpperCase()));
  const bearers = services.flatMap((s) => (s.bearerKeyPrefix ? [`Authorization: Bearer ${s.bearerKeyPrefix}…`] : []));
  const orBearer = bearers.length ? `; or ${bearers.join(", ")} when MCP_HTTP_TOKEN is unset` : "";
  return [
    {
      name: "UPSTREAM_TIMEOUT_MS",
      description: "timeout of one upstream request: connect, headers, body (ms)",
      default: "30000",
    },
    {
      name: "UPSTREAM_BODY_BUDGET_BYTES",
      description:
        "upstream answer bytes read at once, process-wide (a read waits briefly for room, then fails BUSY); " +
        "an answer whose JSON would take more than this to parse is refused",
      default: "67108864 (64 MiB)",
    },
    {
      name: "MCP_HTTP_TOKEN",
      description: "HTTP: require Authorization: Bearer <token>; needed to bind a non-loopback host",
      secret: true,
    },
    {
      name: "MCP_ALLOWED_ORIGINS",
      description: "HTTP: comma-separated origins accepted in an Origin header",
      default: "loopback origins",
    },
    {
      name: "MCP_ALLOWED_HOSTS",
      description:
        "HTTP on a loopback bind: comma-separated host names accepted in the Host header besides loopback ones " +
        "(the public name of a reverse proxy in front)",
      default: "loopback names",
    },
    { name: "MCP_MAX_SESSIONS", description: "HTTP: open 2025-era sessions allowed at once", default: "1000" },
    {
      name: "MCP_MAX_SESSIONS_PER_TENANT",
      description:
        "HTTP, per-user keys or OAuth: open 2025-era sessions one tenant may hold (all callers without keys are " +
        "one tenant); past it 429",
      default: "100",
    },
    {
      name: "MCP_MAX_LISTEN_URIS",
      description: "HTTP: resources one subscriptions/listen request may name; past it 429",
      default: "100",
    },
    {
      name: "MCP_MAX_SUBSCRIPTIONS_PER_TENANT",
      description:
        "per-user keys or OAuth: resource subscriptions one tenant may hold at once on a replica (listen streams " +
        "and 2025 subscriptions together); past it 429",
      default: "100",
    },
    {
      name: "MCP_MAX_POLLERS",
      description:
        "resources a replica follows for subscribers at once (one upstream poll per interval each); past it 429",
      default: "1000",
    },
    {
      name: "MCP_MAX_TASKS_PER_TENANT",
      description:
        "per-user keys or OAuth: tasks one tenant may have working at once (across replicas with MCP_STATE_URL); " +
        "past it a task-augmented call is refused",
      default: "100",
    },
    {
      name: "MCP_MAX_TENANTS",
      description:
        "per-user keys: tenants (sets of keys) a replica keeps built at once; " +
        "past it the longest idle one without a task is closed (docs/deployment.md, Sizing)",
      default: "10000",
    },
    {
      name: "MCP_SESSION_IDLE_MS",
      description: "HTTP: idle time after which a 2025-era session with no request in flight expires",
      default: "1800000",
    },
    {
      name: "MCP_MAX_CONNECTIONS",
      description: "HTTP: open connections at once; past it a new connection is closed as soon as it is accepted",
      default: "2000",
    },
    {
      name: "MCP_HEADERS_TIMEOUT_MS",
      description: "HTTP: a client that has not sent its request headers by then is dropped with 408 (ms)",
      default: "15000",
    },
    {
      name: "MCP_UNAUTH_RATE",
      description:
        "HTTP with MCP_HTTP_TOKEN or MCP_AUTH=oauth: requests without a valid token answered per second " +
        "(bursts of twice that), each 401 and closed; past it 429, without checking the token",
      default: "50",
    },
    {
      name: "MCP_BODY_BUDGET_BYTES",
      description:
        "HTTP: request-body bytes held at once across all connections (the first 64 KiB of each body not counted); " +
        "past it 503",
      default: "268435456 (256 MiB)",
    },
    {
      name: "MCP_REQUEST_STATE_KEY",
      description: "key (32+ characters) that signs confirmation round trips; set the same on every replica",
      secret: true,
      default: "derived from MCP_STATE_KEY, else random per process",
    },
    {
      name: "MCP_CREDENTIALS",
      description:
        "HTTP: operator (the keys above serve every caller), " +
        `caller (each request brings its own keys in ${headers.join(", ")}${orBearer}) ` +
        "or linked (each signed-in user links their keys once through the server's connect page; " +
        "needs MCP_AUTH=oauth)",
      default: "operator",
    },
    {
      name: "MCP_AUTH",
      description:
        "HTTP: how callers are authenticated: none (loopback only), token (MCP_HTTP_TOKEN; implied when it is set) " +
        "or oauth (access tokens from MCP_AUTH_ISSUER)",
      default: "none, or token when MCP_HTTP_TOKEN is set",
    },
    {
      name: "MCP_PUBLIC_URL",
      description:
        "HTTP with MCP_AUTH=oauth: the MCP endpoint's URL as clients reach it (https://…/mcp): " +
        "the protected resource's identifier, the tokens' audience, the base of connect links",
    },
    {
      name: "MCP_AUTH_ISSUER",
      description:
        "HTTP with MCP_AUTH=oauth: issuer URL of the authorization server (comma-separated for several); " +
        "its metadata and signing keys are discovered from it",
    },
    {
      name: "MCP_AUTH_AUDIENCE",
      description: "HTTP with MCP_AUTH=oauth: the audience access tokens must carry",
      default: "MCP_PUBLIC_URL",
    },
    {
      name: "MCP_AUTH_INTROSPECTION_URL",
      description: "HTTP with MCP_AUTH=oauth: RFC 7662 introspection endpoint for opaque (non-JWT) access tokens",
    },
    {
      name: "MCP_AUTH_CLIENT_ID",
      description: "HTTP with MCP_AUTH_INTROSPECTION_URL: this server's client id at the introspection endpoint",
    },
    {
      name: "MCP_AUTH_CLIENT_SECRET",
      description: "HTTP with MCP_AUTH_INTROSPECTION_URL: this server's client secret at the introspection endpoint",
      secret: true,
    },
    {
      name: "MCP_AUTH_DOCS_URL",
      description: "HTTP with MCP_AUTH=oauth: documentation URL named in the protected resource metadata",
      default: "this project's docs/deployment.md#oauth",
    },
    {
      name: "MCP_STATE_URL",
      description:
        "HTTP: shared state for replicas (redis://…): tasks, poller leases, events, nonces; needs MCP_STATE_KEY",
      default: "none: state stays in process",
    },
    {
      name: "MCP_STATE_KEY",
      description:
        "key (32+ characters, the same on every replica) that encrypts what a task keeps at rest and keys tenant ids",
      secret: true,
      default: "random per process",
    },
    {
      name: "MCP_REPLICA_ID",
      description: "HTTP: this replica's name; 2025-era session ids start with it so a balancer can route them back",
      default: "random",
    },
    {
      name: "MCP_LEASE_MS",
      description:
        "HTTP with MCP_STATE_URL: how long a replica's claim on a task lasts unrenewed; " +
        "a dead replica's tasks are adopted within it (ms)",
      default: "15000",
    },
    {
      name: "MCP_DRAIN_MS",
      description: "HTTP: on SIGTERM, how long in-flight requests may take to finish before they are closed (ms)",
      default: "10000",
    },
    {
      name: "MCP_MAX_BLOCKING_WAIT_SECONDS",
      description:
        "longest a wait blocks a call that is not a task and asked for no timeoutSeconds; then it returns " +
        "(not an error) saying how to follow the work. Most clients give up at 60 s; raise it only for clients " +
        "known to wait longer",
      default: "45",
    },
    {
      name: "MCP_REPEAT_WINDOW_SECONDS",
      description:
        "a call that spends credits, repeated by the same caller with the same arguments while the first runs, or " +
        "within this many seconds after the first was cut off before its caller got the answer (a client timeout, " +
        "a disconnect), gets the first call's outcome instead of spending again (repeat: true spends again); " +
        "0 turns this off",
      default: "600",
    },
    {
      name: "LOG_LEVEL",
      description: "debug, info, warn or error; logs go to stderr (and to MCP clients as log messages), never stdout",
      default: "info",
    },
    {
      name: "SANDBOX_TIME_SCALE",
      description: "sandbox: simulated ms per real ms (20 makes a 40-minute build take 2 minutes)",
      default: "20",
    },
    { name: "SANDBOX_FAULTS", description: "sandbox: JSON array of faults to inject from the start" },
    {
      name: "SANDBOX_ACCOUNTS",
      description:
        "sandbox and --sandbox: accounts to simulate per service, 1-9; account n's key ends in n, with the same " +
        "demo data in each (--sandbox with MCP_CREDENTIALS=caller prints the keys)",
      default: "1",
    },
  ];
}

const ServerSettings = z.object({
  transport: z.enum(["stdio", "http"], { error: "--transport must be stdio or http" }),
  host: z.string().min(1, "--host must not be empty"),
  port: z.coerce
    .number({ error: "--port must be a number" })
    .int("--port must be a whole number")
    .min(0)
    .max(65535, "--port must be 0-65535"),
  upstreamTimeoutMs: positiveInt,
  httpToken: z.string().min(1).optional(),
  maxSessions: positiveInt,
  maxSessionsPerTenant: positiveInt.optional(),
  maxListenUris: positiveInt.optional(),
  maxSubscriptionsPerTenant: positiveInt.optional(),
  maxPollers: positiveInt.optional(),
  maxTasksPerTenant: positiveInt.optional(),
  maxTenants: positiveInt.optional(),
  sessionIdleMs: positiveInt,
  maxConnections: positiveInt.optional(),
  headersTimeoutMs: positiveInt.optional(),
  unauthRate: positiveInt.optional(),
  bodyBudgetBytes: positiveInt.optional(),
  upstreamBodyBudgetBytes: positiveInt.optional(),
  requestStateKey: z.string().min(32, "MCP_REQUEST_STATE_KEY must be at least 32 characters").optional(),
  allowedOrigins: z.array(z.string()),
  allowedHosts: z.array(z.string()),
  logLevel: z.enum(["debug", "info", "warn", "error"], { error: "LOG_LEVEL must be debug, info, warn or error" }),
  sandboxTimeScale: z.coerce
    .number({ error: "SANDBOX_TIME_SCALE must be a number" })
    .positive("SANDBOX_TIME_SCALE must be positive")
    .optional(),
  credentials: z.enum(["operator", "caller", "linked"], {
    error: "MCP_CREDENTIALS must be operator, caller or linked",
  }),
  auth: z.enum(["none", "token", "oauth"], { error: "MCP_AUTH must be none, token or oauth" }),
  publicUrl: httpUrlSetting("MCP_PUBLIC_URL").optional(),
  authIssuers: z.array(httpUrlSetting("MCP_AUTH_ISSUER")),
  authAudience: z.string().min(1).optional(),
  introspectionUrl: httpUrlSetting("MCP_AUTH_INTROSPECTION_URL").optional(),
  authClientId: z.string().min(1).optional(),
  authClientSecret: z.string().min(1).optional(),
  authDocsUrl: httpUrlSetting("MCP_AUTH_DOCS_URL").optional(),
  stateUrl: z
    .string()
    .regex(/^rediss?:\/\/.+/i, "MCP_STATE_URL must be a redis:// or rediss:// URL")
    .optional(),
  stateKey: z.string().min(32, "MCP_STATE_KEY must be at least 32 characters").optional(),
  replicaId: z
    .string()
    .regex(/^[a-z0-9][a-z0-9-]{0,31}$/i, "MCP_REPLICA_ID must be 1-32 letters, digits or dashes")
    .optional(),
  drainMs: z.coerce.number({ error: "MCP_DRAIN_MS must be a number" }).int().min(0, "MCP_DRAIN_MS must be 0 or more"),
  leaseMs: z.coerce
    .number({ error: "MCP_LEASE_MS must be a number" })
    .int()
    .min(500, "MCP_LEASE_MS must be at least 500"),
  maxBlockingWaitSeconds: z.coerce
    .number({ error: "MCP_MAX_BLOCKING_WAIT_SECONDS must be a number" })
    .int()
    .min(1, "MCP_MAX_BLOCKING_WAIT_SECONDS must be 1 or more")
    .max(7200, "MCP_MAX_BLOCKING_WAIT_SECONDS must be at most 7200"),
  repeatWindowSeconds: z.coerce
    .number({ error: "MCP_REPEAT_WINDOW_SECONDS must be a number" })
    .int()
    .min(0, "MCP_REPEAT_WINDOW_SECONDS must be 0 or more")
    .max(86400, "MCP_REPEAT_WINDOW_SECONDS must be at most 86400"),
});

export type ServerConfig = z.infer<typeof ServerSettings>;

export interface Config extends ServerConfig {
  sandbox: boolean;
  readOnly: boolean;
  /** The toolsets asked for with --toolsets (validated), or undefined for the defaults. */
  toolsets?: string[];
  /** Services with everything they need, and their parsed settings. Empty under --sandbox until it starts. */
  services: Map<string, Record<string, unknown>>;
  sandboxFaults?: Array<{ service: string; fault: string }>;
  /** --sandbox: build accounts to simulate (SANDBOX_ACCOUNTS). */
  sandboxAccounts?: number;
  /** One-line notes for stderr: flags that do nothing in this mode, variables --sandbox overrides. */
  warnings: string[];
}

export type Command =
  | { kind: "serve"; config: Config }
  | {
      kind: "sandbox";
      port: number;
      host: string;
      timeScale?: number;
      faults?: Config["sandboxFaults"];
      accounts: number;
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
  const vars = [...services.flatMap((s) => s.env), ...serverEnv(services)];
  const toolsets = allToolsets(services);
  const defaults = toolsets
    .filter((t) => t.default)
    .map((t) => t.id)
    .join(",");
  const width = Math.max(...vars.map((v) => v.name.length));
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
    "Environment:",
    ...vars.map((v) => `  ${v.name.padEnd(width)}  ${v.description}${v.default ? ` (default: ${v.default})` : ""}`),
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
  const faults = parseFaults(env.SANDBOX_FAULTS);
  if (positionals[0] === "sandbox") {
    const port = Number(values.port ?? 4010);
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ConfigError("--port must be 0-65535");
    const scale = nonEmpty(env.SANDBOX_TIME_SCALE);
    if (scale !== undefined && !(Number(scale) > 0))
      throw new ConfigError("SANDBOX_TIME_SCALE must be a positive number");
    const accounts = sandboxAccounts(env);
    return {
      kind: "sandbox",
      port,
      host: values.host ?? "127.0.0.1",
      timeScale: scale === undefined ? undefined : Number(scale),
      faults,
      accounts,
    };
  }

  const warnings: string[] = [];
  const transport = values.transport ?? "stdio";
  if (transport === "stdio") {
    for (const flag of ["port", "host"] as const)
      if (values[flag] !== undefined)
        warnings.push(`--${flag} has no effect with --transport stdio; it applies to --transport http`);
  }
  const server = check(
    ServerSettings,
    {
      transport,
      host: values.host ?? "127.0.0.1",
      port: values.port ?? "3000",
      upstreamTimeoutMs: nonEmpty(env.UPSTREAM_TIMEOUT_MS) ?? "30000",
      httpToken: nonEmpty(env.MCP_HTTP_TOKEN),
      maxSessions: nonEmpty(env.MCP_MAX_SESSIONS) ?? "1000",
      maxSessionsPerTenant: nonEmpty(env.MCP_MAX_SESSIONS_PER_TENANT) ?? "100",
      maxListenUris: nonEmpty(env.MCP_MAX_LISTEN_URIS) ?? "100",
      maxSubscriptionsPerTenant: nonEmpty(env.MCP_MAX_SUBSCRIPTIONS_PER_TENANT) ?? "100",
      maxPollers: nonEmpty(env.MCP_MAX_POLLERS) ?? "1000",
      maxTasksPerTenant: nonEmpty(env.MCP_MAX_TASKS_PER_TENANT) ?? "100",
      maxTenants: nonEmpty(env.MCP_MAX_TENANTS) ?? "10000",
      sessionIdleMs: nonEmpty(env.MCP_SESSION_IDLE_MS) ?? String(30 * 60_000),
      maxConnections: nonEmpty(env.MCP_MAX_CONNECTIONS) ?? "2000",
      headersTimeoutMs: nonEmpty(env.MCP_HEADERS_TIMEOUT_MS) ?? "15000",
      unauthRate: nonEmpty(env.MCP_UNAUTH_RATE) ?? "50",
      bodyBudgetBytes: nonEmpty(env.MCP_BODY_BUDGET_BYTES) ?? String(256 * 1024 * 1024),
      upstreamBodyBudgetBytes: nonEmpty(env.UPSTREAM_BODY_BUDGET_BYTES) ?? String(64 * 1024 * 1024),
      requestStateKey: nonEmpty(env.MCP_REQUEST_STATE_KEY),
      allowedOrigins:
        nonEmpty(env.MCP_ALLOWED_ORIGINS)
          ?.split(",")
          .map((s) => s.trim().replace(/\/+$/, ""))
          .filter(Boolean) ?? LOOPBACK_ORIGINS,
      allowedHosts:
        nonEmpty(env.MCP_ALLOWED_HOSTS)
          ?.split(",")
          .map((s) => s.trim().toLowerCase())
          .filter(Boolean) ?? [],
      logLevel: nonEmpty(env.LOG_LEVEL) ?? "info",
      sandboxTimeScale: nonEmpty(env.SANDBOX_TIME_SCALE),
      credentials: nonEmpty(env.MCP_CREDENTIALS) ?? "operator",
      auth: nonEmpty(env.MCP_AUTH) ?? (nonEmpty(env.MCP_HTTP_TOKEN) ? "token" : "none"),
      publicUrl: nonEmpty(env.MCP_PUBLIC_URL),
      authIssuers:
        nonEmpty(env.MCP_AUTH_ISSUER)
          ?.split(",")
          .map((s) => s.trim())
          .filter(Boolean) ?? [],
      authAudience: nonEmpty(env.MCP_AUTH_AUDIENCE),
      introspectionUrl: nonEmpty(env.MCP_AUTH_INTROSPECTION_URL),
      authClientId: nonEmpty(env.MCP_AUTH_CLIENT_ID),
      authClientSecret: nonEmpty(env.MCP_AUTH_CLIENT_SECRET),
      authDocsUrl: nonEmpty(env.MCP_AUTH_DOCS_URL),
      stateUrl: nonEmpty(env.MCP_STATE_URL),
      stateKey: nonEmpty(env.MCP_STATE_KEY),
      replicaId: nonEmpty(env.MCP_REPLICA_ID),
      drainMs: nonEmpty(env.MCP_DRAIN_MS) ?? "10000",
      leaseMs: nonEmpty(env.MCP_LEASE_MS) ?? "15000",
      maxBlockingWaitSeconds: nonEmpty(env.MCP_MAX_BLOCKING_WAIT_SECONDS) ?? "45",
      repeatWindowSeconds: nonEmpty(env.MCP_REPEAT_WINDOW_SECONDS) ?? "600",
    },
    {
      upstreamTimeoutMs: "UPSTREAM_TIMEOUT_MS",
      maxSessions: "MCP_MAX_SESSIONS",
      maxSessionsPerTenant: "MCP_MAX_SESSIONS_PER_TENANT",
      maxListenUris: "MCP_MAX_LISTEN_URIS",
      maxSubscriptionsPerTenant: "MCP_MAX_SUBSCRIPTIONS_PER_TENANT",
      maxPollers: "MCP_MAX_POLLERS",
      maxTasksPerTenant: "MCP_MAX_TASKS_PER_TENANT",
      maxTenants: "MCP_MAX_TENANTS",
      sessionIdleMs: "MCP_SESSION_IDLE_MS",
      maxConnections: "MCP_MAX_CONNECTIONS",
      headersTimeoutMs: "MCP_HEADERS_TIMEOUT_MS",
      unauthRate: "MCP_UNAUTH_RATE",
      bodyBudgetBytes: "MCP_BODY_BUDGET_BYTES",
      upstreamBodyBudgetBytes: "UPSTREAM_BODY_BUDGET_BYTES",
    },
  );
  checkAuth(server);
  if (server.stateUrl && !server.stateKey)
    throw new ConfigError(
      "MCP_STATE_URL needs MCP_STATE_KEY: set it to 32+ random characters, the same on every replica",
    );
  if (server.transport === "stdio") {
    if (server.credentials !== "operator")
      throw new ConfigError(
        `MCP_CREDENTIALS=${server.credentials} needs --transport http (over stdio the one user's keys come from ` +
          "the environment)",
      );
    if (server.auth === "oauth")
      throw new ConfigError("MCP_AUTH=oauth needs --transport http (a stdio server is its one user's own process)");
    if (server.stateUrl) warnings.push("MCP_STATE_URL has no effect with --transport stdio; it is for HTTP replicas");
  }
  if (server.transport === "http" && !isLoopbackHost(server.host) && !server.httpToken && server.auth !== "oauth") {
    throw new ConfigError(
      `refusing to bind non-loopback host ${server.host} without MCP_HTTP_TOKEN or MCP_AUTH=oauth: set one, ` +
        "or bind 127.0.0.1",
    );
  }
  const sandbox = values.sandbox ?? false;
  const services = sandbox ? new Map() : configuredServices(env, server.credentials, registry);
  if (server.credentials !== "operator" && !sandbox) {
    const ignored = registry.map((s) => s.apiKeyVar).filter((v) => nonEmpty(env[v]) !== undefined);
    if (ignored.length)
      warnings.push(
        `MCP_CREDENTIALS=${server.credentials}: every ` +
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
  const accounts = sandbox ? { sandboxAccounts: sandboxAccounts(env) } : {};
  const readOnly = values["read-only"] ?? false;
  const config = { ...server, sandbox, readOnly, toolsets, services, sandboxFaults: faults, ...accounts, warnings };
  return { kind: "serve", config };
}

function sandboxAccounts(env: NodeJS.ProcessEnv): number {
  const accounts = Number(nonEmpty(env.SANDBOX_ACCOUNTS) ?? 1);
  if (!Number.isInteger(accounts) || accounts < 1 || accounts > 9) {
    throw new ConfigError("SANDBOX_ACCOUNTS must be a whole number from 1 to 9");
  }
  return accounts;
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
export const CALLER_KEY = "(supplied by each caller)";

/**
 * The configuration is parsed once per start, before the first answer: zod's JIT (a parser compiled
 * with `new Function` per object schema, which pays off over many parses) would be made for one use.
 */
const ONCE = { jitless: true } as const;

/** Parses one service's variables; an error names the variable. */
export function serviceSettings(service: ServiceDeclaration<any>, env: NodeJS.ProcessEnv): Record<string, unknown> {
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

/** MCP_AUTH=oauth needs its resource URL and issuer; the other modes must not half-configure it. */
function checkAuth(server: ServerConfig): void {
  if (server.auth === "token" && !server.httpToken)
    throw new ConfigError("MCP_AUTH=token needs MCP_HTTP_TOKEN: set it, or use MCP_AUTH=oauth");
  if (server.credentials === "linked" && server.auth !== "oauth") {
    throw new ConfigError("MCP_CREDENTIALS=linked needs MCP_AUTH=oauth: a linked key belongs to a signed-in user");
  }
  if (server.auth !== "oauth") return;
  if (!server.publicUrl)
    throw new ConfigError(
      "MCP_AUTH=oauth needs MCP_PUBLIC_URL: the MCP endpoint's URL as clients reach it, e.g. " +
        "https://mcp.example.com/mcp",
    );
  if (server.authIssuers.length === 0)
    throw new ConfigError("MCP_AUTH=oauth needs MCP_AUTH_ISSUER: the issuer URL of your authorization server");
  if (server.httpToken)
    throw new ConfigError("MCP_HTTP_TOKEN and MCP_AUTH=oauth exclude each other: unset MCP_HTTP_TOKEN");
  if (server.introspectionUrl && !(server.authClientId && server.authClientSecret)) {
    throw new ConfigError(
      "MCP_AUTH_INTROSPECTION_URL needs MCP_AUTH_CLIENT_ID and MCP_AUTH_CLIENT_SECRET (this server's credentials " +
        "at the endpoint)",
    );
  }
  const url = new URL(server.publicUrl);
  if (url.protocol !== "https:" && !isLoopbackHost(url.hostname))
    throw new ConfigError("MCP_PUBLIC_URL must be https:// (http only on a loopback host, for tests)");
  if (url.hash || url.search)
    throw new ConfigError("MCP_PUBLIC_URL must have no query or fragment: it is the resource identifier of RFC 8707");
}

function httpUrlSetting(name: string) {
  return z.string().refine((v) => /^https?:\/\/[^\s]+$/i.test(v) && URL.canParse(v), `${name} must be an http(s) URL`);
}

function check<T extends z.ZodType>(schema: T, raw: unknown, names: Record<string, string>): z.infer<T> {
  const result = schema.safeParse(raw, ONCE);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const field = String(issue.path[0] ?? "");
  const label = names[field];
  throw new ConfigError(label ? `${label}: ${issue.message}` : issue.message);
}

function parseFaults(raw: string | undefined): Config["sandboxFaults"] {
  if (!nonEmpty(raw)) return undefined;
  try {
    const parsed = JSON.parse(raw!) as unknown;
    return (Array.isArray(parsed) ? parsed : [parsed]) as Config["sandboxFaults"];
  } catch {
    throw new ConfigError("SANDBOX_FAULTS must be a JSON array of faults");
  }
}

export function nonEmpty(v: string | undefined): string | undefined {
  return v === undefined || v.trim() === "" ? undefined : v.trim();
}
