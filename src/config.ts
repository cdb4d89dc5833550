import { parseArgs } from "node:util";
import { z } from "zod";

/** The one place defaults live. Names follow ../shared/contract.md exactly. */
export const TOOLSETS = ["build", "build_admin", "sizing", "drones"] as const;
export type Toolset = (typeof TOOLSETS)[number];
export type ServiceName = "build" | "sizing" | "drones";

export const TOOLSET_SERVICE: Record<Toolset, ServiceName> = {
  build: "build",
  build_admin: "build",
  sizing: "sizing",
  drones: "drones",
};

export const DEFAULT_BUILD_BASE_URL = "https://api-accounts.totalum.app";

const LOOPBACK_ORIGINS = ["http://localhost", "http://127.0.0.1", "http://[::1]", "https://localhost", "https://127.0.0.1", "https://[::1]"];

const httpUrl = z
  .string()
  .url()
  .refine((u) => /^https?:\/\//i.test(u), "must be an http(s) URL")
  .transform((u) => u.replace(/\/+$/, ""));

const positiveInt = (name: string) =>
  z.coerce.number({ error: `${name} must be a number` }).int(`${name} must be a whole number`).positive(`${name} must be positive`);

const confirmSpend = z
  .string()
  .trim()
  .transform((v, ctx) => {
    if (v === "always" || v === "never") return v;
    const n = Number(v);
    if (v !== "" && Number.isFinite(n) && n >= 0) return n;
    ctx.addIssue({ code: "custom", message: "BUILD_CONFIRM_SPEND must be always, never, or a credit amount" });
    return z.NEVER;
  });

export const ConfigSchema = z.object({
  transport: z.enum(["stdio", "http"], { error: "--transport must be stdio or http" }),
  host: z.string().min(1),
  port: z.coerce.number({ error: "--port must be a number" }).int().min(0).max(65535, "--port must be 0-65535"),
  sandbox: z.boolean(),
  toolsets: z.array(z.enum(TOOLSETS, { error: `--toolsets takes ${TOOLSETS.join(", ")}` })).optional(),
  readOnly: z.boolean(),
  build: z.object({ baseUrl: httpUrl, apiKey: z.string().min(1).optional(), keyHeader: z.string().min(1) }),
  sizing: z.object({ baseUrl: httpUrl.optional(), apiKey: z.string().min(1).optional() }),
  drones: z.object({ baseUrl: httpUrl.optional(), apiKey: z.string().min(1).optional() }),
  pollIntervalMs: positiveInt("BUILD_POLL_INTERVAL_MS"),
  confirmSpend,
  upstreamTimeoutMs: positiveInt("UPSTREAM_TIMEOUT_MS"),
  httpToken: z.string().min(1).optional(),
  /** HTTP only: open sessions allowed at once (MCP_MAX_SESSIONS) and idle time before one expires (MCP_SESSION_IDLE_MS). */
  maxSessions: positiveInt("MCP_MAX_SESSIONS"),
  sessionIdleMs: positiveInt("MCP_SESSION_IDLE_MS"),
  allowedOrigins: z.array(z.string()),
  logLevel: z.enum(["debug", "info", "warn", "error"], { error: "LOG_LEVEL must be debug, info, warn or error" }),
  /** Sandbox only: simulated ms per real ms (SANDBOX_TIME_SCALE). */
  sandboxTimeScale: z.coerce.number().positive("SANDBOX_TIME_SCALE must be positive").optional(),
  /** Sandbox only: faults to inject from the start (SANDBOX_FAULTS, a JSON array). */
  sandboxFaults: z.array(z.looseObject({ service: z.string(), fault: z.string() })).optional(),
});

export type Config = z.infer<typeof ConfigSchema>;

export type Command =
  | { kind: "serve"; config: Config }
  | { kind: "sandbox"; port: number; host: string; timeScale?: number; faults?: Config["sandboxFaults"] }
  | { kind: "help" }
  | { kind: "version" };

export class ConfigError extends Error {}

export const HELP = `switchboard-mcp: an MCP server for a project build service, a size recommendation API and a drone fleet API

Usage:
  switchboard-mcp [--transport stdio|http] [--host 127.0.0.1] [--port 3000]
                  [--sandbox] [--toolsets build,build_admin,sizing,drones] [--read-only]
  switchboard-mcp sandbox [--port N]    run only the simulated upstream services
  switchboard-mcp --help | --version

Environment: BUILD_API_BASE_URL, BUILD_API_KEY, BUILD_API_KEY_HEADER, BUILD_POLL_INTERVAL_MS,
  SIZING_API_BASE_URL, SIZING_API_KEY, DRONES_API_BASE_URL, DRONES_API_KEY, BUILD_CONFIRM_SPEND,
  UPSTREAM_TIMEOUT_MS, MCP_HTTP_TOKEN, MCP_ALLOWED_ORIGINS, LOG_LEVEL,
  MCP_MAX_SESSIONS, MCP_SESSION_IDLE_MS, SANDBOX_TIME_SCALE, SANDBOX_FAULTS.
Logs go to stderr; stdout carries only MCP protocol messages.`;

/** Parses argv (without node and script) and the environment. Throws ConfigError with a one-line message. */
export function parseCommand(argv: string[], env: NodeJS.ProcessEnv): Command {
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
    throw new ConfigError(`${(err as Error).message.split("\n")[0]} (see --help)`);
  }
  const { values, positionals } = parsed;
  if (values.help) return { kind: "help" };
  if (values.version) return { kind: "version" };
  if (positionals.length > 1 || (positionals.length === 1 && positionals[0] !== "sandbox")) {
    throw new ConfigError(`Unknown command "${positionals.join(" ")}" (see --help)`);
  }
  const timeScale = env.SANDBOX_TIME_SCALE;
  if (positionals[0] === "sandbox") {
    const port = Number(values.port ?? 4010);
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ConfigError("--port must be 0-65535");
    const scale = timeScale === undefined ? undefined : Number(timeScale);
    if (scale !== undefined && !(scale > 0)) throw new ConfigError("SANDBOX_TIME_SCALE must be positive");
    return { kind: "sandbox", port, host: values.host ?? "127.0.0.1", timeScale: scale, faults: parseFaults(env.SANDBOX_FAULTS) };
  }

  const sandbox = values.sandbox ?? false;
  const raw = {
    transport: values.transport ?? "stdio",
    host: values.host ?? "127.0.0.1",
    port: values.port ?? "3000",
    sandbox,
    toolsets: values.toolsets === undefined ? undefined : values.toolsets.split(",").map((s) => s.trim()).filter(Boolean),
    readOnly: values["read-only"] ?? false,
    build: {
      baseUrl: nonEmpty(env.BUILD_API_BASE_URL) ?? DEFAULT_BUILD_BASE_URL,
      apiKey: nonEmpty(env.BUILD_API_KEY),
      keyHeader: nonEmpty(env.BUILD_API_KEY_HEADER) ?? "api-key",
    },
    sizing: { baseUrl: nonEmpty(env.SIZING_API_BASE_URL), apiKey: nonEmpty(env.SIZING_API_KEY) },
    drones: { baseUrl: nonEmpty(env.DRONES_API_BASE_URL), apiKey: nonEmpty(env.DRONES_API_KEY) },
    // The sandbox runs builds at SANDBOX_TIME_SCALE, so a 12 s production poll would miss most of one.
    pollIntervalMs: nonEmpty(env.BUILD_POLL_INTERVAL_MS) ?? (sandbox ? "1000" : "12000"),
    confirmSpend: nonEmpty(env.BUILD_CONFIRM_SPEND) ?? "always",
    upstreamTimeoutMs: nonEmpty(env.UPSTREAM_TIMEOUT_MS) ?? "30000",
    httpToken: nonEmpty(env.MCP_HTTP_TOKEN),
    maxSessions: nonEmpty(env.MCP_MAX_SESSIONS) ?? "1000",
    sessionIdleMs: nonEmpty(env.MCP_SESSION_IDLE_MS) ?? String(30 * 60_000),
    allowedOrigins: nonEmpty(env.MCP_ALLOWED_ORIGINS)?.split(",").map((s) => s.trim().replace(/\/+$/, "")).filter(Boolean) ?? LOOPBACK_ORIGINS,
    logLevel: nonEmpty(env.LOG_LEVEL) ?? "info",
    sandboxTimeScale: nonEmpty(timeScale),
    sandboxFaults: parseFaults(env.SANDBOX_FAULTS),
  };
  const result = ConfigSchema.safeParse(raw);
  if (!result.success) {
    const issue = result.error.issues[0];
    const where = issue.path.length ? `${issue.path.join(".")}: ` : "";
    throw new ConfigError(`Invalid configuration: ${where}${issue.message}`);
  }
  const config = result.data;
  if (config.transport === "http" && !isLoopbackHost(config.host) && !config.httpToken) {
    throw new ConfigError(`Refusing to bind non-loopback host ${config.host} without MCP_HTTP_TOKEN`);
  }
  return { kind: "serve", config };
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

function nonEmpty(v: string | undefined): string | undefined {
  return v === undefined || v.trim() === "" ? undefined : v.trim();
}

export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase();
  return h === "localhost" || h === "::1" || /^127\.\d+\.\d+\.\d+$/.test(h);
}

/** Which services have what they need to be registered. */
export function configuredServices(config: Config): Set<ServiceName> {
  const services = new Set<ServiceName>();
  if (config.build.apiKey) services.add("build");
  if (config.sizing.apiKey && config.sizing.baseUrl) services.add("sizing");
  if (config.drones.apiKey && config.drones.baseUrl) services.add("drones");
  return services;
}

/** Toolsets to register: the requested ones (or all) whose service is configured. */
export function enabledToolsets(config: Config): Toolset[] {
  const services = configuredServices(config);
  const wanted = config.toolsets ?? [...TOOLSETS];
  return wanted.filter((t) => services.has(TOOLSET_SERVICE[t]));
}
