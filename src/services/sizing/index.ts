import type { Config } from "../../config.js";
import { registerServiceHints } from "../../core/errors.js";
import type { Logger } from "../../core/logger.js";
import type { Service } from "../../core/service.js";
import { bearerClient } from "../../core/upstream.js";
import { SizingClient } from "./client.js";
import { registerSizingPrompts } from "./prompts.js";
import { registerSizingResources } from "./resources.js";
import { sizingTools } from "./tools.js";

registerServiceHints("sizing", "SIZING_API_KEY", {
  RATE_LIMITED:
    "the plan's requests-per-minute limit is used up (Free 60, Professional 600): wait the seconds the message names (at most a minute), then retry; a rate-limited request is not processed.",
  TRY_ON_LIMIT_REACHED:
    "the plan's monthly try-on allowance is used up (Free 100, Professional 10,000): use sizing_recommend_size (which costs no try-on) until the month ends, or upgrade the plan.",
  NOT_FOUND:
    "no catalog item has that clothing_item_id (or, if the message says \"No route\", SIZING_API_BASE_URL is wrong): call sizing_get_catalog to find a valid _id.",
  VALIDATION_ERROR:
    "the service rejected an argument: correct the field the message names (measurements are non-negative numbers; the item's size chart decides which of chest, waist, hips count) and call again.",
  INVALID_JSON: "the request body was not valid JSON; this is a bug in switchboard-mcp, please report it.",
  UNEXPECTED_SHAPE: "the service answered in a shape this server does not know: check that SIZING_API_BASE_URL points at the v1 API.",
});

export function createSizingService(config: Config, logger: Logger): Service {
  const { baseUrl, apiKey } = config.sizing;
  if (!baseUrl) throw new Error("The sizing service needs SIZING_API_BASE_URL");
  const http = bearerClient({ service: "sizing", baseUrl, apiKey, keyVariable: "SIZING_API_KEY", timeoutMs: config.upstreamTimeoutMs, logger });
  const client = new SizingClient(http);
  return {
    name: "sizing",
    tools: sizingTools(client),
    registerResources: (server) => registerSizingResources(server, client),
    registerPrompts: (server) => registerSizingPrompts(server),
    close: () => http.close(),
  };
}
