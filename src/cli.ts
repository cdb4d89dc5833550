import { ConfigError, helpText, parseCommand, type Config } from "./config.js";
import { launch, sandboxEnv, type Launched } from "./launch.js";
import type { App } from "./server.js";
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
      const sandbox = await startSandbox({
        host: command.host,
        port: command.port,
        timeScale: command.timeScale,
        faults: command.faults as never,
        accounts: command.accounts,
        build: { webhookCa: command.webhookCa },
      });
      const env = sandboxEnv(sandbox);
      const more = Object.entries(sandbox.accounts).flatMap(([name, accounts]) =>
        accounts.slice(1).map((a, i) => `  ${name} account ${i + 2}: ${a.key}`),
      );
      const lines = [...Object.entries(env).map(([k, v]) => `  ${k}=${v}`), ...more];
      process.stderr.write(`switchboard-mcp sandbox listening on ${sandbox.url}\n${lines.join("\n")}\n`);
      onShutdown(() => sandbox.close());
      return;
    }
    case "serve":
      await serve(command.config);
  }
}

async function serve(config: Config): Promise<void> {
  for (const warning of config.warnings) process.stderr.write(`switchboard-mcp: ${warning}\n`);
  let launched: Launched | undefined;
  launched = await launch(config, {}, () => void launched?.shutdown().then(() => process.exit(0)));
  onShutdown(launched.shutdown, launched.graceMs);
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
