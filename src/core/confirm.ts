import { createHash, randomBytes, randomUUID } from "node:crypto";
import { createRequestStateCodec, inputResponse, type RequestStateCodec, type ServerContext } from "@modelcontextprotocol/server";
import { NeedsInput, type ConfirmOutcome, type ConfirmRequest } from "./tool.js";

/** What a confirmation round trip carries in its signed requestState. */
export interface ConfirmState {
  kind: "confirm";
  /** Hash of the tool, its arguments and what the user approves (operation, cost): the answer approves exactly these. */
  digest: string;
  /** Single use: a replayed state is refused. */
  nonce: string;
}

/** Remembers used nonces until they would have expired anyway. */
export interface NonceStore {
  /** True the first time a nonce is consumed, false on any later attempt. */
  consume(nonce: string, ttlMs: number): Promise<boolean>;
}

export class MemoryNonceStore implements NonceStore {
  private readonly used = new Map<string, number>();

  async consume(nonce: string, ttlMs: number): Promise<boolean> {
    const now = Date.now();
    for (const [n, until] of this.used) if (until < now) this.used.delete(n);
    if (this.used.has(nonce)) return false;
    this.used.set(nonce, now + ttlMs);
    return true;
  }
}

export const CONFIRM_KEY = "confirm_spend";
const STATE_TTL_SECONDS = 600;

/**
 * Confirmations in both eras, written once in the 2026-07-28 style: the first round answers
 * input_required with an elicitation and a signed, single-use requestState; the retry carries
 * the answer. On 2025 connections the SDK's legacy shim sends the elicitation itself and re-enters
 * the handler, so the same code serves both.
 */
export class Confirmations {
  private readonly codec: RequestStateCodec<ConfirmState>;

  constructor(
    key: string | Uint8Array,
    private readonly nonces: NonceStore,
  ) {
    this.codec = createRequestStateCodec<ConfirmState>({ key, ttlSeconds: STATE_TTL_SECONDS, bind: (ctx) => ctx.mcpReq.method });
  }

  /** The SDK's requestState hook: a tampered or expired state never reaches a handler. */
  readonly verify = (state: string, ctx: ServerContext) => this.codec.verify(state, ctx);

  mint(state: ConfirmState, ctx: ServerContext): Promise<string> {
    return this.codec.mint(state, ctx);
  }

  async confirm(ctx: ServerContext, tool: string, input: unknown, request: ConfirmRequest, canAsk: boolean): Promise<ConfirmOutcome> {
    if (!canAsk) return "unsupported";
    const digest = digestOf(tool, input, request);
    const state = ctx.mcpReq.requestState<ConfirmState | string>();
    if (typeof state === "object" && state?.kind === "confirm" && state.digest === digest) {
      const answer = inputResponse(ctx.mcpReq.inputResponses, CONFIRM_KEY);
      if (answer.kind === "elicit") {
        if (answer.action !== "accept" || (answer.content as { confirm?: unknown } | undefined)?.confirm !== true) return "declined";
        if (!(await this.nonces.consume(state.nonce, STATE_TTL_SECONDS * 1000))) throw new ReplayedConfirmation();
        return "approved";
      }
    }
    const next: ConfirmState = { kind: "confirm", digest, nonce: `${randomUUID()}${randomBytes(8).toString("hex")}` };
    throw new NeedsInput(CONFIRM_KEY, request, { ...next });
  }
}

/** An answer that was already used once: replaying it must not spend again. */
export class ReplayedConfirmation extends Error {
  constructor() {
    super("This confirmation was already used; nothing was sent or spent. Call the tool again to be asked again.");
    this.name = "ToolError";
  }
}

function digestOf(tool: string, input: unknown, request: ConfirmRequest): string {
  return createHash("sha256").update(JSON.stringify([tool, input, request.binding])).digest("base64url");
}
