import { credentialHeader, type Config } from "../config.js";
import type { ServiceDeclaration, ServiceModule } from "../core/service/service.js";
import type { ServiceAdvice } from "../core/tools/errors.js";
import type { ToolDef } from "../core/tools/tool.js";
import { ACCOUNT_TOOLSET } from "../core/vault/account-toolset.js";

/**
 * The enabled services' tools, built once for every tenant (each runs them with its own services'
 * deps, passed to every hook as ctx.deps). Tools of toolsets that are off are not built
 * (start-up time), except in linked mode, whose key check may use a tool of any toolset (linked.ts).
 */
export function serviceTools(
  enabled: readonly ServiceModule<any>[],
  config: Config,
  toolsets: readonly string[],
): ToolDef<any, any, any>[] {
  const on = (toolset: string) => toolsets.includes(toolset);
  return enabled.flatMap((module) => module.tools(config.credentials === "linked" ? undefined : on));
}

/** Whose deps a tool's hooks get: the service of its toolset (the account tools: the tenant's ACCOUNT_TOOLSET). */
export function serviceOfToolset(enabled: readonly ServiceDeclaration<any>[]): ReadonlyMap<string, string> {
  return new Map(enabled.flatMap((m) => m.toolsets.map((t) => [t.id, m.name] as const)));
}

/** The tools the server offers: those of the enabled toolsets (and the account's), only reads when read-only. */
export function offeredTools(
  tools: readonly ToolDef<any, any>[],
  toolsets: readonly string[],
  readOnly: boolean,
): ToolDef<any, any>[] {
  return tools.filter(
    (t) => (t.toolset === ACCOUNT_TOOLSET || toolsets.includes(t.toolset)) && (!readOnly || t.kind === "read"),
  );
}

/** Each service's advice on its failures, with the key named as this mode's callers bring it. */
export function serviceAdvice(
  services: readonly ServiceModule<any>[],
  config: Config,
  caller: boolean,
): Map<string, ServiceAdvice> {
  const keyVariable = (s: ServiceModule<any>) =>
    config.credentials === "linked"
      ? `the ${s.title} key you linked (account_unlink_service, then call the tool again to link another)`
      : caller
        ? `your ${credentialHeader(s.name)} header`
        : s.apiKeyVar;
  return new Map(services.map((s) => [s.name, { keyVariable: keyVariable(s), hints: s.hints }]));
}
