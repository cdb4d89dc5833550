/** Whether a host name or address is this machine's loopback (`localhost`, `127.x.x.x`, `::1`). */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase();
  return h === "localhost" || h === "::1" || /^127\.\d+\.\d+\.\d+$/.test(h);
}
