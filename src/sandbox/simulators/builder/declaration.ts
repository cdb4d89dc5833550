import { declareSimulator } from "../../simulator.js";

/** The declaration (sandbox/registry.ts); the simulator's code is index.ts, which `load()` imports. */
export const buildSimulator = declareSimulator({
  name: "build",
  prefix: "/build",
  demoKey: "tlm_sk_sandbox_demo_key_0000000000",
  load: async () => (await import("./index.js")).startBuildSimulator,
});
