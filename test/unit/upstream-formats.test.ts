// An upstream core has not seen: the service passes how its answers are shaped (the two shapes
// seen so far are presets), and a request carries headers of its own (an Idempotency-Key) and the
// process's per-request ones (a trace context), against a real HTTP server on loopback.
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Logger } from "../../src/core/base/logger.js";
import { ByteBudget } from "../../src/core/upstream/budget.js";
import {
  DEFAULT_UPSTREAM_BODY_BUDGET,
  type ReplyFormat,
  type RequestInfo,
  UpstreamClient,
  type UpstreamOptions,
  UpstreamError,
} from "../../src/core/upstream/upstream.js";

const quiet: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

/** An invoices-like API: bare objects, `{ error: { code, message } }` on failure. */
const bareObjects: ReplyFormat = {
  failure: (json) => {
    const e = (json as { error?: { code?: string; message?: string } }).error;
    return e ? { code: e.code, message: e.message } : undefined;
  },
  data: (json) => ({ data: json }),
};

let server: Server;
let url: string;
const seen: IncomingHttpHeaders[] = [];
let flaky = 0;

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push(req.headers);
    res.setHeader("content-type", "application/json");
    if (req.url === "/invoices/inv_1") return res.end(JSON.stringify({ id: "inv_1", total: 3 }));
    if (req.url === "/flaky" && flaky++ === 0) {
      res.statusCode = 503;
      return res.end(JSON.stringify({ error: { code: "UNAVAILABLE", message: "try again" } }));
    }
    if (req.url === "/flaky") return res.end(JSON.stringify({ ok: true }));
    res.statusCode = 404;
    res.end(JSON.stringify({ error: { code: "NOT_FOUND", message: "no invoice inv_9" } }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

function client(options: Partial<UpstreamOptions>): UpstreamClient {
  return new UpstreamClient({
    service: "invoices",
    baseUrl: url,
    headers: { authorization: "Bearer the-key" },
    envelope: bareObjects,
    timeoutMs: 2000,
    logger: quiet,
    keyVariable: "INVOICES_API_KEY",
    maxRetryAfterMs: 10,
    bodyBudget: new ByteBudget(DEFAULT_UPSTREAM_BODY_BUDGET),
    ...options,
  });
}

describe("an upstream with its own reply format", () => {
  it("reads a bare object, and the failure in its own shape", async () => {
    const c = client({});
    try {
      expect(await c.request({ method: "GET", path: "/invoices/inv_1" })).toEqual({ id: "inv_1", total: 3 });
      const err = await c.request({ method: "GET", path: "/invoices/inv_9" }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(UpstreamError);
      expect(err).toMatchObject({ status: 404, code: "NOT_FOUND", message: "no invoice inv_9" });
    } finally {
      await c.close();
    }
  });

  it("the presets keep their shapes: a bare object is not an ok-data answer", async () => {
    const c = client({ envelope: "ok-data" });
    try {
      const err = await c.request({ method: "GET", path: "/invoices/inv_1" }).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: "NON_JSON_RESPONSE" });
    } finally {
      await c.close();
    }
  });
});

describe("headers of one request", () => {
  it("sends a request's own headers, never in place of the client's key", async () => {
    const c = client({});
    try {
      seen.length = 0;
      await c.request({
        method: "GET",
        path: "/invoices/inv_1",
        headers: { "idempotency-key": "idem-1", authorization: "Bearer another-key" },
      });
      expect(seen[0]).toMatchObject({ "idempotency-key": "idem-1", authorization: "Bearer the-key" });
    } finally {
      await c.close();
    }
  });

  it("asks the process's hook at every attempt, with the request it is for", async () => {
    const asked: RequestInfo[] = [];
    const c = client({
      headersFor: (request) => {
        asked.push(request);
        return { traceparent: `00-${String(asked.length).padStart(32, "0")}-00f067aa0ba902b7-01` };
      },
    });
    try {
      seen.length = 0;
      flaky = 0;
      await c.request({ method: "GET", path: "/flaky" });
      expect(asked).toEqual([
        { method: "GET", path: "/flaky", idempotent: true },
        { method: "GET", path: "/flaky", idempotent: true },
      ]);
      expect(seen.map((h) => h.traceparent)).toEqual([
        `00-${"1".padStart(32, "0")}-00f067aa0ba902b7-01`,
        `00-${"2".padStart(32, "0")}-00f067aa0ba902b7-01`,
      ]);
    } finally {
      await c.close();
    }
  });
});
