import { LOG_LEVEL_META_KEY, type McpServer, type ServerContext } from "@modelcontextprotocol/server";
import { LOG_LEVEL_ORDER, type LogEcho, type LogLevel } from "../base/logger.js";
import type { TenantRuntime } from "./runtime.js";
import { wrapRequestHandler } from "./sdk-internals.js";

/**
 * One instance's log level: whether its 2025 client set one (logging/setLevel), and which; ENV.logLevel
 * until then.
 */
export interface LogLevelSession {
  logLevelSet: boolean;
  level?: unknown;
}

/** 2025: notes that the client set its level (the SDK keeps the level itself and applies it). */
export function followLogLevel(server: McpServer, session: LogLevelSession): void {
  wrapRequestHandler(server, "logging/setLevel", (original) => async (request, ctx) => {
    session.logLevelSet = true;
    session.level = request.params?.level;
    return original(request, ctx);
  });
}

/** The MCP levels, least severe first (the SDK drops a line below the client's level). */
const MCP_LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];

/** Sends a tool's log lines to the client whose request caused them, at the level that applies. */
export function echoToClient(rt: TenantRuntime, ctx: ServerContext, session: LogLevelSession): LogEcho {
  const modern = ctx.mcpReq.envelope !== undefined;
  // 2025: the level the client set, else ENV.logLevel. 2026: the request's own logLevel (absent: none).
  const wants = (level: LogLevel): boolean => {
    if (!modern && !session.logLevelSet) return LOG_LEVEL_ORDER[level] >= LOG_LEVEL_ORDER[rt.definition.logLevel];
    const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
    const threshold = modern ? envelope?.[LOG_LEVEL_META_KEY] : session.level;
    if (modern && threshold === undefined) return false;
    const floor = MCP_LEVELS.indexOf(String(threshold));
    // A level this code does not know is left to the SDK.
    return floor < 0 || MCP_LEVELS.indexOf(mcpLevel(level)) >= floor;
  };
  const echo: LogEcho = (level, message, fields) => {
    if (!wants(level)) return;
    void ctx.mcpReq.log(mcpLevel(level), { message, ...fields }, "switchboard-mcp").catch(() => undefined);
  };
  echo.wants = wants;
  return echo;
}

const mcpLevel = (level: LogLevel) => (level === "warn" ? "warning" : level);
