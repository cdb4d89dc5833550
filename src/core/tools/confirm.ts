import { createHash, randomBytes, randomUUID } from "node:crypto";
import {
  createRequestStateCodec,
  inputResponse,
  type RequestStateCodec,
  type ServerContext,
} from "@modelcontextprotocol/server";
import { telemetry } from "../base/telemetry.js";
import { NeedsInput, ToolError, type ConfirmOutcome, type ConfirmRequest } from "./tool.js";

/** What a confirmation round trip carries in its signed requestState. */
interface ConfirmState {
  kind: "confirm";
  /**
   * Hash of the tool, its arguments and what the user approves (operation, cost): the answer
   * approves exactly these.
   */
  digest: string;
  /** Single use: a replayed state is refused. */
  nonce: string;
  /** The tenant who was asked: another tenant's answer is refused, and spends nothing on anyone's account. */
  tenant: string;
  /**
   * The nonce store's generation when it was asked: a store that may have lost used nonces since (a
   * restart) has another.
   */
  generation: string;
}

/** What consuming a nonce found: first use, used before, or unknowable (the store lost its markers since). */
export type NonceUse = "first" | "used" | "stale";

/** Remembers used nonces until they would have expired anyway. */
export interface NonceStore {
  /**
   * Names the store's current memory of used nonces. It changes whenever that memory may have been
   * lost (a restart), so a confirmation from before is refused instead of trusted.
   */
  generation(): Promise<string>;
  /** "first" the first time a nonce of this generation is consumed; "used" after; "stale" for an older generation. */
  consume(nonce: string, generation: string, ttlMs: number): Promise<NonceUse>;
}

/** In process: what it remembers dies with the process, so each process is its own generation. */
export class MemoryNonceStore implements NonceStore {
  private readonly used = new Map<string, number>();
  private readonly current = randomUUID();

  async generation(): Promise<string> {
    return this.current;
  }

  async consume(nonce: string, generation: string, ttlMs: number): Promise<NonceUse> {
    if (generation !== this.current) return "stale";
    const now = Date.now();
    for (const [n, until] of this.used) if (until < now) this.used.delete(n);
    if (this.used.has(nonce)) return "used";
    this.used.set(nonce, now + ttlMs);
    return "first";
  }
}

const CONFIRM_KEY = "confirm_spend";
const STATE_TTL_SECONDS = 600;

/** One confirmation asked by a tool call. */
interface ConfirmCall {
  tool: string;
  input: unknown;
  request: ConfirmRequest;
  canAsk: boolean;
  /** The tenant the request acts for. */
  tenant: string;
  /** How to check whether the call went through (the tool's `verify`), for an answer used before. */
  verify?: string;
}

/**
 * Confirmations in both eras, written once in the 2026-07-28 style: the first round answers
 * input_required with an elicitation and a signed, single-use requestState; the retry carries
 * the answer. On 2025 connections the SDK's legacy shim sends the elicitation itself and re-enters
 * the handler, so the same code serves both.
 */
/**
 * A confirmation asked, or answered (accepted, refused), or whose state came back expired, tampered
 * or already used (expired): the switchboard.confirmations counter and an event on the call's span.
 */
function counted<T>(outcome: "asked" | "accepted" | "refused" | "expired", ctx: ServerContext, value?: T): T {
  telemetry.add("confirmations", 1, { outcome });
  telemetry.event("switchboard.confirmation", { outcome }, ctx.mcpReq.signal);
  return value as T;
}

export class Confirmations {
  private readonly codec: RequestStateCodec<ConfirmState>;

  constructor(
    key: string | Uint8Array,
    private readonly nonces: NonceStore,
  ) {
    this.codec = createRequestStateCodec<ConfirmState>({
      key,
      ttlSeconds: STATE_TTL_SECONDS,
      bind: (ctx) => ctx.mcpReq.method,
    });
  }

  /** The SDK's requestState hook: a tampered or expired state never reaches a handler. */
  readonly verify = (state: string, ctx: ServerContext) => {
    try {
      return this.codec.verify(state, ctx);
    } catch (err) {
      counted("expired", ctx);
      throw err;
    }
  };

  mint(state: ConfirmState, ctx: ServerContext): Promise<string> {
    return this.codec.mint(state, ctx);
  }

  async confirm(ctx: ServerContext, call: ConfirmCall): Promise<ConfirmOutcome> {
    if (!call.canAsk) return "unsupported";
    const digest = digestOf(call.tool, call.input, call.request);
    const state = ctx.mcpReq.requestState<ConfirmState | string>();
    if (typeof state === "object" && state?.kind === "confirm" && state.digest === digest) {
      const answer = inputResponse(ctx.mcpReq.inputResponses, CONFIRM_KEY);
      if (answer.kind === "elicit") {
        if (state.tenant !== call.tenant) throw new ToolError(OTHER_TENANT);
        if (answer.action !== "accept" || (answer.content as { confirm?: unknown } | undefined)?.confirm !== true)
          return counted("refused", ctx, "declined");
        const use = await this.storeCall(
          () => this.nonces.consume(state.nonce, state.generation, STATE_TTL_SECONDS * 1000),
          CHECK_UNAVAILABLE,
        );
        if (use !== "first") throw counted("expired", ctx, new ReplayedConfirmation(use, call.verify));
        return counted("accepted", ctx, "approved");
      }
    }
    const generation = await this.storeCall(() => this.nonces.generation(), ASK_UNAVAILABLE);
    const next: ConfirmState = {
      kind: "confirm",
      digest,
      nonce: `${randomUUID()}${randomBytes(8).toString("hex")}`,
      tenant: call.tenant,
      generation,
    };
    counted("asked", ctx);
    throw new NeedsInput(CONFIRM_KEY, call.request, { ...next });
  }

  /** A store that cannot answer (Redis away) is a transient, explained failure that spent nothing. */
  private async storeCall<T>(fn: () => Promise<T>, message: string): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw new ToolError(`${message} (${err instanceof Error ? err.message : String(err)})`);
    }
  }
}

const OTHER_TENANT =
  "This confirmation was asked of another caller (other keys), so it cannot approve this call: " +
  "nothing was sent or spent. Call the tool again to be asked yourself.";
const CHECK_UNAVAILABLE =
  "The state store is unavailable, so this confirmation could not be checked as unused: nothing was sent or spent. " +
  "This is transient and retrying is safe: send the same answer again in a few seconds (if the store restarted " +
  "meanwhile, you will be told to ask again)";
const ASK_UNAVAILABLE =
  "The state store is unavailable, so no confirmation can be asked right now: nothing was sent or spent. " +
  "This is transient and retrying is safe: call the tool again in a few seconds";

/** An answer that was used before, or that cannot be proven unused: replaying it must not spend again. */
class ReplayedConfirmation extends ToolError {
  constructor(use: "used" | "stale", verify: string | undefined) {
    const why =
      use === "used"
        ? "This confirmation was already used once. This call sent nothing, " +
          "but the call it approved may have gone through (its answer can have been lost on the way, to a 502 say): " +
          "the outcome is unknown."
        : "This confirmation was issued before the state store lost its memory of used confirmations (a restart), " +
          "so it cannot be proven unused and was refused: this call sent nothing. It may have been used before: " +
          "the outcome is unknown.";
    const check = verify ? `Check first (${verify}); ` : "Check first whether it took effect; ";
    super(`${why}\nNext step: ${check}only if it did not, call the tool again to be asked again.`);
  }
}

function digestOf(tool: string, input: unknown, request: ConfirmRequest): string {
  return createHash("sha256")
    .update(JSON.stringify([tool, input, request.binding]))
    .digest("base64url");
}
