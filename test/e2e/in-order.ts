import type { Client } from "@modelcontextprotocol/client";

/**
 * Works around an ordering bug of the SDK v2 client (@modelcontextprotocol/client 2.4.0, core
 * Protocol): it dispatches an inbound notification on a microtask (`Promise.resolve().then(handler)`
 * in `_onnotification`) but settles a response synchronously (`_onresponse`). When the server
 * writes a call's last notifications/progress and then its result, and both arrive in one chunk,
 * the response settles the call and drops its progress handler first: the client reports
 * "Received a progress notification for an unknown token" and `onprogress` never sees the line
 * the server sent before the result (about half the calls of a wait over stdio).
 *
 * Delivering responses one microtask later restores the wire order. Call once after connect.
 */
export function keepWireOrder(client: Client): void {
  const transport = client.transport;
  const deliver = transport?.onmessage;
  if (!transport || !deliver) throw new Error("keepWireOrder: connect the client first");
  transport.onmessage = (message, extra) => {
    const isResponse = "id" in message && !("method" in message);
    if (isResponse) queueMicrotask(() => deliver(message, extra));
    else deliver(message, extra);
  };
}
