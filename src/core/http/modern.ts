import type { IncomingMessage } from "node:http";
import {
  classifyInboundRequest,
  isJsonContentType,
  PerRequestHTTPServerTransport,
  SdkError,
  SdkErrorCode,
  type InboundClassificationOutcome,
  type JSONRPCMessage,
  type JSONRPCRequest,
  type McpServer,
  type MessageClassification,
  type TransportSendOptions,
} from "@modelcontextprotocol/server";
import type { TenantRuntime } from "../mcp/runtime.js";
import { registeredSchemas } from "../mcp/registered-schemas.js";
import { MODERN_REVISION } from "../mcp/era.js";
import type { OneRequest } from "../mcp/server.js";

/**
 * The SDK's own era classification of a POST whose body we parsed: the one step behind both
 * `isLegacyRequest` and `createMcpHandler`'s routing, run once here instead of once in each.
 */
export function classifyPost(req: IncomingMessage, body: unknown): InboundClassificationOutcome {
  return classifyInboundRequest({
    httpMethod: "POST",
    protocolVersionHeader: header(req, "mcp-protocol-version"),
    mcpMethodHeader: header(req, "mcp-method"),
    mcpNameHeader: header(req, "mcp-name"),
    body,
  });
}

/** A header as `Headers.get` reads it (node joins repeated custom headers with ", " alike). */
const header = (req: IncomingMessage, name: string): string | undefined => {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(", ") : value;
};

/** The body field Mcp-Name mirrors, for the methods the lean path serves (SEP-2243; SEP-2663 for tasks/*). */
const NAME_SOURCE: Readonly<Record<string, string>> = {
  "tools/call": "name",
  "tasks/get": "taskId",
  "tasks/update": "taskId",
  "tasks/cancel": "taskId",
};

export interface LeanRequest {
  message: JSONRPCRequest;
  classification: MessageClassification;
}

/**
 * A 2026-07-28 request the lean path may answer: one that `createMcpHandler` would hand to its
 * instance unchanged, having passed every check it makes first. Undefined for anything else (an
 * error to answer, a header to decode, a method served here or not): the SDK's entry answers it.
 * The checks, in the entry's order: Content-Type JSON; the classifier's modern request (JSON-RPC
 * shape, a valid `_meta` envelope, the headers agreeing with the body where present); the served
 * revision; `MCP-Protocol-Version`, `Mcp-Method` and (for these methods) `Mcp-Name` present, the
 * last one equal to the body's value as sent (a Base64 form goes to the entry, which decodes it);
 * no client capability the method requires (this SDK requires none for these methods: the
 * differential test in stateless.2026.e2e.test.ts would see the entry refuse what is served here);
 * for tools/call, a tool that declares no `Mcp-Param` header and no scope challenge (`plainTool`).
 */
export function leanRequest(
  req: IncomingMessage,
  outcome: InboundClassificationOutcome,
  plainTool: (name: string) => boolean,
): LeanRequest | undefined {
  if (outcome.kind !== "modern" || outcome.messageKind !== "request") return undefined;
  const { message, classification } = outcome;
  const source = NAME_SOURCE[message.method];
  if (source === undefined || classification.revision !== MODERN_REVISION) return undefined;
  if (!isJsonContentType(req.headers["content-type"])) return undefined;
  if (header(req, "mcp-protocol-version") === undefined || header(req, "mcp-method") === undefined) return undefined;
  const value = (message.params as Record<string, unknown> | undefined)?.[source];
  const name = header(req, "mcp-name");
  if (typeof value !== "string" || name === undefined || value.startsWith("=?")) return undefined;
  if (name.replace(/^[ \t]+|[ \t]+$/g, "") !== value) return undefined;
  if (message.method === "tools/call" && !plainTool(value)) return undefined;
  return { message, classification };
}

/** What the instance for a lean request must register (server.ts registrationsFor). */
export function oneRequestOf(lean: LeanRequest): OneRequest {
  const name = (lean.message.params as { name?: unknown } | undefined)?.name;
  return { method: lean.message.method, name: typeof name === "string" ? name : undefined };
}

/** Idle instances the pool keeps in all (each holds its registrations: a tool's, or none for tasks/*). */
const MAX_IDLE_INSTANCES = 64;

/**
 * Prepared 2026-07-28 instances, reused one exchange at a time: a tools/call's (its tool's
 * registration) or a tasks/* one's (none) costs more to build than to serve. An instance goes back
 * only after an exchange that ended cleanly (its answer fully sent and its transport closed, so no
 * handler of it still runs with that request); one whose client left is dropped. Nothing of a
 * request stays on it: the SDK reads the log level, the client's capabilities and the progress
 * token from each request's own envelope (the entry's `seedClientIdentityFromEnvelope` is not
 * called here), and server.ts holds a late notification of an ended exchange back from the next.
 * A tenant's idle instances go when it closes.
 */
export function createInstancePool(make: (rt: TenantRuntime, request: OneRequest) => McpServer) {
  const idle = new Map<TenantRuntime, Map<string, McpServer[]>>();
  let idleCount = 0;
  let made = 0;
  let reused = 0;
  const keyOf = (request: OneRequest) => (request.method === "tools/call" ? `tools/call ${request.name}` : "tasks");
  const drop = (rt: TenantRuntime) => {
    for (const list of idle.get(rt)?.values() ?? []) idleCount -= list.length;
    idle.delete(rt);
  };
  return {
    take(rt: TenantRuntime, request: OneRequest): { server: McpServer; release: () => void } {
      const key = keyOf(request);
      const ready = idle.get(rt)?.get(key)?.pop();
      if (ready) {
        idleCount--;
        reused++;
      } else made++;
      const server = ready ?? make(rt, request);
      const release = () => {
        if (server.isConnected() || idleCount >= MAX_IDLE_INSTANCES) return;
        let byKey = idle.get(rt);
        if (!byKey) {
          idle.set(rt, (byKey = new Map()));
          rt.changes.onClose(() => drop(rt));
        }
        const list = byKey.get(key) ?? [];
        byKey.set(key, list);
        list.push(server);
        idleCount++;
      };
      return { server, release };
    },
    stats: () => ({ idle: idleCount, made, reused }),
    clear: () => {
      idle.clear();
      idleCount = 0;
    },
  };
}

/** A JSON-RPC result of the exchange, serialized: the whole answer, sent as the transport would (200, JSON). */
interface JsonAnswer {
  json: string;
}

/**
 * The SDK's per-request transport with one shortcut: when the exchange's result is the whole answer
 * (nothing was streamed before it), it is handed over as the message itself, and the transport
 * closes as after any answer. The SDK would wrap it in a web `Response` (JSON body, status 200,
 * `Content-Type: application/json`), which the node response then reads back: a visible share of a
 * call's CPU (bench/README.md, "Stateless calls and `tasks/get`"). Errors (whose HTTP status
 * depends on where they arose) and streams go the SDK's way; the differential test in
 * stateless.2026.e2e.test.ts compares the answers.
 */
class ExchangeTransport extends PerRequestHTTPServerTransport {
  private exchangeId?: string | number;
  private streamed = false;
  answered?: (answer: JsonAnswer) => void;

  override handleMessage(message: JSONRPCRequest): Promise<Response> {
    this.exchangeId = message.id;
    return super.handleMessage(message);
  }

  override send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    const result = "result" in message && message.id === this.exchangeId && this.exchangeId !== undefined;
    if (!result && !("error" in message) && options?.relatedRequestId === this.exchangeId) this.streamed = true;
    if (!result || this.streamed || !this.answered) return super.send(message, options);
    const answered = this.answered;
    this.answered = undefined;
    answered({ json: JSON.stringify(message) });
    queueMicrotask(() => void this.close());
    return Promise.resolve();
  }
}

/**
 * Serves one lean request on `server` (a 2026-07-28 instance that no exchange holds) through the
 * SDK's per-request transport, as `createMcpHandler` does past its checks; the transport closes
 * the instance's connection once the answer is out, or when the client leaves (`left`). No web
 * Request is built: the transport would only take its abort signal from it and hand it to
 * handlers as `ctx.http.req`, which none of ours reads.
 */
export async function serveLean(
  server: McpServer,
  lean: LeanRequest,
  left: (stop: () => void) => void,
  onAnswered: () => void,
): Promise<Response | JsonAnswer> {
  const transport = new ExchangeTransport({ classification: lean.classification });
  try {
    await server.connect(transport);
    left(() => void transport.close());
    const direct = new Promise<JsonAnswer>((resolve) => (transport.answered = resolve));
    const viaSdk = transport.handleMessage(lean.message);
    // When the result went out directly, the SDK's pending Response is refused at close: expected.
    viaSdk.catch(() => undefined);
    const answer = await Promise.race([viaSdk, direct]);
    onAnswered();
    return answer;
  } catch (err) {
    if (err instanceof SdkError && err.code === SdkErrorCode.ConnectionClosed)
      return new Response(null, { status: 499 });
    await server.close().catch(() => undefined);
    throw err;
  }
}

const plainByRuntime = new WeakMap<TenantRuntime, Map<string, boolean>>();

/**
 * `plainTool` for a runtime: a tool of it whose input schema declares no `x-mcp-header` (the entry
 * checks such a tool's `Mcp-Param-*` headers against the arguments). Our tools register no scope
 * challenge. Computed once per tool and runtime, from the schema converted once per process.
 */
export function plainToolsOf(rt: TenantRuntime): (name: string) => boolean {
  let known = plainByRuntime.get(rt);
  if (!known) plainByRuntime.set(rt, (known = new Map()));
  const cache = known;
  return (name) => {
    let plain = cache.get(name);
    if (plain === undefined) {
      const def = rt.definition.tools.find((t) => t.name === name);
      const json = def && registeredSchemas(def).input["~standard"].jsonSchema.input({ target: "draft-2020-12" });
      cache.set(name, (plain = json !== undefined && !JSON.stringify(json).includes('"x-mcp-header"')));
    }
    return plain;
  };
}
