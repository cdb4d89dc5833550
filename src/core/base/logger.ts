import type { Egress } from "./egress.js";

export type LogLevel = "debug" | "info" | "warn" | "error";
export const LOG_LEVEL_ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/**
 * Where a log line also goes besides stderr: the MCP log stream of the one request that caused it.
 * `wants` says whether a line of that level would be sent (absent: every line may be).
 */
export type LogEcho = ((level: LogLevel, message: string, fields?: Record<string, unknown>) => void) & {
  wants?: (level: LogLevel) => boolean;
};

/**
 * One-line JSON logs on stderr. stdout belongs to the stdio transport and must carry only protocol
 * messages, so nothing here ever writes to it. Every line passes the egress scrubber. A logger made
 * for one request (`withEcho`) also sends its lines to that request's client, and to no one else.
 */
export function createLogger(
  level: LogLevel,
  egress: Egress,
  echo?: LogEcho,
): Logger & { withEcho(echo: LogEcho): Logger } {
  const write = (lvl: LogLevel, message: string, fields?: Record<string, unknown>) => {
    const toStderr = LOG_LEVEL_ORDER[lvl] >= LOG_LEVEL_ORDER[level];
    const toEcho = echo !== undefined && (echo.wants?.(lvl) ?? true);
    // A line that goes nowhere is not scrubbed (a call's debug lines, at the default level).
    if (!toStderr && !toEcho) return;
    const clean = fields ? egress.json(fields) : undefined;
    const text = egress.text(message);
    if (toStderr) {
      process.stderr.write(
        `${egress.text(JSON.stringify({ time: new Date().toISOString(), level: lvl, msg: text, ...clean }))}\n`,
      );
    }
    if (!toEcho) return;
    try {
      echo?.(lvl, text, clean);
    } catch {
      // a client that went away must not break logging
    }
  };
  return {
    debug: (m, f) => write("debug", m, f),
    info: (m, f) => write("info", m, f),
    warn: (m, f) => write("warn", m, f),
    error: (m, f) => write("error", m, f),
    withEcho: (next) => createLogger(level, egress, next),
  };
}
