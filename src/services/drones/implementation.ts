import type { ServiceImplementation } from "../../core/service/service.js";
import { viewResource } from "../../core/service/views.js";
import { bearerAuth } from "../../core/upstream/upstream.js";
import { DronesClient } from "./client.js";
import { fleetTools } from "./tools/fleet.js";
import { keyTools } from "./tools/keys.js";
import { recordTools } from "./tools/records.js";
import { dronesResources } from "./resources.js";
import { dronesPrompts } from "./prompts.js";
import type { DronesDeps } from "./deps.js";
import { drones, type DronesSettings } from "./index.js";

/** The drones service's tools and client (index.ts declares the service). */
export const dronesImplementation: ServiceImplementation<DronesSettings, DronesDeps> = {
  tools: () => [...fleetTools(), ...recordTools(), ...keyTools()],
  resources: () => [...dronesResources(), ...(drones.views ?? []).map((view) => viewResource(view))],
  prompts: dronesPrompts,
  create(s, host) {
    const http = host.upstream({ baseUrl: s.DRONES_API_BASE_URL, ...bearerAuth(s.DRONES_API_KEY) });
    return {
      deps: { client: new DronesClient(http) },
      close: () => http.close(),
    };
  },
};
