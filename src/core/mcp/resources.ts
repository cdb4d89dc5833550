import {
  ProtocolError,
  ProtocolErrorCode,
  ResourceTemplate,
  type McpServer,
  type ServerContext,
} from "@modelcontextprotocol/server";
import { decodeVariable, resourceError } from "../service/resources.js";
import { describeError } from "../tools/errors.js";
import { UpstreamError } from "../upstream/upstream.js";
import { supportsViews } from "./envelope.js";
import type { ServerDefinition, TenantRuntime } from "./runtime.js";
import { wrapRequestHandler } from "./sdk-internals.js";

export function registerResource(
  server: McpServer,
  rt: TenantRuntime,
  def: ServerDefinition["resources"][number],
): void {
  const mimeType = def.mimeType ?? "application/json";
  const describe = (err: unknown) => rt.egress.text(describeError(err, rt.toolHost.advice));
  // The definition is shared by every tenant: it reads with this runtime's deps of its service.
  const deps = async () => {
    await rt.refreshKeys?.();
    return rt.serviceDeps(def.service);
  };
  const read = async (uri: URL, variables: Record<string, string>, ctx: ServerContext) => {
    const egress = rt.egress.forCall(def.secretRecord?.(variables));
    let data: unknown;
    try {
      data = await def.read(uri, variables, ctx.mcpReq.signal, await deps());
    } catch (err) {
      // No key from this caller: the request lacks what it needs (the message names the header), not a server fault.
      if (err instanceof UpstreamError && err.code === "MISSING_CREDENTIALS")
        throw new ProtocolError(ProtocolErrorCode.InvalidParams, describe(err), { uri: uri.href });
      throw resourceError(uri, err, describe);
    }
    if (def.artifact && typeof data === "string")
      return { contents: [{ uri: uri.href, mimeType, text: data, ...(def.meta ? { _meta: def.meta } : {}) }] };
    const text = typeof data === "string" ? data : JSON.stringify(egress.json(data), null, 2);
    return {
      contents: [{ uri: uri.href, mimeType, text: egress.text(text), ...(def.meta ? { _meta: def.meta } : {}) }],
    };
  };
  const metadata = {
    title: def.title,
    description: def.description,
    mimeType,
    ...(def.meta ? { _meta: def.meta } : {}),
  };
  if (!def.uri.includes("{")) {
    server.registerResource(def.name, def.uri, metadata, (uri, ctx) => read(uri, {}, ctx));
    return;
  }
  const list = def.list;
  const template = new ResourceTemplate(def.uri, {
    list: list
      ? async (ctx) => {
          try {
            const listed = await list(ctx.mcpReq.signal, await deps());
            return { resources: rt.egress.json(listed).map((r) => ({ ...r, mimeType })) };
          } catch (err) {
            // One service that cannot list (no key from this caller, an outage) must not empty the list.
            const skipped = skippedLists.get(ctx);
            if (!skipped) throw new ProtocolError(ProtocolErrorCode.InternalError, describe(err));
            const service = err instanceof UpstreamError ? { service: err.service } : {};
            skipped.push({ resource: def.name, ...service, reason: describe(err) });
            return { resources: [] };
          }
        }
      : undefined,
    complete: def.complete
      ? Object.fromEntries(
          Object.entries(def.complete).map(([name, fn]) => [
            name,
            async (value: string) => rt.egress.json(await fn(value, await deps())).slice(0, 100),
          ]),
        )
      : undefined,
  });
  server.registerResource(def.name, template, metadata, (uri, variables, ctx) =>
    read(uri, Object.fromEntries(Object.entries(variables).map(([k, v]) => [k, decodeVariable(uri, v)])), ctx),
  );
}

/** Listings skipped during one resources/list request, by its context (the SDK hands it to every list callback). */
const skippedLists = new WeakMap<ServerContext, Skipped[]>();
interface Skipped {
  resource: string;
  service?: string;
  reason: string;
}
const SKIPPED_META = "io.github.switchboard-mcp/skipped";

/**
 * resources/list: what the reachable services have, with the listings that failed named in
 * `_meta` (and logged) instead of failing the whole list; MCP Apps views only for hosts that
 * declared the UI extension (the others never render them).
 */
export function shapeResourceList(server: McpServer, rt: TenantRuntime): void {
  // Fixed resources (build://account) are listed only to a caller with a key for their service.
  const fixed = new Map(rt.definition.resources.filter((d) => !d.uri.includes("{")).map((d) => [d.uri, d.service]));
  wrapRequestHandler(server, "resources/list", (original) => async (request, ctx) => {
    const skipped: Skipped[] = [];
    skippedLists.set(ctx, skipped);
    type Listed = { resources: Array<{ uri: string }>; _meta?: Record<string, unknown> };
    const answer = (await original(request, ctx)) as Listed;
    const views = supportsViews(server, ctx);
    const keyless = fixed.size > 0 ? rt.keyless : undefined;
    if (keyless) await rt.refreshKeys?.();
    const resources = answer.resources.filter((r) => {
      if (!views && r.uri.startsWith("ui://")) return false;
      const service = keyless && fixed.get(r.uri);
      return !service || !keyless.call(rt, service);
    });
    if (skipped.length === 0) return { ...answer, resources };
    for (const s of skipped) {
      const missingKey = /MISSING_CREDENTIALS/.test(s.reason);
      rt.logger[missingKey ? "debug" : "warn"]("resources/list skipped a listing", { ...s });
    }
    return { ...answer, resources, _meta: { ...answer._meta, [SKIPPED_META]: skipped } };
  });
}
