import { checkWebhooks, configuredServices, shownCredentialHeader, type Config } from "./config.js";
import type { ConnectPageOptions } from "./core/http/connect-page.js";
import type { HttpOptions } from "./core/http/transport.js";
import type { ServiceDeclaration } from "./core/service/service.js";
import { isLoopbackUrl } from "./core/service/settings.js";
import { telemetry, telemetryWanted, useTelemetry } from "./core/base/telemetry.js";
import { declaredServer } from "./instructions.js";
import type { Sandbox } from "./sandbox/index.js";
import type { AnySimulator } from "./sandbox/simulator.js";
import type { App, RedisModule } from "./server.js";
import { loadServices, SERVICES } from "./services/registry.js";
import { VERSION } from "./version.js";

/** The services and simulators to run (default: services/registry.ts and sandbox/registry.ts). */
export interface Registry {
  services?: readonly ServiceDeclaration<any>[];
  simulators?: readonly AnySimulator[];
}

export interface Launched {
  /** HTTP: the MCP endpoint. */
  url?: string;
  /** Stops taking requests, lets those in flight finish (HTTP: ENV.drainMs, drainIdleMs), closes everything. */
  shutdown(): Promise<void>;
  /** How long `shutdown` may take before the process should give up on it. */
  graceMs: number;
}

/**
 * Starts what `config` asks for: the sandbox under --sandbox, the app, then the transport.
 * `onStdinEnd` runs when a stdio client closes the connection.
 */
export async function launch(
  initial: Config,
  registry: Registry = {},
  onStdinEnd: () => void = () => undefined,
): Promise<Launched> {
  const services = registry.services ?? SERVICES;
  const simulators = initial.sandbox ? (registry.simulators ?? (await import("./sandbox/registry.js")).SIMULATORS) : [];
  if (initial.transport === "stdio") return serveStdio(initial, services, simulators, onStdinEnd);
  let config = initial;
  let sandbox: Sandbox | undefined;
  if (config.sandbox) {
    sandbox = await startSimulators(config, simulators, services);
    config = pointedAt(sandbox, config, services);
  }

  const redis = config.stateUrl ? await import("./core/state/redis.js") : undefined;
  const app = await buildApp(config, services, redis);
  const { logger } = app.runtime;
  const metricsUrl = await observe(app, "tcp", config);
  const stop = async () => {
    await app.close();
    await sandbox?.close();
    await telemetry.close();
  };
  const { oauthGate, tenantCredentials } = await import("./app/request-tenant.js");
  const { startHttpTransport } = await import("./core/http/transport.js");
  const oauth = config.auth === "oauth" ? await oauthGate(config, app) : undefined;
  const perTenant = app.credentials === "caller" || oauth;
  const http = await startHttpTransport({
    host: config.host,
    port: config.port,
    token: config.httpToken,
    allowedOrigins: config.allowedOrigins,
    allowedHosts: config.allowedHosts,
    maxSessions: config.maxSessions,
    maxSessionsPerTenant: app.perTenant ? config.maxSessionsPerTenant : Number.POSITIVE_INFINITY,
    idleSessionMs: config.sessionIdleMs,
    maxConnections: config.maxConnections,
    headersTimeoutMs: config.headersTimeoutMs,
    unauthRatePerSec: config.unauthRate,
    bodyBudgetBytes: config.bodyBudgetBytes,
    logger,
    runtime: app.runtime,
    runtimeFor: perTenant
      ? (headers, identity) => app.runtimeFor(tenantCredentials(headers, identity, app, config))
      : undefined,
    oauth,
    pages: await pages(config, services, app.connect, app.hooks),
    replicaId: app.replicaId,
    ready: app.ready,
    health: () => ({
      version: VERSION,
      toolsets: app.toolsets,
      readOnly: config.readOnly,
      sandbox: Boolean(sandbox) || onLoopback(config, services),
      credentials: app.credentials,
      replica: app.replicaId,
      ...app.stats(),
    }),
  });
  logger.info(`switchboard-mcp ready on ${http.url}`, {
    version: VERSION,
    toolsets: app.toolsets,
    sandbox: sandbox?.url,
    credentials: app.credentials,
    state: config.stateUrl ? "redis" : "memory",
    replica: app.replicaId,
    ...(metricsUrl ? { metrics: metricsUrl } : {}),
  });
  return {
    url: http.url,
    graceMs: Math.max(config.drainMs, config.drainIdleMs) + 5000,
    shutdown: async () => {
      // Readiness turns 503 and requests in flight finish; then the tasks followed here are handed over.
      await http.drain(config.drainMs, config.drainIdleMs);
      await http.close();
      await stop();
    },
  };
}

/** The services' implementations and the app: what every request after the first answer needs. */
async function buildApp(
  config: Config | Promise<Config>,
  services: readonly ServiceDeclaration<any>[],
  redis?: RedisModule,
): Promise<App> {
  const [{ createApp }, modules, ready] = await Promise.all([import("./server.js"), loadServices(services), config]);
  return createApp(ready, redis, modules);
}

/**
 * Traces and metrics, when the OTEL_* variables or the metrics address ask for them: only then is
 * the OpenTelemetry SDK loaded (a chunk of its own). Returns the /metrics URL, if any.
 */
async function observe(
  app: App,
  transport: "tcp" | "pipe",
  { metricsAddress, traceResourceUris }: Pick<Config, "metricsAddress" | "traceResourceUris">,
  env = process.env,
): Promise<string | undefined> {
  if (!telemetryWanted(env, metricsAddress)) return undefined;
  const { startTelemetry } = await import("./core/telemetry/otel.js");
  const started = await startTelemetry({
    env,
    metricsAddress,
    resourceUris: traceResourceUris,
    version: VERSION,
    replicaId: app.replicaId,
    transport,
    scrub: (text) => app.runtime.egress.text(text),
  });
  for (const [gauge, read] of Object.entries(app.gauges)) started.gauge(gauge as keyof App["gauges"], read);
  useTelemetry(started);
  return started.metricsUrl;
}

/** --sandbox: loads the simulators and starts them on one loopback listener. */
async function startSimulators(
  config: Config,
  simulators: readonly AnySimulator[],
  services: readonly ServiceDeclaration<any>[],
): Promise<Sandbox> {
  const { startSandbox } = await import("./sandbox/index.js");
  const { sandboxTimeScale: timeScale, sandboxFaults: faults, sandboxAccounts: accounts } = config;
  const build = { webhookCa: config.sandboxWebhookCa };
  const started = await startSandbox({ timeScale, faults: faults as never, accounts, simulators, build });
  const sandbox = started as unknown as Sandbox;
  // Per-user mode: each caller sends keys; these are the ones the simulators accept (demo keys, not secrets).
  if (config.credentials === "caller") {
    process.stderr.write(`switchboard-mcp: sandbox keys for callers: ${callerKeysLine(sandbox, services)}\n`);
  }
  return sandbox;
}

/** `config` with every service that has a simulator pointed at it (and no other). */
function pointedAt(
  sandbox: Pick<Sandbox, "urls" | "keys">,
  config: Config,
  services: readonly ServiceDeclaration<any>[],
): Config {
  const env = { ...process.env, ...sandboxEnv(sandbox, services) };
  const configured = configuredServices(env, "operator", services);
  checkWebhooks(config, configured, services);
  return { ...config, services: configured };
}

/**
 * The sandbox as the simulators' declarations describe it before it listens: the same keys, and
 * loopback URLs with the same paths, without a port. Which services it configures (hence the
 * instructions and capabilities) depends only on which simulators exist.
 */
function declaredSandbox(simulators: readonly AnySimulator[]): Pick<Sandbox, "urls" | "keys"> {
  return {
    urls: Object.fromEntries(simulators.map((s) => [s.name, `http://127.0.0.1${s.prefix}`])),
    keys: Object.fromEntries(simulators.map((s) => [s.name, s.demoKey])),
  } as Pick<Sandbox, "urls" | "keys">;
}

/**
 * stdio: the opening is answered from the declarations (instructions, capabilities); the
 * simulators (--sandbox) and the services' tools and clients load right after it, and
 * core/stdio/serve.ts holds every later message until they are ready.
 */
async function serveStdio(
  config: Config,
  services: readonly ServiceDeclaration<any>[],
  simulators: readonly AnySimulator[],
  onStdinEnd: () => void,
): Promise<Launched> {
  const { serveStdioApp } = await import("./core/stdio/serve.js");
  const declared = declaredServer(
    config.sandbox ? pointedAt(declaredSandbox(simulators), config, services) : config,
    services,
  );
  let app: App | undefined;
  let building: Promise<App> | undefined;
  let sandbox: Promise<Sandbox> | undefined;
  const built = () => {
    if (building) return building;
    sandbox = config.sandbox ? startSimulators(config, simulators, services) : undefined;
    const ready = sandbox ? sandbox.then((started) => pointedAt(started, config, services)) : config;
    building = buildApp(
      Promise.resolve(ready).then((c) => ({ ...c, stateUrl: undefined })),
      services,
    ).then(async (made) => {
      await observe(made, "pipe", config);
      app = made;
      made.runtime.logger.info("switchboard-mcp ready on stdio", {
        version: VERSION,
        toolsets: made.toolsets,
        sandbox: (await sandbox)?.url,
      });
      return made;
    });
    return building;
  };
  serveStdioApp(
    {
      shell: {
        ...declared,
        verifyRequestState: (state, ctx) => {
          if (!app) throw new Error("a confirmation arrived before the server was ready");
          return app.runtime.definition.confirmations.verify(state, ctx);
        },
      },
      load: async () => (await built()).runtime,
      failed: (err) => {
        process.stderr.write(`switchboard-mcp: fatal: ${err instanceof Error ? err.message : String(err)}\n`);
        process.exit(1);
      },
    },
    onStdinEnd,
  );
  return {
    graceMs: 5000,
    shutdown: async () => {
      await (await building?.catch(() => undefined))?.close();
      await (await sandbox?.catch(() => undefined))?.close();
      await telemetry.close();
    },
  };
}

/** `X-Build-Api-Key: … (account 2: …); X-Sizing-Api-Key: …; …` */
function callerKeysLine(sandbox: Sandbox, services: readonly ServiceDeclaration<any>[]): string {
  const accounts = sandbox.accounts as Record<string, Array<{ key: string }> | undefined>;
  return services
    .filter((s) => accounts[s.name]?.length)
    .map((s) => {
      const [first, ...more] = accounts[s.name]!;
      const others = more.map((a, i) => ` (account ${i + 2}: ${a.key})`).join("");
      return `${shownCredentialHeader(s.name)}: ${first.key}${others}`;
    })
    .join("; ");
}

/** Every service points at a loopback address: a sandbox of this process or one beside it (scripts/cluster.mjs). */
function onLoopback(config: Config, services: readonly ServiceDeclaration<any>[]): boolean {
  const configured = [...config.services];
  const baseUrl = (name: string, settings: Record<string, unknown>) =>
    String(settings[services.find((s) => s.name === name)?.baseUrlVar ?? ""] ?? "");
  return configured.length > 0 && configured.every(([name, settings]) => isLoopbackUrl(baseUrl(name, settings)));
}

/** The variables that point every service at its simulator (paired by name; a service without one is left out). */
export function sandboxEnv(
  sandbox: Pick<Sandbox, "urls" | "keys">,
  services: readonly ServiceDeclaration<any>[] = SERVICES,
): Record<string, string> {
  const urls = sandbox.urls as Record<string, string>;
  const keys = sandbox.keys as Record<string, string>;
  return Object.fromEntries(
    services
      .filter((s) => urls[s.name])
      .flatMap((s) => [
        [s.baseUrlVar, urls[s.name]],
        [s.apiKeyVar, keys[s.name]],
      ]),
  );
}

/** What is served beside /mcp: webhook deliveries, the server card, and with linked keys the connect page. */
async function pages(
  config: Config,
  services: readonly ServiceDeclaration<any>[],
  connect: ConnectPageOptions | undefined,
  hooks: NonNullable<HttpOptions["pages"]> | undefined,
): Promise<NonNullable<HttpOptions["pages"]>> {
  const card = (await import("./server-card.js")).serverCardPage(config, services);
  const linking = connect && (await import("./core/http/connect-page.js")).connectPages(connect);
  return async (req, res, url) =>
    (hooks ? await hooks(req, res, url) : false) ||
    (await card(req, res, url)) ||
    (linking ? linking(req, res, url) : false);
}
