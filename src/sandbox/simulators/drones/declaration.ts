import { declareSimulator } from "../../simulator.js";

/** The declaration (sandbox/registry.ts); the simulator's code is index.ts, which `load()` imports. */
export const dronesSimulator = declareSimulator({
  name: "drones",
  prefix: "/drones",
  demoKey: "dfk_live_sandbox_demo_key_000000",
  load: async () => (await import("./index.js")).startDronesSimulator,
});
