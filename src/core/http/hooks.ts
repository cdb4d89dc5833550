import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "../base/logger.js";
import { telemetry } from "../base/telemetry.js";
import type { HookOutcome } from "../service/service.js";
import { plain } from "./guards.js";

/**
 * Webhook deliveries from an upstream (docs/deployment.md "Webhooks"): POST /hooks/<service>/<id>.
 * `<id>` names one tenant's subscription without revealing the tenant; the secret header is derived
 * from the state key and the id, so any replica checks it without a store. A delivery that passes
 * is published to every replica (HookBus) and handled there by the tenant's service: a hint, never
 * a verdict. This module knows no service: what a payload means is the service's `accepts`.
 */
export const HOOK_HEADER = "x-switchboard-hook-secret";
const HOOK_PATH = "/hooks/";
/** Upstream payloads are a few hundred bytes. */
const MAX_BODY_BYTES = 16 * 1024;
/** The same delivery again within this window is a replay (or the sender's duplicate). */
const REPLAY_WINDOW_MS = 10 * 60_000;

/** Carries accepted deliveries to every replica: Redis pub/sub, or in process. */
export interface HookBus {
  publish(channel: string, body: string): Promise<void>;
  listen(channel: string, handler: (body: string) => void): () => void;
}

/** True the first time a digest is seen within its window, across replicas when shared. */
export interface ReplayGuard {
  first(digest: string, ttlMs: number): Promise<boolean>;
}

/** One tenant's address for one service: the path id and the secret its deliveries carry. */
export function hookAddress(key: Buffer, service: string, tenantId: string): { id: string; secret: string } {
  const id = createHmac("sha256", key).update(`id\n${service}\n${tenantId}`).digest("base64url").slice(0, 22);
  return { id, secret: hookSecret(key, service, id) };
}

function hookSecret(key: Buffer, service: string, id: string): string {
  return createHmac("sha256", key).update(`secret\n${service}\n${id}`).digest("base64url");
}

export const hookChannel = (service: string, id: string) => `hook:${service}:${id}`;

interface HookPageOptions {
  key: Buffer;
  /** Each service that takes deliveries, with what it says of a payload (the envelope parsed). */
  services: ReadonlyMap<string, (body: unknown, now: number) => HookOutcome>;
  bus: HookBus;
  replays: ReplayGuard;
  logger: Logger;
  /** Deliveries accepted per second for the whole replica (a burst of twice that). */
  ratePerSec?: number;
}

/** The delivery route: answers (fast) and returns true for a path under /hooks/, false otherwise. */
export function hookPage(
  options: HookPageOptions,
): (req: IncomingMessage, res: ServerResponse, url: URL) => Promise<boolean> {
  const rate = options.ratePerSec ?? 50;
  const bucket = { tokens: rate * 2, at: Date.now() };
  const take = () => {
    const now = Date.now();
    bucket.tokens = Math.min(rate * 2, bucket.tokens + ((now - bucket.at) / 1000) * rate);
    bucket.at = now;
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    return true;
  };
  const count = (outcome: string, service?: string) => telemetry.add("webhooks", 1, { outcome, service });
  return async (req, res, url) => {
    if (!url.pathname.startsWith(HOOK_PATH)) return false;
    const [service, id, ...rest] = url.pathname.slice(HOOK_PATH.length).split("/");
    const accepts = options.services.get(service ?? "");
    if (req.method !== "POST") {
      plain(res, 405, { error: "deliveries are POSTed" }, { allow: "POST", connection: "close" });
      return true;
    }
    if (!take()) {
      count("throttled", service);
      plain(res, 429, { error: "too many deliveries" }, { "retry-after": "1", connection: "close" });
      return true;
    }
    const given = req.headers[HOOK_HEADER];
    if (
      !accepts ||
      !id ||
      rest.length ||
      typeof given !== "string" ||
      !same(given, hookSecret(options.key, service, id))
    ) {
      count("forged", service);
      plain(res, 401, { error: "unknown delivery" }, { connection: "close" });
      return true;
    }
    const body = await readBounded(req, MAX_BODY_BYTES);
    if (body === undefined) {
      count("too_large", service);
      plain(res, 413, { error: `a delivery is at most ${MAX_BODY_BYTES} bytes` }, { connection: "close" });
      return true;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      parsed = undefined;
    }
    const outcome = parsed === undefined ? "unknown" : accepts(parsed, Date.now());
    if (outcome !== "ok") {
      count(outcome, service);
      // Acknowledged: a sender retrying what we will never use gains nothing.
      plain(res, 202, { accepted: false });
      return true;
    }
    const digest = createHash("sha256").update(`${service}\n${id}\n${body}`).digest("base64url");
    const first = await options.replays.first(digest, REPLAY_WINDOW_MS).catch(() => true);
    if (!first) {
      count("replayed", service);
      plain(res, 202, { accepted: false });
      return true;
    }
    count("accepted", service);
    plain(res, 202, { accepted: true });
    await options.bus.publish(hookChannel(service, id), body).catch((err: unknown) => {
      options.logger.warn("webhook delivery not relayed to the replicas", {
        service,
        error: err instanceof Error ? err.message : String(err),
      });
    });
    return true;
  };
}

function same(a: string, b: string): boolean {
  const x = createHash("sha256").update(a).digest();
  const y = createHash("sha256").update(b).digest();
  return timingSafeEqual(x, y);
}

/** The body as text, or undefined past `max` bytes (the rest is not read; the connection closes). */
function readBounded(req: IncomingMessage, max: number): Promise<string | undefined> {
  const declared = Number(req.headers["content-length"] ?? 0);
  if (declared > max) return Promise.resolve(undefined);
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const timer = setTimeout(() => done(undefined), 5000);
    const done = (v: string | undefined) => {
      clearTimeout(timer);
      req.removeAllListeners("data");
      resolve(v);
    };
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size > max) return done(undefined);
      chunks.push(c);
    });
    req.once("end", () => done(Buffer.concat(chunks).toString("utf8")));
    req.once("error", () => done(undefined));
  });
}

/** In one process: deliveries go straight to the listeners. */
export function memoryHookBus(): HookBus {
  const listeners = new Map<string, Set<(body: string) => void>>();
  return {
    publish: async (channel, body) => {
      for (const fn of [...(listeners.get(channel) ?? [])]) fn(body);
    },
    listen: (channel, handler) => {
      const set = listeners.get(channel) ?? new Set();
      listeners.set(channel, set.add(handler));
      return () => {
        set.delete(handler);
        if (set.size === 0) listeners.delete(channel);
      };
    },
  };
}

/** In one process: digests seen within their window, at most 10,000. */
export function memoryReplayGuard(): ReplayGuard {
  const seen = new Map<string, number>();
  return {
    first: async (digest, ttlMs) => {
      const now = Date.now();
      const until = seen.get(digest);
      if (until !== undefined && until > now) return false;
      seen.delete(digest);
      seen.set(digest, now + ttlMs);
      for (const [d, t] of seen) {
        if (seen.size <= 10_000 && t > now) break;
        seen.delete(d);
      }
      return true;
    },
  };
}
