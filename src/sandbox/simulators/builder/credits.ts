import type { BuildContext } from "./context.js";
import { checkCreditLimit, recordCharge } from "./billing.js";
import { fail, type BuildRoutes } from "./routes.js";
import { round, type Charge, type SimProject } from "./state.js";

/** The service's documented prices (public docs). */
export const CREDIT_COSTS = {
  CREATE_PROJECT: 1,
  CREATE_DEPLOYMENT: 1,
  START_SERVER: 3,
  GET_SOURCE_CODE: 1,
  RECOVER_VERSION: 2,
  UPLOAD_FILE: 0.5,
  ADD_CUSTOM_DOMAIN: 2,
  EXPORT_PROJECT: 2,
  IMPORT_PROJECT: 6,
  UPDATE_FILE: 0.1,
  REBUILD_PROJECT: 1,
} as const;
type CostKey = keyof typeof CREDIT_COSTS;

/** The account's balance: recurrent credits are spent first, then one-time credits. */
export class Wallet {
  private held: Charge;

  constructor(
    start: { recurrentCredits: number; oneTimeCredits: number },
    /** true while nothing may be charged (demo data being seeded) */
    private readonly isFree: () => boolean,
  ) {
    this.held = { recurrent: start.recurrentCredits, oneTime: start.oneTimeCredits };
  }

  set(recurrent: number, oneTime: number): void {
    this.held = { recurrent, oneTime };
  }

  balance(): { credits: number; recurrentCredits: number; oneTimeCredits: number } {
    const { recurrent, oneTime } = this.held;
    return { credits: round(recurrent + oneTime), recurrentCredits: round(recurrent), oneTimeCredits: round(oneTime) };
  }

  credits(): number {
    return round(this.held.recurrent + this.held.oneTime);
  }

  /** Takes recurrent credits first, then one-time credits; undefined when the balance is short. */
  charge(amount: number): Charge | undefined {
    if (this.isFree() || amount <= 0) return { recurrent: 0, oneTime: 0 };
    if (this.credits() + 1e-9 < amount) return undefined;
    const recurrent = round(Math.min(this.held.recurrent, amount));
    const oneTime = round(amount - recurrent);
    this.held = { recurrent: round(this.held.recurrent - recurrent), oneTime: round(this.held.oneTime - oneTime) };
    return { recurrent, oneTime };
  }

  /** Takes up to `amount`: what the balance lacks is absorbed (an agent run still finishes, §1.7). */
  chargeUpTo(amount: number): Charge {
    if (this.isFree() || amount <= 0) return { recurrent: 0, oneTime: 0 };
    return this.charge(Math.min(amount, this.credits())) ?? { recurrent: 0, oneTime: 0 };
  }

  refund(charge: Charge): void {
    this.held = {
      recurrent: round(this.held.recurrent + charge.recurrent),
      oneTime: round(this.held.oneTime + charge.oneTime),
    };
  }

  /** 402 INSUFFICIENT_CREDITS unless the balance covers `amount`. */
  require(amount: number, what: string): void {
    if (!this.isFree() && this.credits() + 1e-9 < amount) {
      fail(402, "INSUFFICIENT_CREDITS", `${what} needs ${amount} credits; the balance is ${this.credits()}`);
    }
  }
}

/** Charges a priced operation to the account and counts it in the project's spending. */
export function chargeProject(ctx: BuildContext, p: SimProject, key: CostKey): void {
  const cost = CREDIT_COSTS[key];
  checkCreditLimit(ctx, p, "development", cost);
  ctx.wallet.require(cost, key);
  ctx.wallet.charge(cost);
  p.totalCreditsSpent = round(p.totalCreditsSpent + cost);
  recordCharge(ctx, p, "development", key, cost);
}

/** Runs charge as they progress, so the balance is read once every project is current. */
export function currentBalance(ctx: BuildContext): ReturnType<Wallet["balance"]> {
  ctx.advanceAll();
  return ctx.wallet.balance();
}

export function registerAccountRoutes(ctx: BuildContext, routes: BuildRoutes): void {
  routes.on("GET", "/account", () => currentBalance(ctx));
  routes.on("GET", "/credit-costs", () => ({ creditCosts: { ...CREDIT_COSTS } }));
}
