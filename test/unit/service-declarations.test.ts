// A stdio start answers `initialize` from the services' declarations before their tools load
// (core/stdio/serve.ts): the capabilities it declares come from ToolsetDecl.tasks and
// ServiceDeclaration.completions, every later instance's from the tools and resources themselves.
// Both must say the same for every configuration; checked here per service, toolset and mode.
import { describe, expect, it } from "vitest";
import { allServicesConfig } from "../../scripts/manifest.js";
import type { Config } from "../../src/config.js";
import { serverCapabilities } from "../../src/core/mcp/shell.js";
import { loadService, type ServiceDeclaration } from "../../src/core/service/service.js";
import { declaredServer } from "../../src/instructions.js";
import { createApp } from "../../src/server.js";
import { SERVICES } from "../../src/services/registry.js";
import { quotes, withToy } from "../fixtures/toy-service/index.js";

const declarations: readonly ServiceDeclaration<any>[] = withToy(SERVICES, quotes);

/** What the capabilities of an app's instances depend on, from its tools and resources. */
async function built(config: Config) {
  const app = createApp(config, undefined, await Promise.all(declarations.map(loadService)));
  try {
    const rt = app.runtime;
    return {
      info: rt.definition.info,
      instructions: rt.definition.instructions,
      tasks: rt.definition.tools.some((t) => t.longRunning),
      completions: rt.definition.resources.some((r) => r.complete),
    };
  } finally {
    await app.close();
  }
}

describe("what a start declares before its tools load", () => {
  const base = allServicesConfig(declarations);
  const configs: Array<[string, Config]> = [
    ["the default toolsets", { ...base, toolsets: undefined }],
    ["every toolset", base],
    ["every toolset, read-only", { ...base, readOnly: true }],
  ];
  for (const service of declarations)
    for (const { id } of service.toolsets)
      for (const readOnly of [false, true])
        configs.push([
          `${id} alone${readOnly ? ", read-only" : ""}`,
          { ...base, toolsets: [id], readOnly, services: new Map([[service.name, base.services.get(service.name)!]]) },
        ]);

  for (const [name, config] of configs)
    it(`matches the tools and resources: ${name}`, async () => {
      const { verifyRequestState: _, ...declared } = { ...declaredServer(config, declarations), verifyRequestState: 0 };
      const actual = await built(config);
      expect(declared).toEqual(actual);
      for (const era of ["legacy", "modern"] as const)
        expect(serverCapabilities(declared, era)).toEqual(serverCapabilities(actual, era));
    });

  it("a toolset with a long-running tool says so, and whether one of them only reads", async () => {
    for (const declaration of declarations) {
      const service = await loadService(declaration);
      const tools = service.tools();
      for (const toolset of service.toolsets) {
        const long = tools.filter((t) => t.toolset === toolset.id && t.longRunning);
        const expected = long.some((t) => t.kind === "read") ? "read" : long.length ? "write" : undefined;
        expect(toolset.tasks, `${service.name}: ${toolset.id}`).toBe(expected);
      }
    }
  });
});
