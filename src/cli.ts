#!/usr/bin/env node
import { ConfigError, configuredServices, helpText, parseCommand, type Config } from "./config.js";
import { RequestRefused } from "./core/http/guards.js";
import { setUpstreamBodyBudget } from "./core/upstream.js";
import type { Identity } from "./core/auth/resource-server.js";
import { createApp, ISSUER, SUBJECT, type App } from "./server.js";
import type { Sandbox } from "./sandbox/index.js";
import { SERVICES } from "./services/registry.js";
import { VERSION } from "./version.js";

/** flags + environment -> config -> start a transport. Nothing else lives here. */
async function main(): Promise<void> {
  let command;
  try {
    command = parseCommand(process.argv.slice(2), process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`switchboard-mcp: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  switch (command.kind) {
    case "help":
      process.stdout.write(`${helpText()}\n`);
      return;
    case "version":
      process.stdout.write(`${VERSION}\n`);
      return;
    case "sandbox": {
      const { startSandbox } = await import("./sandbox/index.js");
      const sandbox = await startSandbox({ host: command.host, port: command.port, timeScale: command.timeScale, faults: command.faults as never, accounts: command.accounts });
      const env = sandboxEnv(sandbox);
      const more = sandbox.buildKeys.slice(1).map((k, i) => `  build account ${i + 2}: ${k}`);
      process.stderr.write(`switchboard-mcp sandbox listening on ${sandbox.url}\n${[...Object.entries(env).map(([k, v]) => `  ${k}=${v}`), ...more].join("\n")}\n`);
      onShutdown(() => sandbox.close());
      return;
    }
    case "serve":
      await serve(command.config);
  }
}

/** The variables that point every service at the sandbox. */
function sandboxEnv(sandbox: Sandbox): Record<string, string> {
  const urls = sandbox.urls as Record<string, string>;
  const keys = sandbox.keys as Record<string, string>;
  return Object.fromEntries(SERVICES.flatMap((s) => [
    [s.baseUrlVar, urls[s.name]],
    [s.apiKeyVar, keys[s.name]],
  ]));
}

async function serve(initial: Config): Promise<void> {
  for (const warning of initial.warnings) process.stderr.write(`switchboard-mcp: ${warning}\n`);
  let config = initial;
  let sandbox: Sandbox | undefined;
  if (config.sandbox) {
    const { startSandbox } = await import("./sandbox/index.js");
    sandbox = await startSandbox({ timeScale: config.sandboxTimeScale, faults: config.sandboxFaults as never });
    config = { ...config, services: configuredServices({ ...process.env, ...sandboxEnv(sandbox) }) };
  }
  if (config.upstreamBodyBudgetBytes) setUpstreamBodyBudget(config.upstreamBodyBudgetBytes);
  const redis = config.stateUrl && config.transport === "http" ? await import("./core/state/redis.js") : undefined;
  const app = createApp(config.transport === "http" ? config : { ...config, stateUrl: undefined }, redis);
  const { logger } = app.runtime;
  const stop = async () => {
    await app.close();
    await sandbox?.close();
  };

  if (config.transport === "stdio") {
    const { serveStdioApp } = await import("./core/stdio-entry.js");
    serveStdioApp(app.runtime, () => void stop().then(() => process.exit(0)));
    logger.info("switchboard-mcp ready on stdio", { version: VERSION, toolsets: app.toolsets, sandbox: sandbox?.url });
    onShutdown(stop);
    return;
  }

  const { startHttpTransport } = await import("./core/http/transport.js");
  const oauth = config.auth === "oauth" ? await oauthGate(config, app) : undefined;
  const http = await startHttpTransport({
    host: config.host,
    port: config.port,
    token: config.httpToken,
    allowedOrigins: config.allowedOrigins,
    allowedHosts: config.allowedHosts,
    maxSessions: config.maxSessions,
    maxSessionsPerTenant: config.maxSessionsPerTenant,
    idleSessionMs: config.sessionIdleMs,
    maxConnections: config.maxConnections,
    headersTimeoutMs: config.headersTimeoutMs,
    unauthRatePerSec: config.unauthRate,
    bodyBudgetBytes: config.bodyBudgetBytes,
    logger,
    runtime: app.runtime,
    runtimeFor: app.credentials === "caller" || oauth ? (headers, identity) => app.runtimeFor(tenantCredentials(headers, identity, app, config)) : undefined,
    oauth,
    replicaId: app.replicaId,
    ready: app.ready,
    health: () => ({ version: VERSION, toolsets: app.toolsets, readOnly: config.readOnly, sandbox: Boolean(sandbox), credentials: app.credentials, replica: app.replicaId, ...app.stats() }),
  });
  logger.info(`switchboard-mcp ready on ${http.url}`, { version: VERSION, toolsets: app.toolsets, sandbox: sandbox?.url, credentials: app.credentials, state: config.stateUrl ? "redis" : "memory", replica: app.replicaId });
  onShutdown(async () => {
    // Readiness turns 503 and requests in flight finish; then the tasks followed here are handed over.
    await http.drain(config.drainMs);
    await http.close();
    await stop();
  }, config.drainMs + 5000);
}

/** The longest key a header may carry: no real key comes close, and a longer value is refused by name. */
const MAX_KEY_LENGTH = 1024;

/**
 * The upstream keys a request brings (per-user mode): one header per service, and for the build
 * service also `Authorization: Bearer tlm_sk_…` when the bearer is not the server's own token.
 */
function callerKeys(headers: Readonly<Record<string, string[] | undefined>>, app: App, bearerMayCarryKey: boolean): Record<string, string> {
  const keys: Record<string, string> = {};
  for (const { service, header } of app.credentialHeaders) {
    const values = headers[header] ?? [];
    const name = header.replace(/(^|-)([a-z])/g, (_, dash: string, c: string) => dash + c.toUpperCase());
    // Node would join two of them into "kA, kB" and that would go upstream as the key.
    if (values.length > 1) throw new RequestRefused(400, `${name} was sent ${values.length} times; send it once, with one key.`);
    const key = values[0]?.trim();
    if (key && key.length > MAX_KEY_LENGTH) {
      throw new RequestRefused(400, `${name} is ${key.length} characters long, over the ${MAX_KEY_LENGTH.toLocaleString("en-US")}-character limit for a key; send the key alone.`);
    }
    if (key) keys[service] = key;
  }
  const authorization = headers.authorization ?? [];
  if (bearerMayCarryKey && authorization.length > 1) throw new RequestRefused(400, `Authorization was sent ${authorization.length} times; send it once.`);
  const bearer = /^Bearer\s+(tlm_sk_\S+)$/i.exec(String(authorization[0] ?? "").trim())?.[1];
  if (bearerMayCarryKey && bearer && !keys.build && app.credentialHeaders.some((h) => h.service === "build")) keys.build = bearer;
  return keys;
}

/** MCP_AUTH=oauth: the resource server, warmed up (issuer discovery) so a misconfiguration shows at start. */
async function oauthGate(config: Config, app: App) {
  const [{ ResourceServer }, { createOAuthGate }, { scopeForKind }] = await Promise.all([
    import("./core/auth/resource-server.js"),
    import("./core/http/oauth-gate.js"),
    import("./core/auth/scopes.js"),
  ]);
  const server = new ResourceServer({
    publicUrl: config.publicUrl!,
    issuers: config.authIssuers,
    audience: config.authAudience,
    documentationUrl: config.authDocsUrl ?? OAUTH_DOCS_URL,
    introspection: config.introspectionUrl ? { url: config.introspectionUrl, clientId: config.authClientId!, clientSecret: config.authClientSecret! } : undefined,
  });
  const { logger } = app.runtime;
  for (const { issuer, error } of await server.discover()) {
    if (error) logger.warn("OAuth: issuer metadata not reachable yet; tokens from it are refused (503) until it is", { issuer, error });
  }
  const scopes = new Map(app.runtime.tools.map((t) => [t.name, scopeForKind(t.kind)]));
  return createOAuthGate(server, (name) => scopes.get(name), logger);
}

const OAUTH_DOCS_URL = "https://github.com/switchboard-mcp/switchboard-mcp/blob/main/docs/deployment.md#oauth";

/** A request's tenant: the keys it brings (MCP_CREDENTIALS=caller) and its signed-in user (MCP_AUTH=oauth). */
function tenantCredentials(headers: Readonly<Record<string, string[] | undefined>>, identity: Identity | undefined, app: App, config: Config): Record<string, string> {
  const keys = app.credentials === "caller" ? callerKeys(headers, app, !config.httpToken && !identity) : {};
  return identity ? { ...keys, [ISSUER]: identity.issuer, [SUBJECT]: identity.subject } : keys;
}

function onShutdown(stop: () => Promise<unknown>, graceMs = 5000): void {
  let stopping = false;
  const handler = (signal: string) => {
    if (stopping) return;
    stopping = true;
    process.stderr.write(`switchboard-mcp: ${signal}, shutting down\n`);
    const force = setTimeout(() => process.exit(1), graceMs);
    force.unref();
    stop().finally(() => process.exit(0));
  };
  process.once("SIGINT", () => handler("SIGINT"));
  process.once("SIGTERM", () => handler("SIGTERM"));
}

export type { App };

main().catch((err) => {
  process.stderr.write(`switchboard-mcp: fatal: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
