import type { Config } from "../../config.js";
import { registerServiceHints } from "../../core/errors.js";
import type { Logger } from "../../core/logger.js";
import type { Service } from "../../core/service.js";
import { bearerClient } from "../../core/upstream.js";
import { DronesClient } from "./client.js";
import { registerDronesPrompts } from "./prompts.js";
import { registerDronesResources } from "./resources.js";
import { fleetTools } from "./tools/fleet.js";
import { keyTools } from "./tools/keys.js";
import { recordTools } from "./tools/records.js";

registerServiceHints("drones", "DRONES_API_KEY", {
  NOT_FOUND:
    "no drone, mission or alert has that _id (or, if the message says \"No route\", DRONES_API_BASE_URL is wrong): find a valid _id with drones_list_drones, drones_list_missions or drones_list_alerts.",
  VALIDATION_ERROR:
    "the service rejected the request body: correct the field the message names (read the alert with drones_get_alert to see the values in use) and call again.",
  INVALID_JSON: "the request body was not valid JSON; this is a bug in switchboard-mcp, please report it.",
  RATE_LIMITED: "the service is rate-limiting: wait a minute before trying again.",
  UNEXPECTED_SHAPE: "the service answered in a shape this server does not know: check that DRONES_API_BASE_URL points at the fleet data API.",
});

export function createDronesService(config: Config, logger: Logger): Service {
  const { baseUrl, apiKey } = config.drones;
  if (!baseUrl) throw new Error("The drones service needs DRONES_API_BASE_URL");
  const http = bearerClient({ service: "drones", baseUrl, apiKey, keyVariable: "DRONES_API_KEY", timeoutMs: config.upstreamTimeoutMs, logger });
  const client = new DronesClient(http);
  return {
    name: "drones",
    tools: [...fleetTools(client), ...recordTools(client), ...keyTools(client)],
    registerResources: (server) => registerDronesResources(server, client),
    registerPrompts: (server) => registerDronesPrompts(server),
    close: () => http.close(),
  };
}
