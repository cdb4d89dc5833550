import { z } from "zod";
import type { ServiceModule } from "../../core/service/service.js";
import { httpUrl, secret } from "../../core/service/settings.js";
import { viewResource } from "../../core/service/views.js";
import { bearerAuth } from "../../core/upstream/upstream.js";
import { DronesClient } from "./client.js";
import { fleetTools } from "./tools/fleet.js";
import { keyTools } from "./tools/keys.js";
import { recordTools } from "./tools/records.js";
import { dronesResources } from "./resources.js";
import { dronesPrompts } from "./prompts.js";

const settings = z.object({
  DRONES_API_BASE_URL: httpUrl,
  DRONES_API_KEY: secret,
});

export const drones: ServiceModule<z.infer<typeof settings>, DronesClient> = {
  name: "drones",
  title: "drone fleet data API",
  toolsets: [
    { id: "drones", description: "drones, missions, alerts, API keys; fleet summary and nearest drone", default: true },
  ],
  env: [
    { name: "DRONES_API_BASE_URL", description: "base URL of the drone fleet data API" },
    {
      name: "DRONES_API_KEY",
      description: "API key of the drone fleet data API (sent as Authorization: Bearer)",
      secret: true,
    },
  ],
  baseUrlVar: "DRONES_API_BASE_URL",
  apiKeyVar: "DRONES_API_KEY",
  keyCheck: { tool: "drones_list_alerts" },
  settings,
  instructions:
    "Drones: fleet questions (counts, low battery, nearest drone) are answered by drones_fleet_summary and drones_find_nearest.",
  hints: {
    NOT_FOUND:
      'no drone, mission or alert has that _id (or, if the message says "No route", DRONES_API_BASE_URL is wrong): find a valid _id with drones_list_drones, drones_list_missions or drones_list_alerts.',
    VALIDATION_ERROR:
      "the service rejected the request body: correct the field the message names (read the alert with drones_get_alert to see the values in use) and call again.",
    INVALID_JSON: "the request body was not valid JSON; this is a bug in switchboard-mcp, please report it.",
    RATE_LIMITED: "the service is rate-limiting: wait a minute before trying again.",
    UNEXPECTED_SHAPE:
      "the service answered in a shape this server does not know: check that DRONES_API_BASE_URL points at the fleet data API.",
  },
  tools: (client) => [...fleetTools(client), ...recordTools(client), ...keyTools(client)],
  create(s, host) {
    const http = host.upstream({ baseUrl: s.DRONES_API_BASE_URL, ...bearerAuth(s.DRONES_API_KEY) });
    const client = new DronesClient(http);
    return {
      deps: client,
      resources: [
        ...dronesResources(client),
        viewResource({
          file: "fleet-map",
          title: "Fleet map",
          description:
            "Every drone on a map, coloured by status, sized by battery; the nearest ones and open alerts marked",
        }),
      ],
      prompts: dronesPrompts,
      close: () => http.close(),
    };
  },
};
