import { credits as plural } from "../../core/base/text.js";
import { ToolError, type ToolContext } from "../../core/tools/tool.js";
import type { BuildClient } from "./client.js";

export type ConfirmPolicy = "always" | "never" | number;

export interface SpendEstimate {
  /** What the user is asked to approve, e.g. "Launch project shop-demo". */
  operation: string;
  /** Operations from the credit-cost table and how many of each. */
  items: Array<[operation: string, count: number]>;
  /** A cost with no fixed price (agent runs), described and bounded for the confirmation. */
  variable?: { description: string; upTo: number };
}

const ACCOUNT_TTL_MS = 5_000;
const COSTS_TTL_MS = 5 * 60_000;

interface Cached<T> {
  at: number;
  value: Promise<T>;
}

/**
 * Reads the balance and the credit-cost table (cached briefly), refuses a spend the balance cannot
 * cover, and asks the user first when BUILD_CONFIRM_SPEND says so and the client can be asked.
 * It runs before the paid request, so a refusal or a decline costs nothing.
 */
export class CreditGuard {
  private account?: Cached<{ credits: number }>;
  private costs?: Cached<Record<string, number>>;
  /** The cost table as last read: what the reply hook prices a spend with (spend.ts). */
  private lastCosts?: Record<string, number>;

  constructor(
    private readonly client: BuildClient,
    private readonly policy: ConfirmPolicy,
  ) {}

  async check(estimate: SpendEstimate, ctx: ToolContext): Promise<void> {
    // The reads are shared by concurrent callers, so they run on their own lifetime (the client's
    // timeout); each caller only stops waiting for them when it is cancelled itself.
    const [{ credits }, table] = await untilAborted(Promise.all([this.balance(), this.costTable()]), ctx.signal);
    const items = estimate.items.filter(([, count]) => count > 0);
    const fixed = items.reduce((sum, [op, count]) => sum + (table[op] ?? 0) * count, 0);
    const breakdown = items
      .map(([op, count]) => `${op} ${table[op] ?? 0}${count !== 1 ? ` × ${count}` : ""}`)
      .join(" + ");
    const numbers = { operation: estimate.operation, cost: fixed, balance: credits, breakdown };
    if (fixed > credits) {
      throw new ToolError(
        `Not enough credits: ${estimate.operation} costs ${plural(fixed)} (${breakdown}) ` +
          `and the balance is ${credits}. Nothing was sent or spent.\nNext step: top up the account, ` +
          "then try again (build_get_account shows the balance).",
        { refused: true, ...numbers },
      );
    }
    const worst = fixed + (estimate.variable?.upTo ?? 0);
    if (this.policy === "never" || (typeof this.policy === "number" && worst <= this.policy)) return this.spent();

    // What the user is asked must be true now: the balance is read fresh, not from the brief cache
    // (spends through another replica, a task or an agent run change it without this guard knowing).
    const { credits: now } = await untilAborted(this.balance(true), ctx.signal);
    if (fixed > now) return this.check(estimate, ctx);
    return this.confirm(estimate, ctx, {
      fixed,
      breakdown,
      items,
      credits: now,
      numbers: { ...numbers, balance: now },
    });
  }

  private async confirm(
    estimate: SpendEstimate,
    ctx: ToolContext,
    known: { fixed: number; breakdown: string; items: unknown[]; credits: number; numbers: Record<string, unknown> },
  ): Promise<void> {
    const { fixed, breakdown, items, credits, numbers } = known;
    const after = Math.round((credits - fixed) * 100) / 100;
    const price = items.length ? `costs ${plural(fixed)} (${breakdown})` : "has no fixed price";
    const variable = estimate.variable ? `${items.length ? ", plus" : ":"} ${estimate.variable.description}` : "";
    const message =
      `${estimate.operation}: ${price}${variable}. Balance ${credits} → ${plural(after)} ` +
      `after${items.length ? "" : " the fixed part"}. Proceed?`;
    const binding = { operation: estimate.operation, cost: fixed, breakdown, variable: estimate.variable?.upTo ?? 0 };
    const answer = await ctx.confirm({ title: "Spend the credits", message, binding });
    if (answer === "unsupported" || answer === "approved") return this.spent();
    throw new ToolError(
      `Not done: the user did not approve spending ${plural(fixed)} on ${estimate.operation}. ` +
        "Nothing was sent or spent.",
      {
        declined: true,
        ...numbers,
      },
    );
  }

  /** The price of an operation as the cost table last read said, if it was read. */
  price(key: string): number | undefined {
    return this.lastCosts?.[key];
  }

  /** The balance is about to change: the next check must read it again. */
  private spent(): void {
    this.account = undefined;
  }

  private balance(fresh = false): Promise<{ credits: number }> {
    if (fresh || !this.account || Date.now() - this.account.at > ACCOUNT_TTL_MS) {
      const value = this.client.getAccount();
      this.account = { at: Date.now(), value };
      value.catch(() => (this.account = undefined));
    }
    return this.account.value;
  }

  private costTable(): Promise<Record<string, number>> {
    if (!this.costs || Date.now() - this.costs.at > COSTS_TTL_MS) {
      const value = this.client.getCreditCosts().then((c) => (this.lastCosts = c.creditCosts));
      this.costs = { at: Date.now(), value };
      value.catch(() => (this.costs = undefined));
    }
    return this.costs.value;
  }
}

/** Resolves with the promise, or rejects as soon as this caller's signal aborts. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason ?? new Error("aborted"));
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason ?? new Error("aborted"));
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}
