import { declareSimulator } from "../../simulator.js";

/**
 * The declaration (sandbox/registry.ts): the v1 segment is in its URL. The simulator's code is
 * index.ts, which `load()` imports.
 */
export const sizingSimulator = declareSimulator({
  name: "sizing",
  prefix: "/sizing/v1",
  demoKey: "sz_sandbox_demo_key_0000000000",
  load: async () => (await import("./index.js")).startSizingSimulator,
});
