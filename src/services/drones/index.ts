import { z } from "zod";
import type { ServiceDeclaration } from "../../core/service/service.js";
import { httpUrl, secret } from "../../core/service/settings.js";

const settings = z.object({
  DRONES_API_BASE_URL: httpUrl,
  DRONES_API_KEY: secret,
});

export type DronesSettings = z.infer<typeof settings>;

/** The declaration; the tools and the client are in implementation.ts, loaded when first needed. */
export const drones: ServiceDeclaration<DronesSettings> = {
  name: "drones",
  title: "drone fleet data API",
  displayName: "Drone Fleet Data API",
  keyHint:
    "Find it in the API keys area of your fleet application. It is a live key: the application's " +
    "live-key prefix followed by a long secret, on one line.",
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
    "Drones: fleet questions (counts, low battery, nearest drone) are answered by drones_fleet_summary and " +
    "drones_find_nearest.",
  hints: {
    NOT_FOUND:
      'no drone, mission or alert has that _id (or, if the message says "No route", DRONES_API_BASE_URL is wrong): ' +
      "find a valid _id with drones_list_drones, drones_list_missions or drones_list_alerts.",
    VALIDATION_ERROR:
      "the service rejected the request body: correct the field the message names (read the alert with " +
      "drones_get_alert to see the values in use) and call again.",
    INVALID_JSON: "the request body was not valid JSON; this is a bug in switchboard-mcp, please report it.",
    RATE_LIMITED: "the service is rate-limiting: wait a minute before trying again.",
    UNEXPECTED_SHAPE:
      "the service answered in a shape this server does not know: check that DRONES_API_BASE_URL points at the " +
      "fleet data API.",
  },
  completions: true,
  load: () => import("./implementation.js").then((m) => m.dronesImplementation),
  samples: () => import("./samples.js").then((m) => m.dronesSamples),
  views: [
    {
      name: "fleet-map",
      title: "Fleet map",
      description:
        "Every drone on a map, coloured by status, sized by battery; the nearest ones and open alerts marked",
    },
  ],
};
