import type { BuildContext } from "./context.js";
import { fail, type BuildRoutes } from "./routes.js";
import { isObject, iso, given, type AgentRun, type Json, type SimProject } from "./state.js";
import { bodyOf } from "./validation.js";
import { WebhookSender, type SentAttempt, type WebhookFault } from "./webhook-sender.js";

/**
 * Account webhooks (reference §14): one subscription per event for the whole account. Every
 * delivery is recorded (BuildSimulator.webhookDeliveries()); one to an https URL on this machine
 * is also POSTed for real (webhook-sender.ts), and while such a subscription exists a timer
 * advances the projects so a run's end is delivered when it happens, not at the next read.
 * `agent.prompt.finished` is recorded when a prompt ends in any way (finished, failed, stopped, at
 * its limit), seen by an advance step; `project.credit_limit.reached` by billing.ts.
 */

export const WEBHOOK_EVENTS = ["agent.prompt.finished", "project.credit_limit.reached"] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

const MAX_DELIVERIES = 500;

interface Webhook {
  id: string;
  url: string;
  event: WebhookEvent;
  headers: Record<string, string>;
  createdAt: number;
  updatedAt: number;
}

export interface Delivery {
  webhookId: string;
  url: string;
  /** the subscription's headers, as they would be sent */
  headers: Record<string, string>;
  body: { event: WebhookEvent; timestamp: string; data: Json };
  /** Real POSTs made of it (subscriptions on this machine), with their faults and answers. */
  attempts: SentAttempt[];
}

/** Real ms between two advances while a subscription on this machine exists. */
const TICK_MS = 20;

interface Account {
  webhooks: Webhook[];
  deliveries: Delivery[];
  /** runs whose end was already seen (and delivered, when someone was subscribed) */
  endedRuns: WeakSet<AgentRun>;
  /** the run each project had at the last look, so one replaced within a pass is not missed */
  lastRun: WeakMap<SimProject, AgentRun>;
  sender: WebhookSender;
  ticker?: NodeJS.Timeout;
}

const accounts = new WeakMap<BuildContext, Account>();

function account(ctx: BuildContext): Account {
  let a = accounts.get(ctx);
  if (!a) {
    const sender = new WebhookSender(ctx.webhookCa);
    accounts.set(ctx, (a = { webhooks: [], deliveries: [], endedRuns: new WeakSet(), lastRun: new WeakMap(), sender }));
  }
  return a;
}

/** Runs the clock while someone on this machine is subscribed, so ends are delivered as they happen. */
function tick(ctx: BuildContext): void {
  const a = account(ctx);
  const wanted = a.webhooks.some((w) => WebhookSender.reaches(w.url));
  if (wanted && !a.ticker) {
    a.ticker = setInterval(() => ctx.advanceAll(), TICK_MS);
    a.ticker.unref();
  } else if (!wanted && a.ticker) {
    clearInterval(a.ticker);
    a.ticker = undefined;
  }
}

export function injectWebhookFault(ctx: BuildContext, fault: WebhookFault): void {
  account(ctx).sender.inject(fault);
}

/** Every real delivery started so far has its answer. */
export function webhooksSettled(ctx: BuildContext): Promise<void> {
  return account(ctx).sender.settled();
}

export function stopWebhooks(ctx: BuildContext): void {
  const a = accounts.get(ctx);
  if (!a) return;
  clearInterval(a.ticker);
  a.ticker = undefined;
  a.sender.close();
}

export function registerWebhookRoutes(ctx: BuildContext, routes: BuildRoutes): void {
  routes.on("PUT", "/webhooks", (req) => subscribe(ctx, bodyOf(req)));
  routes.on("GET", "/webhooks", () => ({
    webhooks: account(ctx).webhooks.map((w) => ({ ...view(w), updatedAt: iso(w.updatedAt) })),
  }));
  routes.on("DELETE", "/webhooks/:webhookId", (req) => unsubscribe(ctx, req.params.webhookId));
  ctx.onAdvance((p) => noticeEndedRuns(ctx, p));
}

const view = (w: Webhook) => ({
  id: w.id,
  url: w.url,
  headers: { ...w.headers },
  event: w.event,
  createdAt: iso(w.createdAt),
});

/**
 * Checks in the order of the reference's error list; headers that are not an object of strings:
 * INVALID_WEBHOOK_HEADERS (ours).
 */
function subscribe(ctx: BuildContext, body: Json) {
  const { url, event, headers } = body;
  if (!given(url) || url === "" || !given(event) || event === "")
    fail(400, "MISSING_WEBHOOK_FIELDS", "url and event are required");
  if (!isHttpsUrl(url)) fail(400, "INVALID_WEBHOOK_URL", "url must be an HTTPS URL");
  if (!WEBHOOK_EVENTS.includes(event as WebhookEvent)) {
    fail(400, "INVALID_WEBHOOK_EVENT", `event must be one of ${WEBHOOK_EVENTS.join(", ")}`);
  }
  if (given(headers) && (!isObject(headers) || !Object.values(headers).every((v) => typeof v === "string"))) {
    fail(400, "INVALID_WEBHOOK_HEADERS", "headers must be an object of string values");
  }
  const a = account(ctx);
  if (a.webhooks.some((w) => w.event === event)) {
    fail(
      409,
      "WEBHOOK_EVENT_ALREADY_EXISTS",
      `The account already has a webhook for ${event}; delete it first to change its URL`,
    );
  }
  const at = ctx.simNow();
  const webhook: Webhook = {
    id: ctx.newId(),
    url: url as string,
    event: event as WebhookEvent,
    headers: { ...((headers as Record<string, string>) ?? {}) },
    createdAt: at,
    updatedAt: at,
  };
  a.webhooks.push(webhook);
  tick(ctx);
  return view(webhook);
}

function unsubscribe(ctx: BuildContext, webhookId: string) {
  const a = account(ctx);
  const index = a.webhooks.findIndex((w) => w.id === webhookId);
  if (index < 0) fail(404, "WEBHOOK_NOT_FOUND", `No webhook ${webhookId} on this account`);
  a.webhooks.splice(index, 1);
  tick(ctx);
  return { success: true };
}

function isHttpsUrl(value: unknown): boolean {
  if (typeof value !== "string") return false;
  try {
    return new URL(value).protocol === "https:";
  } catch {
    return false;
  }
}

/** Records one delivery per subscription to `event` (at most one, as the account has one per event). */
export function deliver(ctx: BuildContext, event: WebhookEvent, data: Json, at: number): void {
  const a = account(ctx);
  for (const w of a.webhooks.filter((w) => w.event === event)) {
    const d: Delivery = {
      webhookId: w.id,
      url: w.url,
      headers: { ...w.headers },
      body: { event, timestamp: iso(at), data },
      attempts: [],
    };
    a.deliveries.push(d);
    a.sender.send(d);
  }
  if (a.deliveries.length > MAX_DELIVERIES) a.deliveries.splice(0, a.deliveries.length - MAX_DELIVERIES);
}

export function webhookDeliveries(ctx: BuildContext): Delivery[] {
  return account(ctx).deliveries.map((d) => structuredClone(d));
}

function noticeEndedRuns(ctx: BuildContext, p: SimProject): void {
  const a = account(ctx);
  const previous = a.lastRun.get(p);
  for (const run of previous && previous !== p.run ? [previous, p.run] : [p.run]) {
    if (!run || run.state === "running" || a.endedRuns.has(run)) continue;
    a.endedRuns.add(run);
    deliver(
      ctx,
      "agent.prompt.finished",
      { projectId: p.projectId, status: "done", prompt: run.prompt },
      run.endedAt ?? ctx.simNow(),
    );
  }
  if (p.run) a.lastRun.set(p, p.run);
}
