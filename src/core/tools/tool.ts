import type { CallToolResult, ToolAnnotations } from "@modelcontextprotocol/server";
import { z } from "zod";
import type { CallEgress, Egress } from "../base/egress.js";
import { describeError, isAbort, type ServiceAdvice } from "./errors.js";
import { fitStructured, fitText } from "./fit.js";
import type { Logger } from "../base/logger.js";

/**
 * What a tool does to the world. It decides the annotations and whether `--read-only` keeps it:
 * only `read` tools survive read-only mode.
 */
export type ToolKind = "read" | "write" | "spend" | "destructive";

interface ProgressUpdate {
  message: string;
  /** Defaults to a counter that rises by one on every update. */
  progress?: number;
  total?: number;
}

/** A yes/no question the user must answer before the tool goes on (spending credits, say). */
export interface ConfirmRequest {
  /** What answering yes does, as the form's label: "Spend the credits". */
  title: string;
  message: string;
  /** What the answer approves; the answer only counts for these exact values. */
  binding: Record<string, unknown>;
}

/** How the user answered; `unsupported` when the client cannot ask anyone (the caller decides then). */
export type ConfirmOutcome = "approved" | "declined" | "unsupported";

/**
 * What every hook of a tool receives: the calling tenant's dependencies of the tool's service (its
 * `ServiceInstance.deps`: the upstream client holding the tenant's key, pollers, guards). The
 * definitions are built once per process and shared by every tenant; what differs comes in here.
 */
interface HookContext<Deps = unknown> {
  deps: Deps;
}

/** A call's context as the transport or the task runner makes it, before `runTool` adds the tool's deps. */
export type CallContext = Omit<ToolContext, "deps">;

export interface ToolContext<Deps = unknown> extends HookContext<Deps> {
  /** Aborted when the client cancels the call or its task, or the session ends. */
  signal: AbortSignal;
  /** Sends notifications/progress when the client asked for progress, and updates the task's status. */
  progress(update: ProgressUpdate): Promise<void>;
  /** Lines go to stderr and to the MCP log stream of this request's client, no one else's. */
  logger: Logger;
  /** Registers a value the caller supplied as secret, so it is scrubbed from every output and log. */
  secret(value: string | undefined): void;
  /** Asks the user (elicitation, or an input_required round trip on 2026-07-28). */
  confirm(request: ConfirmRequest): Promise<ConfirmOutcome>;
  /** Tells clients that the resource list changed (a project was created or deleted). */
  resourcesChanged(): void;
  /**
   * Tasks on shared state: the upstream work has started and this is how to go on following it. A
   * replica that takes the task over (its first replica died) calls the tool's `resume` with it
   * instead of starting the work again; a repeat of a spending call follows it too instead of
   * spending again (core/tools/ledger.ts). Absent elsewhere.
   */
  checkpoint?(state: Record<string, unknown>): Promise<void>;
  /**
   * A request its client is waiting on: when it should have its answer (ms since the epoch), before
   * the client's own timeout (ENV.maxBlockingWaitSeconds). Absent in tasks, which wait as long as the work.
   */
  blockingUntil?: number;
}

type Shape = z.ZodRawShape;
type Obj<S extends Shape> = z.infer<z.ZodObject<S>>;

/** A tool. `Deps` is its service's per-tenant dependencies, passed to every hook (never closed over). */
export interface ToolDef<In extends Shape = Shape, Out extends z.ZodObject = z.ZodObject, Deps = unknown> {
  name: string;
  title: string;
  /** When to use it, what it costs, what comes back. Every token here is paid by every conversation. */
  description: string;
  toolset: string;
  kind: ToolKind;
  /** Defaults: true for read and destructive (DELETE) tools, false otherwise. */
  idempotent?: boolean;
  /**
   * Can run for minutes. Declares task support; `runsAsTask` says which calls become a task when
   * the client supports tasks (default: every call).
   */
  longRunning?: {
    runsAsTask?(input: Obj<In>): boolean;
    /** Goes on from a checkpoint the run left (another replica's): follows the work, never starts it again. */
    resume?(checkpoint: Record<string, unknown>, input: Obj<In>, ctx: ToolContext<Deps>): Promise<z.infer<Out>>;
  };
  input: In;
  output: Out;
  /** Runs in the foreground before `run`, even for a task: confirmations and guards that may refuse. */
  before?(input: Obj<In>, ctx: ToolContext<Deps>): Promise<void>;
  /**
   * What the call overwrites or drops of the user's data, one sentence naming it. It makes the tool
   * destructive (annotations) and the call asks the user first: within the question `before` asks
   * (a spend), else on its own (runBeforeHooks). A client that cannot be asked has the annotation.
   */
  destroys?(input: Obj<In>): string;
  run(input: Obj<In>, ctx: ToolContext<Deps>): Promise<z.infer<Out>>;
  /** A short summary for people and models; structuredContent carries the data. */
  render(output: z.infer<Out>, input: Obj<In>, ctx: HookContext<Deps>): string;
  /** For writes: how to check whether a request whose answer was lost went through. */
  verify?(input: Obj<In>, ctx: HookContext<Deps>): string;
  /**
   * For spending tools: that check, done (read-only). Run by the spend ledger when a repeat comes
   * for a call whose outcome is unknown: what it found, in one sentence, or undefined for nothing.
   * `since`: when that call began (ISO).
   */
  find?(input: Obj<In>, ctx: ToolContext<Deps>, since: string): Promise<string | undefined>;
  /** An MCP Apps view that shows this tool's result (a `ui://` resource URI). */
  view?: string;
  /** The upstream operation it calls (`GET /projects/{projectId}`), for the README's tables. */
  upstream?: string;
  /**
   * The record (a project) a secret supplied in this call belongs to: the tenant's later outputs
   * about that record are scrubbed of it too. Without one, only this call's outputs are.
   */
  secretRecord?(input: Obj<In>): string | undefined;
}

/** Identity function that lets TypeScript infer a tool's input and output types from its schemas. */
export function defineTool<In extends Shape, Out extends z.ZodObject, Deps = unknown>(
  def: ToolDef<In, Out, Deps>,
): ToolDef<In, Out, Deps> {
  return def;
}

/**
 * `defineTool` for one service's tools: `ctx.deps` in every hook is typed as that service's deps
 * (`const defineTool = toolsWith<BuildDeps>()` in the service's deps.ts).
 */
export function toolsWith<Deps>(): <In extends Shape, Out extends z.ZodObject>(
  def: ToolDef<In, Out, Deps>,
) => ToolDef<In, Out, Deps> {
  return defineTool;
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

export function annotationsFor(def: Pick<ToolDef, "kind" | "idempotent" | "destroys">): ToolAnnotations {
  return {
    readOnlyHint: def.kind === "read",
    destructiveHint: def.kind === "destructive" || def.destroys !== undefined,
    idempotentHint: def.idempotent ?? (def.kind === "read" || def.kind === "destructive"),
    openWorldHint: true,
  };
}

/**
 * What running a tool needs from its tenant: the egress scrubber, each service's advice, and the
 * dependencies of the tool's service (`ctx.deps` in its hooks).
 */
export interface ToolHost {
  egress: Egress;
  advice: ReadonlyMap<string, ServiceAdvice>;
  deps(def: ToolDef<any, any, any>): unknown;
}

/** The host of one call: its own scrubber, which learns the secrets the call supplies (ctx.secret). */
export function callHost(
  host: ToolHost,
  def: ToolDef<any, any>,
  input: Record<string, unknown>,
): ToolHost & { egress: CallEgress } {
  return { ...host, egress: host.egress.forCall(def.secretRecord?.(input)) };
}

/** The input flag of spending tools that asks for a new spend although the same call just ran. */
const REPEAT_INPUT = z.literal(true).optional().describe("Spend again although the same call just ran");

const inputSchemas = new WeakMap<Shape, z.ZodObject>();

/**
 * A tool's input as one zod object, built once per definition (every tenant's copy shares its
 * input shape): a 2026-07-28 HTTP request gets a fresh server instance, and rebuilding every
 * tool's object per request was most of its cost.
 */
export function inputSchemaOf(def: ToolDef<any, any>): z.ZodObject {
  let schema = inputSchemas.get(def.input);
  if (!schema) {
    // A spending tool answers a repeat of the same call with the first one's outcome (core/tools/ledger.ts).
    schema = z.object(def.kind === "spend" ? { ...def.input, repeat: REPEAT_INPUT } : def.input);
    inputSchemas.set(def.input, schema);
  }
  return schema;
}

/** Input validation with a message that names the field, the same for plain calls and tasks. */
export function parseInput(
  def: ToolDef<any, any>,
  args: unknown,
): { ok: true; input: Record<string, unknown> } | { ok: false; result: CallToolResult } {
  const parsed = inputSchemaOf(def).safeParse(args ?? {});
  if (parsed.success) return { ok: true, input: parsed.data };
  const issues = parsed.error.issues
    .map((i) => `${i.path.length ? i.path.join(".") : "(arguments)"}: ${i.message}`)
    .join("; ");
  return {
    ok: false,
    result: {
      content: [{ type: "text", text: `Invalid arguments for ${def.name}: ${issues}. Nothing was sent upstream.` }],
      isError: true,
    },
  };
}

/** How `runTool` starts a call that is not a plain first run. */
export interface RunOptions {
  /** `before` (and a destroying tool's approval) already ran: a task's work, or a spend's ledger. */
  beforeDone?: boolean;
  /** A checkpoint of work already started upstream: the tool's `resume` follows it instead of `run`. */
  resumeFrom?: Record<string, unknown>;
}

/**
 * Runs `before` (unless already done) then `run`, and turns the outcome into a CallToolResult:
 * scrubbed first, then fitted to a model's context. Never throws, except the control-flow errors
 * the caller handles (a confirmation that needs input).
 */
export async function runTool(
  def: ToolDef<any, any, any>,
  input: Record<string, unknown>,
  call: CallContext,
  host: ToolHost,
  { beforeDone = false, resumeFrom }: RunOptions = {},
): Promise<CallToolResult> {
  const started = performance.now();
  const ctx: ToolContext = { ...call, deps: host.deps(def) };
  let raw: unknown;
  try {
    if (!beforeDone) await runBeforeHooks(def, input, ctx);
    const resume = resumeFrom && def.longRunning?.resume;
    raw = resume ? await resume(resumeFrom, input, ctx) : await def.run(input, ctx);
  } catch (err) {
    if (err instanceof NeedsInput) throw err;
    return failure(def, input, err, ctx, host, started);
  }
  // Outside run's try: the work is done, so nothing from here on may report it as failed.
  try {
    return success(def, input, raw, ctx, host, started);
  } catch (err) {
    const why = `its answer could not be reported (${err instanceof Error ? err.message : String(err)})`;
    ctx.logger.warn("tool result not reported", { tool: def.name, error: why });
    return { content: [{ type: "text", text: host.egress.text(doneBut(def, input, why, host)) }] };
  }
}

/**
 * `before`, and for a tool that `destroys` data the user's approval of it: one question per call
 * (a round trip carries one answer), so a `before` that asks (a spend) asks it with the loss named
 * first; otherwise it is asked here, whatever the spending policy. Declined: nothing is sent.
 */
async function runBeforeHooks(def: ToolDef<any, any, any>, input: Record<string, unknown>, ctx: ToolContext) {
  const destroys = def.destroys?.(input);
  if (!destroys) return def.before?.(input, ctx);
  let asked = false;
  const confirm: ToolContext["confirm"] = (request) => {
    asked = true;
    const message = `${destroys}\n${request.message}`;
    return ctx.confirm({ ...request, message, binding: { ...request.binding, destroys } });
  };
  await def.before?.(input, { ...ctx, confirm });
  if (asked) return;
  const answer = await ctx.confirm({
    title: "Overwrite or delete",
    message: `${destroys} Proceed?`,
    binding: { destroys },
  });
  if (answer === "declined")
    throw new ToolError(`Not done: the user did not approve this. ${destroys} Nothing was sent.`, { declined: true });
}

/** Runs only `before` (and the approval of what the tool destroys); a refusal comes back as the failure result. */
export async function runBefore(
  def: ToolDef<any, any, any>,
  input: Record<string, unknown>,
  call: CallContext,
  host: ToolHost,
): Promise<CallToolResult | undefined> {
  if (!def.before && !def.destroys) return undefined;
  const ctx: ToolContext = { ...call, deps: host.deps(def) };
  try {
    await runBeforeHooks(def, input, ctx);
    return undefined;
  } catch (err) {
    if (err instanceof NeedsInput) throw err;
    return failure(def, input, err, ctx, host, performance.now());
  }
}

/** A write's `verify` advice, with the calling tenant's deps (it may read them like run). */
export function verifyOf(
  def: ToolDef<any, any, any>,
  input: Record<string, unknown>,
  host: Pick<ToolHost, "deps">,
): string | undefined {
  try {
    return def.verify?.(input, { deps: host.deps(def) });
  } catch {
    // Advice is optional: a verify that fails must not turn the call's outcome into another error.
    return undefined;
  }
}

function success(
  def: ToolDef<any, any, any>,
  input: Record<string, unknown>,
  raw: unknown,
  ctx: ToolContext,
  host: ToolHost,
  started: number,
): CallToolResult {
  const { egress } = host;
  const { output, trims } = fitStructured(egress.json(raw) as Record<string, unknown>);
  ctx.logger.debug("tool call", { tool: def.name, ms: Math.round(performance.now() - started), ok: true });
  const text = fitText(egress.text(renderText(def, output, input, ctx, host)), trims);
  return { content: [{ type: "text", text }], structuredContent: output };
}

/**
 * The result's text. A render that fails comes after the work is done (a write landed, credits
 * were spent): the call still reports that, with how to check it, never an error to retry.
 */
function renderText(
  def: ToolDef<any, any, any>,
  output: Obj<Shape>,
  input: Obj<Shape>,
  ctx: ToolContext,
  host: ToolHost,
): string {
  try {
    return def.render(output, input, ctx);
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    ctx.logger.warn("tool result not rendered", { tool: def.name, error: why });
    return doneBut(
      def,
      input,
      `its summary could not be written (${why}); the whole answer is in structuredContent`,
      host,
    );
  }
}

/** What the service did, when reporting it failed: a write is done (and how to check it), never to retry. */
function doneBut(def: ToolDef<any, any, any>, input: Obj<Shape>, what: string, host: ToolHost): string {
  if (def.kind === "read") return `${def.title}: the service answered, but ${what}.`;
  const check = verifyOf(def, input, host);
  const again = `Do not call ${def.name} again for this.${check ? ` To check it: ${check}.` : ""}`;
  return `${def.title}: done, the service confirmed it; ${what}. ${again}`;
}

export function failure(
  def: ToolDef<any, any, any>,
  input: Record<string, unknown>,
  err: unknown,
  ctx: CallContext,
  host: ToolHost,
  started: number,
): CallToolResult {
  const { egress } = host;
  // The SDK aborts with whatever reason the client gave, often a plain string: the signal says it was a cancel.
  const cancelled = isAbort(err) || (ctx.signal.aborted && !(err instanceof ToolError));
  const fields = { tool: def.name, ms: Math.round(performance.now() - started) };
  const verify = def.kind !== "read" ? verifyOf(def, input, host) : undefined;
  const described = describeError(cancelled ? new CancelledCall() : err, host.advice, verify);
  const message = fitText(egress.text(described), []);
  if (cancelled) ctx.logger.debug("tool call cancelled", { ...fields, reason: abortReason(ctx.signal.reason ?? err) });
  else ctx.logger[err instanceof ToolError ? "info" : "warn"]("tool call failed", { ...fields, error: message });
  const result: CallToolResult = { content: [{ type: "text", text: message }], isError: true };
  if (err instanceof ToolError && err.structured) result.structuredContent = egress.json(err.structured);
  return result;
}

/** The client's reason for a cancel, as one short line ("User pressed stop", "Request timed out"). */
function abortReason(reason: unknown): string {
  if (typeof reason === "string") return reason.slice(0, 200);
  const text = reason instanceof Error ? reason.message || reason.name : "no reason given";
  return text.slice(0, 200);
}

class CancelledCall extends Error {
  constructor() {
    super("cancelled by the client");
    this.name = "AbortError";
  }
}

/**
 * Thrown by `ctx.confirm` when the answer is not in this round: the registration layer turns it
 * into an input_required result (served to 2025 clients as an elicitation by the SDK).
 */
export class NeedsInput extends Error {
  constructor(
    readonly key: string,
    readonly request: ConfirmRequest,
    /** What the next round must carry back, signed, in its requestState. */
    readonly state: Record<string, unknown>,
  ) {
    super("input required");
    this.name = "NeedsInput";
  }
}
