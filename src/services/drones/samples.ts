// How each drones tool, prompt and resource is called by the tests that drive them all (the secret
// canary). The API key listing must show its values masked.
import type { SampleRun, ServiceSamples } from "../../core/service/samples.js";

/** The id of the first record an earlier list returned under `member`. */
const first = (run: SampleRun, tool: string, member: string) =>
  run.result<Record<string, Array<{ _id: string }>>>(tool)?.[member]?.[0]?._id;

export const dronesSamples: ServiceSamples = {
  tools: [
    { tool: "drones_list_drones", args: () => ({ limit: 5 }) },
    { tool: "drones_get_drone", args: (run) => ({ id: first(run, "drones_list_drones", "drones") }) },
    { tool: "drones_list_missions", args: () => ({ limit: 5 }) },
    { tool: "drones_get_mission", args: (run) => ({ id: first(run, "drones_list_missions", "missions") }) },
    { tool: "drones_list_alerts", args: () => ({ limit: 5 }) },
    { tool: "drones_get_alert", args: (run) => ({ id: first(run, "drones_list_alerts", "alerts") }) },
    {
      tool: "drones_update_alert",
      args: (run) => ({ id: first(run, "drones_list_alerts", "alerts"), changes: { status: "acknowledged" } }),
    },
    {
      tool: "drones_list_api_keys",
      args: () => ({}),
      shows: [/dfk_live_…/],
      check: ({ structured }) =>
        structured?.api_keys?.length > 0 && structured.maskedValues >= structured.api_keys.length
          ? undefined
          : `every key's value is masked: ${JSON.stringify(structured).slice(0, 200)}`,
    },
    { tool: "drones_fleet_summary", args: () => ({ lowBatteryThreshold: 30 }) },
    { tool: "drones_find_nearest", args: () => ({ latitude: 40.4168, longitude: -3.7038, limit: 3 }) },
  ],
  prompts: { fleet_status_report: [{}, { lowBatteryThreshold: "25", near: "40.4168, -3.7038" }] },
  resources: (run) => [
    `drones://missions/${first(run, "drones_list_missions", "missions")}`,
    `drones://alerts/${first(run, "drones_list_alerts", "alerts")}`,
  ],
};
