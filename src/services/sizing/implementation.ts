import type { ServiceImplementation } from "../../core/service/service.js";
import { viewResource } from "../../core/service/views.js";
import { bearerAuth } from "../../core/upstream/upstream.js";
import { SizingClient } from "./client.js";
import { sizingTools } from "./tools/fitting.js";
import { sizingResources } from "./resources.js";
import { sizingPrompts } from "./prompts.js";
import type { SizingDeps } from "./deps.js";
import { sizing, type SizingSettings } from "./index.js";

/** The sizing service's tools and client (index.ts declares the service). */
export const sizingImplementation: ServiceImplementation<SizingSettings, SizingDeps> = {
  tools: () => sizingTools(),
  resources: () => [...sizingResources(), ...(sizing.views ?? []).map((view) => viewResource(view))],
  prompts: sizingPrompts,
  create(s, host) {
    const http = host.upstream({ baseUrl: s.SIZING_API_BASE_URL, ...bearerAuth(s.SIZING_API_KEY) });
    return {
      deps: { client: new SizingClient(http) },
      close: () => http.close(),
    };
  },
};
