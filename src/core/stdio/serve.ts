import type { JSONRPCMessage, jsonSchemaValidator, McpServer } from "@modelcontextprotocol/server";
import { serveStdio } from "@modelcontextprotocol/server/stdio";
import { telemetry } from "../base/telemetry.js";
import type { TenantRuntime } from "../mcp/runtime.js";
import { prepareCompletions, registerQuietly } from "../mcp/sdk-internals.js";
import type { Era } from "../mcp/era.js";
import { formValidatorWhenLoaded, newMcpServer, type ServerShell } from "../mcp/shell.js";
import { watchResource } from "../mcp/subscriptions.js";
import { LineTransport } from "./transport.js";

/** What a stdio start answers with first, and how it gets the rest. */
interface StdioStart {
  /** Enough for `initialize` / `server/discover`: identity, instructions, capabilities (Ajv comes with the tools). */
  shell: Omit<ServerShell, "formValidator">;
  /** The runtime (tools, resources, clients): loaded after the first answer, or for the first request that needs it. */
  load(): Promise<TenantRuntime>;
  /** The runtime could not be built: the process cannot serve. */
  failed(err: unknown): void;
}

const OPENINGS = new Set(["initialize", "server/discover"]);

/**
 * Serves one stdio connection in whichever era its opening picks (serveStdio pins it): a 2025
 * `initialize` or a 2026-07-28 `server/discover`. The opening is answered by an instance with
 * nothing registered yet (core/mcp/shell.ts), so it waits for no tool module; the tools, their
 * schemas and the services' clients load right after that answer. Every later message is held
 * until they are registered on that instance. On 2026-07-28, resource updates reach a client on
 * its `subscriptions/listen` stream: the resources it names are followed while the stream lasts.
 */
export function serveStdioApp(start: StdioStart, onEnd: () => void): void {
  const transport = new LineTransport(process.stdin, process.stdout);
  let instance: McpServer | undefined;
  let rt: TenantRuntime | undefined;
  let create: ((era: Era) => McpServer) | undefined;
  /** Instances made before the runtime, completed when it comes. */
  const waiting: Array<[McpServer, Era]> = [];
  const held: JSONRPCMessage[] = [];
  let openingId: string | number | undefined;
  let loading: Promise<void> | undefined;
  let forms: jsonSchemaValidator | undefined;
  const shell: ServerShell = { ...start.shell, formValidator: formValidatorWhenLoaded(() => forms) };

  const ready = (server: McpServer, era: Era, runtime: TenantRuntime) => {
    if (era === "modern") runtime.changes.add(() => server.sendResourceListChanged());
  };
  const load = () => {
    const modules = () => Promise.all([import("../mcp/server.js"), import("../mcp/form-validator.js"), start.load()]);
    loading ??= modules().then(([mcp, { ajvFormValidator }, runtime]) => {
      forms = ajvFormValidator;
      rt = runtime;
      create = (era) => mcp.createMcpServer(runtime, era);
      for (const [server, era] of waiting.splice(0)) {
        registerQuietly(server, () => mcp.completeMcpServer(server, runtime, era));
        ready(server, era, runtime);
      }
      for (const message of held.splice(0)) transport.deliver(message);
    }, start.failed);
    return loading;
  };

  transport.hold = (message) => {
    if (rt) return false;
    const m = message as { id?: string | number; method?: string };
    if (openingId === undefined && held.length === 0 && m.id !== undefined && OPENINGS.has(m.method ?? "")) {
      openingId = m.id;
      return false;
    }
    held.push(message);
    void load();
    return true;
  };
  transport.sent = (message) => {
    const m = message as { id?: string | number; method?: string };
    if (openingId !== undefined && m.id === openingId && m.method === undefined) setImmediate(load);
  };

  const listens = new Map<string | number, () => void>();
  transport.observe = (message) => {
    const m = message as { id?: string | number; method?: string; params?: Record<string, any> };
    if (!rt) return;
    const runtime = rt;
    if (m.method === "subscriptions/listen" && m.id !== undefined) {
      const uris: unknown = m.params?.notifications?.resourceSubscriptions;
      if (!Array.isArray(uris)) return;
      const stops = uris
        .filter((u): u is string => typeof u === "string")
        .map((uri) =>
          watchResource(runtime, uri, () => void instance?.server.sendResourceUpdated({ uri }).catch(() => undefined)),
        );
      listens.set(m.id, () => stops.forEach((stop) => stop()));
    } else if (m.method === "notifications/cancelled") {
      const id = m.params?.requestId;
      listens.get(id)?.();
      listens.delete(id);
    }
  };
  const opened = performance.now();
  transport.afterClose = () => {
    telemetry.sessionEnded(opened);
    for (const stop of listens.values()) stop();
    listens.clear();
    onEnd();
  };
  serveStdio(
    ({ era }) => {
      if (create && rt) {
        instance = create(era);
        ready(instance, era, rt);
        return instance;
      }
      instance = newMcpServer(shell, era);
      if (shell.completions) prepareCompletions(instance);
      waiting.push([instance, era]);
      return instance;
    },
    { transport, onerror: (err) => rt?.logger.debug("stdio transport error", { error: err.message }) },
  );
}
