import type { Router, SimRequest } from "../../router.js";
import type { BuildContext } from "./context.js";
import { ApiError, errorResponse, fail, ok, type BuildRoutes } from "./routes.js";
import { DAY, round, type AgentRun, type CreditLimits, type Json, type SimProject } from "./state.js";
import { bodyOf } from "./validation.js";
import { deliver } from "./webhooks.js";

/**
 * Credit caps (reference §17) and spending analytics (§18).
 *
 * Every charge lands in an account ledger: priced operations through chargeProject (credits.ts),
 * agent runs as seen by an advance step (what a run is billed, at its start and at its end; a
 * refund removes them), and the app's own usage through BuildSimulator.chargeInfrastructure().
 * Launch and create (CREATE_PROJECT and launch's inline uploads) are not in it: they happen before
 * the project exists and the reference gives analytics no key for them.
 *
 * Caps: the development cap is compared with everything the project spent (totalCreditsSpent, as
 * the agent area does), the infrastructure cap with all its infrastructure charges: neither resets
 * monthly here. At a cap, a priced operation (and agent/start) answers 403
 * PROJECT_CREDIT_LIMIT_REACHED; `project.credit_limit.reached` fires once per project and category
 * until that cap is changed.
 */

type Category = "development" | "infrastructure";

/** byType keys of priced operations; the reference lists the first six, the others are ours (lower-case keys). */
const TYPE_OF_COST: Record<string, string> = {
  CREATE_DEPLOYMENT: "deploy",
  START_SERVER: "start_server",
  GET_SOURCE_CODE: "get_source_code",
  RECOVER_VERSION: "recover_version",
  UPLOAD_FILE: "upload_file",
  ADD_CUSTOM_DOMAIN: "add_custom_domain",
};

const RETENTION = 90 * DAY;
const MAX_RANGE_DAYS = 90;

interface ChargeRecord {
  at: number;
  projectId: string;
  category: Category;
  type: string;
  credits: number;
}

interface Ledger {
  charges: ChargeRecord[];
  /** what each run was billed so far, and its records (removed on a refund) */
  runs: WeakMap<AgentRun, { seen: number; records: ChargeRecord[] }>;
  lastRun: WeakMap<SimProject, AgentRun>;
  /** `${projectId}:${category}` once the webhook fired for the current cap */
  notified: Set<string>;
}

const ledgers = new WeakMap<BuildContext, Ledger>();

function ledger(ctx: BuildContext): Ledger {
  let l = ledgers.get(ctx);
  if (!l) ledgers.set(ctx, (l = { charges: [], runs: new WeakMap(), lastRun: new WeakMap(), notified: new Set() }));
  return l;
}

export function registerBillingRoutes(ctx: BuildContext, routes: BuildRoutes, router: Router): void {
  routes.onProject("PATCH", "/credit-limits", (p, req) => patchLimits(ctx, p, bodyOf(req)));
  // The one operation outside /api/v1/vcaas: registered on the router itself, same envelope.
  router.on("GET", "/api/v1/credits/spending-analytics", (req) => {
    ctx.advanceAll();
    try {
      return ok(analytics(ctx, req));
    } catch (err) {
      if (err instanceof ApiError) return errorResponse(err.status, err.code, err.message);
      throw err;
    }
  });
  ctx.onAdvance((p) => noticeRuns(ctx, p));
}

/** Absent keys are kept; a cap that changes re-arms its webhook. */
function patchLimits(ctx: BuildContext, p: SimProject, body: Json) {
  const keys = ["maxDevelopmentCreditsPerMonth", "maxInfrastructureCreditsPerMonth"] as const;
  const sent = keys.filter((k) => k in body);
  if (sent.length === 0)
    fail(400, "MISSING_LIMIT_FIELDS", "Send maxDevelopmentCreditsPerMonth, maxInfrastructureCreditsPerMonth or both");
  for (const key of sent) {
    const v = body[key];
    if (v !== null && (typeof v !== "number" || !Number.isFinite(v) || v <= 0))
      fail(400, "INVALID_LIMIT", `${key} must be a positive number or null`);
  }
  const next: CreditLimits = { ...p.creditLimits };
  for (const key of sent) next[key] = body[key] as number | null;
  const l = ledger(ctx);
  if (next.maxDevelopmentCreditsPerMonth !== p.creditLimits.maxDevelopmentCreditsPerMonth)
    l.notified.delete(`${p.projectId}:development`);
  if (next.maxInfrastructureCreditsPerMonth !== p.creditLimits.maxInfrastructureCreditsPerMonth)
    l.notified.delete(`${p.projectId}:infrastructure`);
  p.creditLimits = next;
  return { projectId: p.projectId, creditLimits: { ...next } };
}

function spent(ctx: BuildContext, p: SimProject, category: Category): number {
  if (category === "development") return p.totalCreditsSpent;
  return round(
    ledger(ctx).charges.reduce(
      (sum, c) => sum + (c.projectId === p.projectId && c.category === category ? c.credits : 0),
      0,
    ),
  );
}

function capOf(p: SimProject, category: Category): number | null {
  return category === "development"
    ? p.creditLimits.maxDevelopmentCreditsPerMonth
    : p.creditLimits.maxInfrastructureCreditsPerMonth;
}

/** 403 when `amount` would take the project past its cap (an amount of 0: when it is at the cap already). */
export function checkCreditLimit(ctx: BuildContext, p: SimProject, category: Category, amount: number): void {
  const cap = capOf(p, category);
  if (cap === null) return;
  const used = spent(ctx, p, category);
  if (amount > 0 ? used + amount <= cap + 1e-9 : used < cap) return;
  notifyCap(ctx, p, category, used, ctx.simNow());
  fail(
    403,
    "PROJECT_CREDIT_LIMIT_REACHED",
    `The project's ${category} credit limit (${cap} per month) is reached (${used} spent); ` +
      "raise or remove it, or wait for the 1st",
  );
}

/** Records a charge already taken; `key` is a cost key (CREATE_DEPLOYMENT) or a byType key. */
export function recordCharge(
  ctx: BuildContext,
  p: SimProject,
  category: Category,
  key: string,
  credits: number,
  at = ctx.simNow(),
): ChargeRecord | undefined {
  if (credits === 0) return undefined;
  const record: ChargeRecord = {
    at,
    projectId: p.projectId,
    category,
    type: TYPE_OF_COST[key] ?? key.toLowerCase(),
    credits: round(credits),
  };
  ledger(ctx).charges.push(record);
  noticeCap(ctx, p, category, at);
  return record;
}

/** The app's own usage (emails, PDFs, AI calls...): refused at the infrastructure cap. */
export function chargeInfrastructure(ctx: BuildContext, p: SimProject, type: string, credits: number): void {
  ctx.advanceAll();
  checkCreditLimit(ctx, p, "infrastructure", credits);
  ctx.wallet.require(credits, type);
  ctx.wallet.charge(credits);
  recordCharge(ctx, p, "infrastructure", type, credits);
}

function noticeCap(ctx: BuildContext, p: SimProject, category: Category, at: number): void {
  const cap = capOf(p, category);
  const used = spent(ctx, p, category);
  if (cap !== null && used >= cap - 1e-9) notifyCap(ctx, p, category, used, at);
}

/** Payload fields other than event and timestamp are not stated: projectId, category, limit, spent (ours). */
function notifyCap(ctx: BuildContext, p: SimProject, category: Category, used: number, at: number): void {
  const l = ledger(ctx);
  const key = `${p.projectId}:${category}`;
  if (l.notified.has(key)) return;
  l.notified.add(key);
  deliver(
    ctx,
    "project.credit_limit.reached",
    { projectId: p.projectId, category, limit: capOf(p, category), spent: used },
    at,
  );
}

/** Agent runs bill at their start and end (agent.ts): the ledger follows what each run was billed. */
function noticeRuns(ctx: BuildContext, p: SimProject): void {
  const l = ledger(ctx);
  const previous = l.lastRun.get(p);
  for (const run of previous && previous !== p.run ? [previous, p.run] : [p.run]) {
    if (!run) continue;
    const entry = l.runs.get(run) ?? { seen: 0, records: [] };
    l.runs.set(run, entry);
    const delta = round(run.creditsSpent - entry.seen);
    if (delta === 0) continue;
    entry.seen = run.creditsSpent;
    if (run.creditsSpent === 0) {
      // Refunded: the run's charges leave the ledger.
      l.charges = l.charges.filter((c) => !entry.records.includes(c));
      entry.records = [];
      continue;
    }
    const at = run.state === "running" ? run.startedAt : (run.endedAt ?? ctx.simNow());
    const record = recordCharge(ctx, p, "development", "prompt", delta, at);
    if (record) entry.records.push(record);
  }
  if (p.run) l.lastRun.set(p, p.run);
  noticeCap(ctx, p, "development", ctx.simNow());
}

const DATE = /^\d{4}-\d{2}-\d{2}$/;

function day(query: URLSearchParams, name: string): number {
  const raw = query.get(name);
  if (raw === null || raw === "") fail(400, "MISSING_DATE_RANGE", "from and to are required (YYYY-MM-DD)");
  const ms = Date.parse(`${raw}T00:00:00.000Z`);
  if (!DATE.test(raw) || Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 10) !== raw)
    fail(400, "INVALID_DATE", `${name} must be a date YYYY-MM-DD`);
  return ms;
}

/** Days are UTC; every day of the range is listed, zeros included; projectId filters without an existence check. */
function analytics(ctx: BuildContext, req: SimRequest) {
  const from = day(req.query, "from");
  const to = day(req.query, "to");
  if (from > to) fail(400, "INVALID_DATE_RANGE", "from must not be after to");
  if (to - from > MAX_RANGE_DAYS * DAY)
    fail(400, "INVALID_DATE_RANGE", `from must be at most ${MAX_RANGE_DAYS} days before to`);
  const projectId = req.query.get("projectId") || undefined;
  const l = ledger(ctx);
  const now = ctx.simNow();
  l.charges = l.charges.filter((c) => c.at >= now - RETENTION);
  const days = new Map<
    string,
    { date: string; development: number; infrastructure: number; byType: Record<string, number> }
  >();
  for (let t = from; t <= to; t += DAY) {
    const date = new Date(t).toISOString().slice(0, 10);
    days.set(date, { date, development: 0, infrastructure: 0, byType: {} });
  }
  const totals = { development: 0, infrastructure: 0, total: 0, byType: {} as Record<string, number> };
  const perProject = new Map<string, number>();
  for (const c of l.charges) {
    if (projectId && c.projectId !== projectId) continue;
    const d = days.get(new Date(c.at).toISOString().slice(0, 10));
    if (!d) continue;
    d[c.category] = round(d[c.category] + c.credits);
    d.byType[c.type] = round((d.byType[c.type] ?? 0) + c.credits);
    totals[c.category] = round(totals[c.category] + c.credits);
    totals.byType[c.type] = round((totals.byType[c.type] ?? 0) + c.credits);
    perProject.set(c.projectId, round((perProject.get(c.projectId) ?? 0) + c.credits));
  }
  totals.total = round(totals.development + totals.infrastructure);
  const projects = [...perProject.entries()]
    .filter(([, v]) => v !== 0)
    .sort((a, b) => b[1] - a[1])
    .map(([id]) => id);
  return { daily: [...days.values()], totals, projects };
}
