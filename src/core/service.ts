import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { ServiceName } from "../config.js";
import type { ResourceWatcher } from "./subscriptions.js";
import type { ToolDef } from "./tool.js";

/**
 * What each folder under services/ exports: its tools, and how it adds resources and prompts to a
 * session's server. Built once per process (clients and pools are shared by every session).
 */
export interface Service {
  name: ServiceName;
  tools: readonly ToolDef<any, any>[];
  registerResources(server: McpServer): void;
  registerPrompts(server: McpServer): void;
  /** Resources that change on their own and can be subscribed to. */
  watchResource?: ResourceWatcher;
  close(): Promise<void>;
}
