import type { Config } from "../config.js";
import type { ServerDefinition, TenantContext } from "../core/mcp/runtime.js";
import type { ServiceModule } from "../core/service/service.js";

/**
 * The enabled services' resources, prompts and watchers, defined once per process and shared by
 * every tenant like the tools: each reads with the calling tenant's deps of its service.
 */
export function sharedResources(
  enabled: readonly ServiceModule<any>[],
  config: Config,
): Pick<ServerDefinition, "resources" | "prompts"> & Pick<TenantContext, "watchers"> {
  return {
    resources: enabled.flatMap((m) =>
      (m.resources?.(config.services.get(m.name)!) ?? []).map((def) => ({ ...def, service: m.name })),
    ),
    prompts: enabled.flatMap((m) => m.prompts ?? []),
    watchers: enabled.flatMap((m) => (m.watch ? [{ service: m.name, watch: m.watch }] : [])),
  };
}
