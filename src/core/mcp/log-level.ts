import type { McpServer, ServerContext } from "@modelcontextprotocol/server";
import { LOG_LEVEL_ORDER, type LogEcho, type LogLevel } from "../base/logger.js";
import type { TenantRuntime } from "./runtime.js";
import { wrapRequestHandler } from "./sdk-internals.js";

/** One instance's log level: whether its 2025 client set one (logging/setLevel); ENV.logLevel until then. */
export interface LogLevelSession {
  logLevelSet: boolean;
}

/** 2025: notes that the client set its level (the SDK keeps the level itself). */
export function followLogLevel(server: McpServer, session: LogLevelSession): void {
  wrapRequestHandler(server, "logging/setLevel", (original) => async (request, ctx) => {
    session.logLevelSet = true;
    return original(request, ctx);
  });
}

/** Sends a tool's log lines to the client whose request caused them, at the level that applies. */
export function echoToClient(rt: TenantRuntime, ctx: ServerContext, session: LogLevelSession): LogEcho {
  const modern = ctx.mcpReq.envelope !== undefined;
  return (level, message, fields) => {
    // 2025: the level the client set, else ENV.logLevel. 2026: the request's own logLevel (absent: none).
    if (!modern && !session.logLevelSet && LOG_LEVEL_ORDER[level] < LOG_LEVEL_ORDER[rt.definition.logLevel]) return;
    void ctx.mcpReq.log(mcpLevel(level), { message, ...fields }, "switchboard-mcp").catch(() => undefined);
  };
}

const mcpLevel = (level: LogLevel) => (level === "warn" ? "warning" : level);
