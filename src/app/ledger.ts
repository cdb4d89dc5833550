import { createHash } from "node:crypto";
import { homedir } from "node:os";
import { join } from "node:path";
import type { Config } from "../config.js";
import type { Logger } from "../core/base/logger.js";
import { Sealer } from "../core/base/seal.js";
import { ENV } from "../core/base/settings.js";
import { FileLedgerStore } from "../core/state/ledger-file.js";
import { SpendLedger } from "../core/tools/ledger.js";
import { MemoryLedgerStore } from "../core/tools/ledger-store.js";
import type { ToolDef } from "../core/tools/tool.js";
import type { ServiceDeclaration } from "../core/service/service.js";
import { serviceOfToolset } from "./tools.js";
import type { SharedState } from "./state.js";

/**
 * The spend ledger (core/tools/ledger.ts) where it lives: on Redis with ENV.stateUrl (written back
 * after a restart that lost it), else in files under ENV.stateDir, so a respawned server
 * remembers. A state directory it cannot use is a start-up warning, and every spend then asks first.
 * Under --sandbox the records live as long as the process: its simulated upstream forgets every
 * call when the process ends, so an earlier run's record names work the new sandbox never saw.
 */
export function spendLedger(
  config: Config,
  state: SharedState,
  sealer: Sealer,
  logger: Logger,
  perTenant: boolean,
  enabled: readonly ServiceDeclaration<any>[],
): SpendLedger | undefined {
  const windowMs = config.repeatWindowSeconds * 1000;
  if (windowMs <= 0) return undefined;
  const common = { windowMs, logger, accountOf: perTenant ? undefined : accountOf(config, enabled) };
  if (state.redis) {
    const ledger = new SpendLedger({ ...common, store: state.ledger, sealer });
    // A restart is seen by its generation: when Redis is back, on a timer, and in every ledger answer.
    const check = () => void ledger.check();
    state.redis.state.reconnected.add(check);
    setInterval(check, state.redis.state.leaseMs / 3).unref();
    return ledger;
  }
  if (config.sandbox) return new SpendLedger({ ...common, store: new MemoryLedgerStore(), sealer });
  const dir = stateDir(config);
  try {
    const store = FileLedgerStore.open(dir);
    return new SpendLedger({ ...common, store, sealer: new Sealer(store.secret) });
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    logger.warn(
      `spend ledger unavailable: ${why}. Paid calls are not remembered across restarts, so every one ` +
        `asks first (repeat: true spends). Fix ${ENV.stateDir} or its permissions, then restart`,
      { dir },
    );
    return new SpendLedger({ ...common, store: new MemoryLedgerStore(), sealer, degraded: `${ENV.stateDir}: ${why}` });
  }
}

/** ENV.stateDir, else $XDG_STATE_HOME/switchboard-mcp, else ~/.local/state/switchboard-mcp. */
export function stateDir(config: Pick<Config, "stateDir">, env: NodeJS.ProcessEnv = process.env): string {
  if (config.stateDir) return config.stateDir;
  const base = env.XDG_STATE_HOME || join(env.HOME || homedir(), ".local", "state");
  return join(base, "switchboard-mcp");
}

/**
 * One account per service (ENV.credentials=operator): a tool's records belong to the address and
 * key its service is configured with, digested, so another key or another upstream finds none.
 */
function accountOf(config: Config, enabled: readonly ServiceDeclaration<any>[]): (def: ToolDef<any, any>) => string {
  const serviceOf = serviceOfToolset(enabled);
  const accounts = new Map(
    enabled.map((s) => {
      const settings = config.services.get(s.name) ?? {};
      const identity = JSON.stringify([s.name, settings[s.baseUrlVar], settings[s.apiKeyVar]]);
      return [s.name, createHash("sha256").update(identity).digest("base64url")] as const;
    }),
  );
  return (def) => accounts.get(serviceOf.get(def.toolset) ?? "") ?? def.toolset;
}
