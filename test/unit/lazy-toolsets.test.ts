// A service may skip building the tools of toolsets that are off (ServiceModule.tools' `enabled`),
// which keeps them off the start-up path. It must still return every tool of each toolset that is
// on: checked here for every service and toolset, alone and with all of them.
import { describe, expect, it } from "vitest";
import { loadServices } from "../../src/services/registry.js";

const SERVICES = await loadServices();

const names = (defs: readonly { name: string; toolset: string }[], toolset?: string) =>
  defs
    .filter((d) => toolset === undefined || d.toolset === toolset)
    .map((d) => d.name)
    .sort();

describe("toolsets that are off", () => {
  for (const service of SERVICES) {
    it(`${service.name}: each toolset alone yields exactly its tools`, () => {
      const all = service.tools();
      expect(names(service.tools(() => true))).toEqual(names(all));
      for (const { id } of service.toolsets) {
        const alone = service.tools((t) => t === id);
        expect(names(alone, id), id).toEqual(names(all, id));
        expect(names(alone, id).length, id).toBeGreaterThan(0);
      }
    });
  }
});
