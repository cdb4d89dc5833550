import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult, ServerNotification, ServerRequest, ToolAnnotations } from "@modelcontextprotocol/sdk/types.js";
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js";
import { z } from "zod";
import type { Toolset } from "../config.js";
import type { Logger } from "./logger.js";
import type { SecretRegistry } from "./redact.js";
import { describeError } from "./errors.js";

/**
 * What a tool does to the world. It decides the annotations and whether `--read-only` keeps it:
 * only `read` tools survive read-only mode.
 */
export type ToolKind = "read" | "write" | "spend" | "destructive";

export interface ProgressUpdate {
  message: string;
  /** Defaults to a counter that rises by one on every update. */
  progress?: number;
  total?: number;
}

export interface ToolContext {
  /** Aborted when the client cancels the call (or the session ends). */
  signal: AbortSignal;
  /** Sends notifications/progress when the client asked for progress; a no-op otherwise. */
  progress(update: ProgressUpdate): Promise<void>;
  logger: Logger;
  server: McpServer;
  /** Registers a value the caller supplied as secret, so it is scrubbed from every output and log. */
  secret(value: string | undefined): void;
}

type Shape = z.ZodRawShape;
type Obj<S extends Shape> = z.infer<z.ZodObject<S>>;

export interface ToolDef<In extends Shape = Shape, Out extends z.ZodObject = z.ZodObject> {
  name: string;
  title: string;
  /** When to use it, what it costs, what comes back. Every token here is paid by every conversation. */
  description: string;
  toolset: Toolset;
  kind: ToolKind;
  /** Defaults: true for read and destructive (DELETE) tools, false otherwise. */
  idempotent?: boolean;
  input: In;
  output: Out;
  run(input: Obj<In>, ctx: ToolContext): Promise<z.infer<Out>>;
  /** A short summary for people and models; structuredContent carries the data. */
  render(output: z.infer<Out>, input: Obj<In>): string;
  /** For writes: how to check whether a request whose answer was lost went through. */
  verify?: (input: Obj<In>) => string;
}

/** Identity function that lets TypeScript infer a tool's input and output types from its schemas. */
export function defineTool<In extends Shape, Out extends z.ZodObject>(def: ToolDef<In, Out>): ToolDef<In, Out> {
  return def;
}

/** A tool failure we detected ourselves (a failed build, a declined confirmation...). */
export class ToolError extends Error {
  constructor(
    message: string,
    readonly structured?: Record<string, unknown>,
  ) {
    super(message);
    this.name = "ToolError";
  }
}

export function annotationsFor(def: Pick<ToolDef, "kind" | "idempotent" | "title">): ToolAnnotations {
  return {
    title: def.title,
    readOnlyHint: def.kind === "read",
    destructiveHint: def.kind === "destructive",
    idempotentHint: def.idempotent ?? (def.kind === "read" || def.kind === "destructive"),
    openWorldHint: true,
  };
}

export interface RegistrationOptions {
  toolsets: readonly Toolset[];
  readOnly: boolean;
  logger: Logger;
  secrets: SecretRegistry;
}

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/**
 * The one place a tool is registered. Filtering by toolset and read-only mode, annotations,
 * structured content plus text, error mapping and secret scrubbing happen here, the same for
 * every tool.
 */
export function registerTools(server: McpServer, tools: readonly ToolDef<any, any>[], options: RegistrationOptions): string[] {
  const registered: string[] = [];
  for (const def of tools) {
    if (!options.toolsets.includes(def.toolset)) continue;
    if (options.readOnly && def.kind !== "read") continue;
    server.registerTool(
      def.name,
      {
        title: def.title,
        description: def.description,
        inputSchema: def.input,
        outputSchema: def.output,
        annotations: annotationsFor(def),
      },
      ((input: Record<string, unknown>, extra: Extra) => invoke(def, input, extra, server, options)) as never,
    );
    registered.push(def.name);
  }
  return registered;
}

async function invoke(def: ToolDef<any, any>, input: Record<string, unknown>, extra: Extra, server: McpServer, options: RegistrationOptions): Promise<CallToolResult> {
  const { logger, secrets } = options;
  const started = performance.now();
  const ctx: ToolContext = { signal: extra.signal, progress: progressSender(extra, secrets), logger, server, secret: (v) => secrets.add(v) };
  try {
    const output = secrets.scrub(await def.run(input, ctx));
    logger.debug("tool call", { tool: def.name, ms: Math.round(performance.now() - started), ok: true });
    return {
      content: [{ type: "text", text: secrets.scrubText(def.render(output, input)) }],
      structuredContent: output,
    };
  } catch (err) {
    const message = secrets.scrubText(describeError(err, def.kind !== "read" ? def.verify?.(input) : undefined));
    const level = err instanceof ToolError ? "info" : "warn";
    logger[level]("tool call failed", { tool: def.name, ms: Math.round(performance.now() - started), error: message });
    const result: CallToolResult = { content: [{ type: "text", text: message }], isError: true };
    if (err instanceof ToolError && err.structured) result.structuredContent = secrets.scrub(err.structured);
    return result;
  }
}

function progressSender(extra: Extra, secrets: SecretRegistry): ToolContext["progress"] {
  const token = extra._meta?.progressToken;
  let counter = 0;
  return async ({ message, progress, total }) => {
    if (token === undefined || extra.signal.aborted) return;
    counter = Math.max(counter + 1, progress ?? 0);
    try {
      await extra.sendNotification({
        method: "notifications/progress",
        params: { progressToken: token, progress: counter, ...(total !== undefined ? { total } : {}), message: secrets.scrubText(message) },
      });
    } catch {
      // the client went away; the tool notices through its signal
    }
  };
}
