import type { Config } from "../config.js";
import type { Logger } from "../core/base/logger.js";
import type { Sealer } from "../core/base/seal.js";
import { taskTool, type TenantRuntime } from "../core/mcp/runtime.js";
import type { ServiceModule } from "../core/service/service.js";
import { TaskRunner } from "../core/tasks/runner.js";
import type { TaskStore } from "../core/tasks/store.js";
import type { ToolDef } from "../core/tools/tool.js";

/**
 * The process's task runner: its caps from the config, the services' words for work a task lost,
 * and, on a shared store, how an orphaned task finds its tool again (its tenant, from the sealed keys).
 */
export function taskRunner(
  store: TaskStore,
  options: {
    config: Config;
    logger: Logger;
    sealer: Sealer;
    leaseMs: number;
    perTenant: boolean;
    /** tasks/get's pollInterval when no service says otherwise. */
    pollIntervalMs: number;
    tools: readonly ToolDef<any, any>[];
    enabled: readonly ServiceModule<any>[];
    runtimeFor(credentials: Readonly<Record<string, string>> | undefined): TenantRuntime;
  },
): TaskRunner {
  const { config, perTenant, tools, enabled, runtimeFor } = options;
  return new TaskRunner(store, {
    pollIntervalMs: options.pollIntervalMs,
    logger: options.logger,
    sealer: options.sealer,
    leaseMs: options.leaseMs,
    requestDeadlineMs: config.upstreamTimeoutMs,
    maxWorkingPerOwner: perTenant ? config.maxTasksPerTenant : undefined,
    lostTask: (tool) => {
      const toolset = tools.find((d) => d.name === tool)?.toolset;
      return enabled.find((s) => s.toolsets.some((t) => t.id === toolset))?.lostTask;
    },
    adopt: (owner, credentials, tool) => {
      const rt = runtimeFor(credentials);
      const def = rt.definition.tools.find((t) => t.name === tool);
      return rt.owner() === owner && def ? taskTool(rt, def) : undefined;
    },
  });
}
