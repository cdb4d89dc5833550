#!/usr/bin/env node
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { ConfigError, HELP, parseCommand, type Config } from "./config.js";
import { createRuntime, createServer } from "./server.js";
import type { Sandbox } from "./sandbox/index.js";
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
      process.stdout.write(`${HELP}\n`);
      return;
    case "version":
      process.stdout.write(`${VERSION}\n`);
      return;
    case "sandbox": {
      const { startSandbox } = await import("./sandbox/index.js");
      const sandbox = await startSandbox({ host: command.host, port: command.port, timeScale: command.timeScale, faults: command.faults as never });
      process.stderr.write(
        `switchboard-mcp sandbox listening on ${sandbox.url}\n` +
          `  BUILD_API_BASE_URL=${sandbox.urls.build} BUILD_API_KEY=${sandbox.keys.build}\n` +
          `  SIZING_API_BASE_URL=${sandbox.urls.sizing} SIZING_API_KEY=${sandbox.keys.sizing}\n` +
          `  DRONES_API_BASE_URL=${sandbox.urls.drones} DRONES_API_KEY=${sandbox.keys.drones}\n`,
      );
      onShutdown(() => sandbox.close());
      return;
    }
    case "serve":
      await serve(command.config);
  }
}

async function serve(initial: Config): Promise<void> {
  let config = initial;
  let sandbox: Sandbox | undefined;
  if (config.sandbox) {
    const { startSandbox } = await import("./sandbox/index.js");
    sandbox = await startSandbox({ timeScale: config.sandboxTimeScale, faults: config.sandboxFaults as never });
    config = {
      ...config,
      build: { baseUrl: sandbox.urls.build, apiKey: sandbox.keys.build, keyHeader: config.build.keyHeader },
      sizing: { baseUrl: sandbox.urls.sizing, apiKey: sandbox.keys.sizing },
      drones: { baseUrl: sandbox.urls.drones, apiKey: sandbox.keys.drones },
    };
  }
  const runtime = createRuntime(config);
  const { logger } = runtime;
  const stopSandbox = async () => sandbox?.close();

  if (config.transport === "stdio") {
    const server = createServer(runtime);
    await server.connect(new StdioServerTransport());
    logger.info("switchboard-mcp ready on stdio", { version: VERSION, toolsets: runtime.toolsets, sandbox: sandbox?.url });
    const stop = async () => {
      await server.close().catch(() => undefined);
      await runtime.close();
      await stopSandbox();
    };
    process.stdin.once("end", () => void stop().then(() => process.exit(0)));
    onShutdown(stop);
    return;
  }

  const { startHttpTransport } = await import("./core/http-transport.js");
  const http = await startHttpTransport({
    host: config.host,
    port: config.port,
    token: config.httpToken,
    allowedOrigins: config.allowedOrigins,
    maxSessions: config.maxSessions,
    idleSessionMs: config.sessionIdleMs,
    logger,
    createSession: () => createServer(runtime),
    health: () => ({ version: VERSION, toolsets: runtime.toolsets, readOnly: config.readOnly, sandbox: Boolean(sandbox) }),
  });
  logger.info(`switchboard-mcp ready on ${http.url}`, { version: VERSION, toolsets: runtime.toolsets, sandbox: sandbox?.url });
  onShutdown(async () => {
    await http.close();
    await runtime.close();
    await stopSandbox();
  });
}

function onShutdown(stop: () => Promise<unknown>): void {
  let stopping = false;
  const handler = (signal: string) => {
    if (stopping) return;
    stopping = true;
    process.stderr.write(`switchboard-mcp: ${signal}, shutting down\n`);
    const force = setTimeout(() => process.exit(1), 5000);
    force.unref();
    stop().finally(() => process.exit(0));
  };
  process.once("SIGINT", () => handler("SIGINT"));
  process.once("SIGTERM", () => handler("SIGTERM"));
}

main().catch((err) => {
  process.stderr.write(`switchboard-mcp: fatal: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
