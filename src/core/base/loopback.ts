/** Whether a host name or address is this machine's loopback (`localhost`, `127.x.x.x`, `::1`). */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase();
  return h === "localhost" || h === "::1" || /^127\.\d+\.\d+\.\d+$/.test(h);
}

/**
 * The origins a browser on this machine sends, for a server bound to loopback. Here, not in
 * http/guards.ts, so that config.ts reads it without loading node:crypto before a stdio start's first answer.
 */
export const LOOPBACK_ORIGINS = [
  "http://localhost",
  "http://127.0.0.1",
  "http://[::1]",
  "https://localhost",
  "https://127.0.0.1",
  "https://[::1]",
];
