import {
  inputRequired,
  McpServer,
  ProtocolError,
  ProtocolErrorCode,
  ResourceTemplate,
  type CallToolResult,
  type ServerCapabilities,
  type ServerContext,
} from "@modelcontextprotocol/server";
import { z } from "zod";
import type { LogLevel } from "../base/logger.js";
import type { PromptDef } from "../service/prompts.js";
import { LOG_LEVEL_ORDER } from "../base/logger.js";
import { decodeVariable, resourceError } from "../service/resources.js";
import { describeError } from "../tools/errors.js";
import { takeRepeat } from "../tools/idempotency.js";
import { UpstreamError } from "../upstream/upstream.js";
import { legacyTask, modernTask, declaresTasks, registerTaskMethods, TASKS_EXTENSION } from "./task-protocol.js";
import { TaskLimitError } from "../tasks/runner.js";
import type { CallEgress, Egress } from "../base/egress.js";
import {
  annotationsFor,
  callHost,
  verifyOf,
  failure,
  NeedsInput,
  parseInput,
  runBefore,
  runTool,
  type ToolContext,
  type ToolDef,
} from "../tools/tool.js";
import type { TenantRuntime } from "./runtime.js";
import { taskTool, watchResources } from "./runtime.js";
import { WatchLimitError } from "./watch-budget.js";
import { registeredSchemas } from "./registered-schemas.js";
import { withInputRequired, wrapEveryRequestHandler, wrapRequestHandler } from "./sdk-internals.js";
import { shapeTool } from "./tool-list.js";
import { linkGate } from "./link-gate.js";
import { envelopeCapabilities, type EnvelopeCapabilities } from "./envelope.js";

export type Era = "legacy" | "modern";
/** Most clients give up on a request after 60 s, progress notifications or not. */
export const DEFAULT_BLOCKING_WAIT_MS = 45_000;
export const MODERN_REVISION = "2026-07-28";

/** Tools, prompts and the discovery answer are the same for every caller of a deployment. */
const CACHE_HINTS = {
  "tools/list": { ttlMs: 300_000, cacheScope: "public" },
  "prompts/list": { ttlMs: 300_000, cacheScope: "public" },
  "resources/templates/list": { ttlMs: 300_000, cacheScope: "public" },
  "server/discover": { ttlMs: 300_000, cacheScope: "public" },
} as const;

/**
 * What one 2026-07-28 HTTP request asks (its Mcp-Method and Mcp-Name headers, which the SDK checks
 * against the body before the instance is made).
 */
export interface OneRequest {
  method?: string;
  name?: string;
}

/**
 * Builds one server instance for one era: per request (2026-07-28 HTTP), per session (2025
 * HTTP), or per connection (stdio). Cheap: everything heavy lives in the shared runtime.
 * `request`: the instance answers that one request, so it registers only what the request can
 * reach (registrationsFor); registering every tool was a tenth of a tools/call's CPU and most of
 * a tasks/get's.
 */
export function createMcpServer(rt: TenantRuntime, era: Era, request?: OneRequest): McpServer {
  const hasTaskTools = rt.tools.some((t) => t.longRunning);
  const capabilities: ServerCapabilities = {
    logging: {},
    tools: { listChanged: true },
    resources: { subscribe: true, listChanged: true },
    prompts: { listChanged: true },
    // Declared here, not left to the SDK (it adds it when a resource with completions registers),
    // so that an instance that registers no resource advertises the same capabilities.
    ...(rt.resources.some((r) => r.complete) ? { completions: {} } : {}),
    ...(hasTaskTools && era === "legacy" ? { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } } : {}),
    ...(hasTaskTools && era === "modern" ? { extensions: { [TASKS_EXTENSION]: {} } } : {}),
  } as ServerCapabilities;
  const server = new McpServer(rt.info, {
    instructions: rt.instructions,
    capabilities,
    cacheHints: CACHE_HINTS,
    requestState: { verify: rt.confirmations.verify },
  });
  const session = { logLevelSet: false };
  const needs = registrationsFor(rt, request);
  for (const def of needs.tools) registerTool(server, rt, def, session);
  for (const def of needs.resources ? rt.resources : []) registerResource(server, rt, def);
  if (needs.resources && rt.resources.length) shapeResourceList(server, rt);
  for (const def of needs.prompts ? rt.prompts : []) {
    server.registerPrompt(
      def.name,
      { title: def.title, description: def.description, argsSchema: argsSchemaOf(def) },
      (args: Record<string, unknown>) => ({
        messages: [
          { role: "user" as const, content: { type: "text" as const, text: rt.egress.text(def.text(args as never)) } },
        ],
      }),
    );
  }
  shapeToolList(server, rt);
  interceptToolCalls(server, rt, era);
  if (hasTaskTools) registerTaskMethods(server, rt, era);
  if (era === "legacy") {
    enableLegacySubscriptions(server, rt);
    wrapRequestHandler(server, "logging/setLevel", (original) => async (request, ctx) => {
      session.logLevelSet = true;
      return original(request, ctx);
    });
  }
  scrubErrors(server, rt);
  return server;
}

/**
 * A protocol error leaves through the egress step like everything else: its message and data can
 * carry upstream words (a 404 that echoes the key), so every handler's error is scrubbed on its way out.
 */
function scrubErrors(server: McpServer, rt: TenantRuntime): void {
  wrapEveryRequestHandler(server, (original) => async (request, ctx) => {
    try {
      return await original(request, ctx);
    } catch (err) {
      if (err instanceof Error) {
        err.message = rt.egress.text(err.message);
        const holder = err as { data?: unknown };
        if (holder.data !== undefined) holder.data = rt.egress.json(holder.data);
      }
      throw err;
    }
  });
}

/**
 * What an instance for `request` must register: a tools/call its one tool (all of them when the
 * header names none: an unknown tool, or a name in the header's Base64 form), tools/list every tool,
 * resources/* the resources, prompts/* the prompts, completion/complete both; tasks/*, discovery,
 * listen, ping and notifications nothing. Without a request (sessions, stdio): everything.
 */
function registrationsFor(
  rt: TenantRuntime,
  request: OneRequest | undefined,
): { tools: readonly ToolDef<any, any>[]; resources: boolean; prompts: boolean } {
  const method = request?.method;
  if (method === undefined) return { tools: rt.tools, resources: true, prompts: true };
  if (method === "tools/call") {
    const called = rt.tools.filter((t) => t.name === request?.name);
    return { tools: called.length ? called : rt.tools, resources: false, prompts: false };
  }
  return {
    tools: method === "tools/list" ? rt.tools : [],
    resources: method.startsWith("resources/") || method === "completion/complete",
    prompts: method.startsWith("prompts/") || method === "completion/complete",
  };
}

const argsSchemas = new WeakMap<PromptDef<any>, z.ZodObject>();
/** Built once per prompt, not per (2026 per-request) server instance. */
function argsSchemaOf(def: PromptDef<any>): z.ZodObject {
  let schema = argsSchemas.get(def);
  if (!schema) argsSchemas.set(def, (schema = z.object(def.args)));
  return schema;
}

function registerTool(
  server: McpServer,
  rt: TenantRuntime,
  def: ToolDef<any, any>,
  session: { logLevelSet: boolean },
): void {
  const schemas = registeredSchemas(def);
  const config = {
    title: def.title,
    description: def.description,
    inputSchema: schemas.input,
    outputSchema: schemas.output,
    annotations: annotationsFor(def),
    // MCP Apps: the view that shows this tool's result (the legacy key too, for older hosts).
    ...(def.view ? { _meta: { ui: { resourceUri: def.view }, "ui/resourceUri": def.view } } : {}),
  };
  const handler = async (parsed: Record<string, unknown>, ctx: ServerContext) => {
    const { input, repeat } = takeRepeat(parsed);
    const call = callHost(rt.toolHost, def, input);
    const toolCtx = requestContext(server, rt, call.egress, def, input, ctx, session);
    toolCtx.blockingUntil = Date.now() + (rt.blockingWaitMs ?? DEFAULT_BLOCKING_WAIT_MS);
    try {
      const needsLink = await linkGate(server, rt, def, ctx);
      if (needsLink) return needsLink;
      const once = def.kind === "spend" ? rt.spendOnce : undefined;
      if (once) return await once.run(def, input, repeat, rt.owner(ctx), toolCtx, call);
      return await runTool(def, input, toolCtx, call);
    } catch (err) {
      if (err instanceof NeedsInput) return askForInput(rt, err, ctx);
      throw err;
    }
  };
  server.registerTool(def.name, config, handler as never);
}

/** A tool's context for a request that is still open: progress, logs and questions go to its client. */
function requestContext(
  server: McpServer,
  rt: TenantRuntime,
  egress: CallEgress,
  def: ToolDef<any, any>,
  input: Record<string, unknown>,
  ctx: ServerContext,
  session: { logLevelSet: boolean },
): ToolContext {
  const modern = ctx.mcpReq.envelope !== undefined;
  return {
    signal: ctx.mcpReq.signal,
    progress: progressSender(egress, ctx),
    logger: rt.logger.withEcho((level, message, fields) => {
      // 2025: the level the client set, else LOG_LEVEL. 2026: the request's own logLevel (absent: none).
      if (!modern && !session.logLevelSet && LOG_LEVEL_ORDER[level] < LOG_LEVEL_ORDER[rt.logLevel]) return;
      void ctx.mcpReq.log(mcpLevel(level), { message, ...fields }, "switchboard-mcp").catch(() => undefined);
    }),
    secret: (value) => egress.addSupplied(value),
    confirm: async (request) => {
      const canAsk = modern
        ? envelopeCapabilities(ctx)?.elicitation !== undefined
        : server.server.getClientCapabilities()?.elicitation !== undefined;
      const verify = def.kind !== "read" ? verifyOf(def, input, rt.toolHost) : undefined;
      return rt.confirmations.confirm(ctx, { tool: def.name, input, request, canAsk, tenant: rt.owner(ctx), verify });
    },
    resourcesChanged: () => rt.changes.resourcesChanged(),
  };
}

const mcpLevel = (level: LogLevel) => (level === "warn" ? "warning" : level);

function progressSender(egress: Egress, ctx: ServerContext): ToolContext["progress"] {
  const token = ctx.mcpReq._meta?.progressToken;
  let counter = 0;
  return async ({ message, progress, total }) => {
    if (token === undefined || ctx.mcpReq.signal.aborted) return;
    counter = Math.max(counter + 1, progress ?? 0);
    await ctx.mcpReq
      .notify({
        method: "notifications/progress",
        params: {
          progressToken: token,
          progress: counter,
          ...(total !== undefined ? { total } : {}),
          message: egress.text(message),
        },
      })
      .catch(() => undefined);
  };
}

/** A confirmation the user has not answered yet: ask in-band, with a signed single-use state. */
async function askForInput(rt: TenantRuntime, need: NeedsInput, ctx: ServerContext) {
  const { title, message } = need.request;
  const confirm = { type: "boolean" as const, title, description: message, default: false };
  const schema = { type: "object" as const, properties: { confirm }, required: ["confirm"] };
  return inputRequired({
    inputRequests: {
      [need.key]: inputRequired.elicit({ message: rt.egress.text(need.request.message), requestedSchema: schema }),
    },
    requestState: await rt.confirmations.mint(need.state as never, ctx),
  });
}

/**
 * tools/call, before the SDK's own handler: one clear field error for invalid arguments, and the
 * task path. A long-running tool becomes a task when the client asks for one (2025: `params.task`)
 * or supports them (2026: the tasks extension declared on the request); everything else, and
 * every other tool, goes to the SDK's blocking path with progress.
 */
function interceptToolCalls(server: McpServer, rt: TenantRuntime, era: Era): void {
  const byName = new Map(rt.tools.map((t) => [t.name, t]));
  wrapRequestHandler(server, "tools/call", (original) => async (request, ctx) => {
    const def = byName.get(request.params?.name);
    if (!def) return original(request, ctx);
    // 2025-11-25: a task-augmented call carries `task` (its TTL) in the params.
    const legacyTaskRequest =
      era === "legacy" && typeof request.params?.task === "object" && request.params.task !== null;
    if (legacyTaskRequest && !def.longRunning)
      throw new ProtocolError(
        ProtocolErrorCode.MethodNotFound,
        `Tool ${def.name} does not support task-augmented execution; call it without "task"`,
      );
    const parsed = parseInput(def, request.params?.arguments);
    if (!parsed.ok) return parsed.result;
    const { input } = takeRepeat(parsed.input);
    const modernTask = era === "modern" && declaresTasks(ctx) && (def.longRunning?.runsAsTask?.(input) ?? true);
    const asTask = def.longRunning && (legacyTaskRequest || modernTask);
    // The SDK's handler gets the parsed arguments; its own validation passes them through (registered-schemas.ts).
    if (!asTask) return original({ ...request, params: { ...request.params, arguments: parsed.input } }, ctx);
    return withInputRequired(server, (req, c) => startTask(server, rt, def, input, req, c, era), request, ctx);
  });
}

/** A task-augmented 2025 call past the tenant's cap of working tasks (2026-07-28 gets an isError result). */
const TASK_LIMIT_CODE = -32000;

async function startTask(
  server: McpServer,
  rt: TenantRuntime,
  def: ToolDef<any, any>,
  input: Record<string, unknown>,
  request: any,
  ctx: ServerContext,
  era: Era,
) {
  try {
    // Before `before`: a confirmation is not spent on a task that would be refused.
    await rt.tasks.admit(rt.owner(ctx));
  } catch (err) {
    if (!(err instanceof TaskLimitError)) throw err;
    if (era === "legacy") throw new ProtocolError(TASK_LIMIT_CODE, err.message);
    return { content: [{ type: "text", text: err.message }], isError: true } satisfies CallToolResult;
  }
  const call = callHost(rt.toolHost, def, input);
  const toolCtx = requestContext(server, rt, call.egress, def, input, ctx, { logLevelSet: true });
  let refused: CallToolResult | undefined;
  try {
    const needsLink = await linkGate(server, rt, def, ctx);
    if (needsLink && "resultType" in needsLink) return needsLink;
    refused = needsLink ?? (await runBefore(def, input, toolCtx, call));
  } catch (err) {
    if (err instanceof NeedsInput) return askForInput(rt, err, ctx);
    refused = failure(def, input, err, toolCtx, call, performance.now());
  }
  // A refusal before any work (too few credits, a declined confirmation) is the call's answer: as
  // is on 2026-07-28 (the server decides whether to make a task), as an ended task on 2025.
  if (refused)
    return era === "legacy" ? { task: legacyTask(await rt.tasks.settled(rt.owner(ctx), def, refused)) } : refused;
  const requestedTtl = era === "legacy" ? (request.params?.task as { ttl?: number } | undefined)?.ttl : undefined;
  const record = await rt.tasks.start({
    owner: rt.owner(ctx),
    tool: taskTool(rt, def),
    credentials: rt.credentials ? { ...rt.credentials } : undefined,
    input,
    ttlMs: requestedTtl ?? undefined,
  });
  return era === "legacy" ? { task: legacyTask(record) } : { resultType: "task", ...modernTask(record) };
}

/** MCP Apps (ext-apps): the client declared the UI extension, so views are worth announcing. */
const UI_EXTENSION = "io.modelcontextprotocol/ui";
function supportsViews(server: McpServer, ctx: ServerContext): boolean {
  const caps = envelopeCapabilities(ctx) ?? (server.server.getClientCapabilities() as EnvelopeCapabilities | undefined);
  return caps?.extensions?.[UI_EXTENSION] !== undefined;
}

/**
 * Shaped tools/list answers per runtime, keyed by revision and MCP Apps support. Kept beside the
 * runtime, not the server instance: a 2026-07-28 HTTP request gets a fresh instance, and building
 * the answer (JSON Schemas of every tool) costs several times more than serving it.
 */
const toolLists = new WeakMap<object, Map<string, Record<string, unknown>[]>>();

/** tools/list shaped per revision (and per MCP Apps support) and trimmed; computed once for each. */
function shapeToolList(server: McpServer, rt: TenantRuntime): void {
  const taskCapable = new Set(rt.tools.filter((t) => t.longRunning).map((t) => t.name));
  const key = rt.listKey ?? rt;
  const cache = toolLists.get(key) ?? new Map<string, Record<string, unknown>[]>();
  toolLists.set(key, cache);
  wrapRequestHandler(server, "tools/list", (original) => async (request, ctx) => {
    const modern = ctx.mcpReq.envelope !== undefined;
    const revision = modern ? MODERN_REVISION : (server.server.getNegotiatedProtocolVersion() ?? "2025-11-25");
    const views = supportsViews(server, ctx);
    const key = `${revision}|${views}`;
    let tools = cache.get(key);
    if (!tools) {
      const answer = (await original(request, ctx)) as { tools: Record<string, unknown>[] };
      tools = answer.tools.map((t) => shapeTool(t, revision, taskCapable.has(String(t.name)), views));
      cache.set(key, tools);
    }
    return modern ? { tools, ...CACHE_HINTS["tools/list"] } : { tools };
  });
}

function registerResource(server: McpServer, rt: TenantRuntime, def: TenantRuntime["resources"][number]): void {
  const mimeType = def.mimeType ?? "application/json";
  const describe = (err: unknown) => rt.egress.text(describeError(err, rt.toolHost.advice));
  const read = async (uri: URL, variables: Record<string, string>, ctx: ServerContext) => {
    const egress = rt.egress.forCall(def.secretRecord?.(variables));
    let data: unknown;
    try {
      data = await def.read(uri, variables, ctx.mcpReq.signal);
    } catch (err) {
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
            return { resources: rt.egress.json(await list(ctx.mcpReq.signal)).map((r) => ({ ...r, mimeType })) };
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
            async (value: string) => rt.egress.json(await fn(value)).slice(0, 100),
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
export const SKIPPED_META = "io.github.switchboard-mcp/skipped";

/**
 * resources/list: what the reachable services have, with the listings that failed named in
 * `_meta` (and logged) instead of failing the whole list; MCP Apps views only for hosts that
 * declared the UI extension (the others never render them).
 */
function shapeResourceList(server: McpServer, rt: TenantRuntime): void {
  wrapRequestHandler(server, "resources/list", (original) => async (request, ctx) => {
    const skipped: Skipped[] = [];
    skippedLists.set(ctx, skipped);
    type Listed = { resources: Array<{ uri: string }>; _meta?: Record<string, unknown> };
    const answer = (await original(request, ctx)) as Listed;
    const views = supportsViews(server, ctx);
    const resources = views ? answer.resources : answer.resources.filter((r) => !r.uri.startsWith("ui://"));
    if (skipped.length === 0) return { ...answer, resources };
    for (const s of skipped) {
      const missingKey = /MISSING_CREDENTIALS/.test(s.reason);
      rt.logger[missingKey ? "debug" : "warn"]("resources/list skipped a listing", { ...s });
    }
    return { ...answer, resources, _meta: { ...answer._meta, [SKIPPED_META]: skipped } };
  });
}

/**
 * 2025 resources/subscribe for one session: a subscription lasts until unsubscribe or the end of
 * the session; list changes reach every session through the runtime's change hub.
 */
/** A subscription past one of the replica's caps (the HTTP transport answers 429 with the same message). */
const SUBSCRIPTION_LIMIT_CODE = -32000;

function enableLegacySubscriptions(server: McpServer, rt: TenantRuntime): void {
  const active = new Map<string, () => void>();
  server.server.setRequestHandler("resources/subscribe", async ({ params: { uri } }) => {
    if (active.has(uri)) return {};
    try {
      active.set(
        uri,
        watchResources(rt, [uri], () => void server.server.sendResourceUpdated({ uri }).catch(() => undefined)),
      );
    } catch (err) {
      if (err instanceof WatchLimitError) throw new ProtocolError(SUBSCRIPTION_LIMIT_CODE, err.message);
      throw err;
    }
    return {};
  });
  server.server.setRequestHandler("resources/unsubscribe", async ({ params: { uri } }) => {
    active.get(uri)?.();
    active.delete(uri);
    return {};
  });
  const stopListChanges = rt.changes.add(() => {
    if (server.isConnected()) server.sendResourceListChanged();
  });
  const previous = server.server.onclose;
  server.server.onclose = () => {
    for (const stop of active.values()) stop();
    active.clear();
    stopListChanges();
    previous?.();
  };
}
