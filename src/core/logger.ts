import type { SecretRegistry } from "./redact.js";

export type LogLevel = "debug" | "info" | "warn" | "error";
const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** Extra places a log line goes (the MCP logging channel of connected sessions), each with its own level. */
export interface LogSink {
  accepts(level: LogLevel): boolean;
  send(level: LogLevel, message: string, fields?: Record<string, unknown>): void;
}

export const LOG_LEVEL_ORDER = ORDER;

/**
 * One-line JSON logs on stderr. stdout belongs to the stdio transport and must carry only
 * protocol messages, so nothing here ever writes to it. Every line passes the secret scrubber.
 */
export function createLogger(level: LogLevel, secrets: SecretRegistry, sinks: Set<LogSink> = new Set()): Logger & { sinks: Set<LogSink> } {
  const write = (lvl: LogLevel, message: string, fields?: Record<string, unknown>) => {
    const toStderr = ORDER[lvl] >= ORDER[level];
    const listening = [...sinks].filter((s) => s.accepts(lvl));
    if (!toStderr && listening.length === 0) return;
    const clean = fields ? secrets.scrub(fields) : undefined;
    if (toStderr) process.stderr.write(`${secrets.scrubText(JSON.stringify({ time: new Date().toISOString(), level: lvl, msg: message, ...clean }))}\n`);
    for (const sink of listening) {
      try {
        sink.send(lvl, secrets.scrubText(message), clean);
      } catch {
        // a disconnected session must not break logging for the others
      }
    }
  };
  return {
    sinks,
    debug: (m, f) => write("debug", m, f),
    info: (m, f) => write("info", m, f),
    warn: (m, f) => write("warn", m, f),
    error: (m, f) => write("error", m, f),
  };
}
