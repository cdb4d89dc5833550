import type { BuildContext } from "./context.js";
import { fail, type BuildRoutes } from "./routes.js";
import { DAY, HOUR, MINUTE, hash, productionHost, type Json, type SimProject } from "./state.js";

/**
 * Production request logs (reference §6): records exist from the first successful deployment on,
 * one request every 3 simulated minutes, derived from the clock (nothing is stored), kept 3 days.
 * Choices where the reference is silent:
 *   - without from/to the window is the last 24 hours; an answer holds at most 1000 records (the newest);
 *   - getOnlyLastLogs=true answers the newest 20 records as a bare array (`data` is the array);
 *     otherwise `data.records`; records are oldest first;
 *   - regexSearch is a case-insensitive regex (an invalid one is searched as plain text) over the
 *     method, URL, status, outcome, log messages and exceptions; each match comes with the record
 *     before and after it;
 *   - from/to that do not parse: 400 PROD_LOGS_WORKER_ERROR; bounds older than 3 days are clamped;
 *   - the plan's request limit is 60 requests per real minute per account (429 PLAN_LIMIT_REACHED).
 */

const STEP = 3 * MINUTE;
const RETENTION = 3 * DAY;
const DEFAULT_WINDOW = 24 * HOUR;
const MAX_RECORDS = 1000;
const LAST_LOGS = 20;
const REQUESTS_PER_MINUTE = 60;

const ROUTES: Array<[method: string, path: string, status: number]> = [
  ["GET", "/", 200],
  ["GET", "/api/products", 200],
  ["GET", "/api/products/42", 200],
  ["POST", "/api/cart", 201],
  ["GET", "/assets/app.js", 304],
  ["POST", "/api/checkout", 200],
  ["GET", "/api/health", 200],
  ["GET", "/account", 200],
];

const requests = new WeakMap<BuildContext, number[]>();

export function registerProdLogRoutes(ctx: BuildContext, routes: BuildRoutes): void {
  routes.onProject("GET", "/backend/prod/logs", (p, req) => prodLogs(ctx, p, req.query));
}

function planLimit(ctx: BuildContext): void {
  const realNow = ctx.now();
  const recent = (requests.get(ctx) ?? []).filter((t) => realNow - t < MINUTE);
  if (recent.length >= REQUESTS_PER_MINUTE)
    fail(
      429,
      "PLAN_LIMIT_REACHED",
      `The plan allows ${REQUESTS_PER_MINUTE} production-log requests per minute; wait for the limit to reset`,
    );
  recent.push(realNow);
  requests.set(ctx, recent);
}

function instant(query: URLSearchParams, name: string): number | undefined {
  const raw = query.get(name);
  if (raw === null || raw === "") return undefined;
  const ms = Date.parse(raw);
  if (Number.isNaN(ms))
    fail(400, "PROD_LOGS_WORKER_ERROR", `The log pipeline could not read ${name} (${raw}): use ISO 8601`);
  return ms;
}

function prodLogs(ctx: BuildContext, p: SimProject, query: URLSearchParams) {
  planLimit(ctx);
  const now = ctx.simNow();
  const from = instant(query, "from");
  const to = instant(query, "to");
  const onlyLast = query.get("getOnlyLastLogs") === "true";
  const start = Math.max(from ?? now - DEFAULT_WINDOW, now - RETENTION, p.lastSuccessfulDeployAt ?? Infinity);
  const end = Math.min(to ?? now, now);
  let records = p.lastSuccessfulDeployAt === null ? [] : window(p, start, end);
  const search = query.get("regexSearch");
  if (search) records = matching(records, search);
  if (onlyLast) return records.slice(-LAST_LOGS);
  return { records: records.slice(-MAX_RECORDS) };
}

function window(p: SimProject, start: number, end: number): Json[] {
  const out: Json[] = [];
  for (let t = Math.ceil(start / STEP) * STEP; t <= end && out.length < RETENTION / STEP + 1; t += STEP)
    out.push(record(p, t));
  return out;
}

/** One request at simulated time `t`, the same every time it is asked for. */
function record(p: SimProject, t: number): Json {
  const h = hash(`${p.projectId}:${t}`);
  const [method, path, okStatus] = ROUTES[h % ROUTES.length];
  const url = `https://${productionHost(p.projectId)}${path}`;
  const wall = 5 + (h % 180);
  const base = {
    EventTimestampMs: t,
    WallTimeMs: wall,
    CPUTimeMs: 1 + (h % 9),
    Event: { Request: { URL: url, Method: method }, Response: { Status: okStatus } },
  };
  if (h % 17 === 0) {
    return {
      ...base,
      Outcome: "exception",
      Event: { Request: { URL: url, Method: method }, Response: { Status: 500 } },
      Logs: [
        {
          Level: "error",
          Message: [`${method} ${path} failed`, { requestId: (h >>> 8).toString(16) }],
          TimestampMs: t + wall - 1,
        },
      ],
      Exceptions: [
        { Name: "TypeError", Message: "Cannot read properties of undefined (reading 'price')", TimestampMs: t + wall },
      ],
    };
  }
  if (h % 23 === 0)
    return {
      ...base,
      Outcome: "canceled",
      Logs: [{ Level: "warn", Message: ["Client disconnected before the response"], TimestampMs: t + wall }],
    };
  const logs =
    method === "POST"
      ? [{ Level: "info", Message: [`${path} handled`, { items: 1 + (h % 4) }], TimestampMs: t + 2 }]
      : [];
  return { ...base, Outcome: "ok", Logs: logs, Exceptions: [] };
}

function matching(records: Json[], search: string): Json[] {
  let pattern: RegExp;
  try {
    pattern = new RegExp(search, "i");
  } catch {
    pattern = new RegExp(search.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), "i");
  }
  const keep = new Set<number>();
  records.forEach((r, i) => {
    if (!pattern.test(JSON.stringify([r.Event, r.Outcome, r.Logs, r.Exceptions]))) return;
    for (const j of [i - 1, i, i + 1]) if (j >= 0 && j < records.length) keep.add(j);
  });
  return records.filter((_, i) => keep.has(i));
}
