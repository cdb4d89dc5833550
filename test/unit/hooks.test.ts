// The webhook delivery route (core/http/hooks.ts) on a real listener: the secret header, the body
// bound, replays, payloads the service does not know, the rate, and what reaches the bus.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createLogger } from "../../src/core/base/logger.js";
import { Egress } from "../../src/core/base/egress.js";
import { HOOK_HEADER, hookAddress, hookPage, memoryHookBus, memoryReplayGuard } from "../../src/core/http/hooks.js";
import { acceptsDelivery } from "../../src/services/builder/webhook-payload.js";

const KEY = Buffer.alloc(32, 7);

describe("POST /hooks/<service>/<id>", () => {
  let server: Server;
  let base: string;
  let heard: string[];
  const { id, secret } = hookAddress(KEY, "build", "t_tenant");
  const body = (projectId = "p1", timestamp = new Date().toISOString()) =>
    JSON.stringify({ event: "agent.prompt.finished", timestamp, data: { projectId, status: "done", prompt: "x" } });
  const post = (payload: string, headers: Record<string, string> = { [HOOK_HEADER]: secret }, path = id) =>
    fetch(`${base}/hooks/build/${path}`, { method: "POST", headers, body: payload });

  const listen = async (ratePerSec: number) => {
    heard = [];
    const bus = memoryHookBus();
    bus.listen(`hook:build:${id}`, (b) => heard.push(b));
    const page = hookPage({
      key: KEY,
      services: new Map([["build", acceptsDelivery]]),
      bus,
      replays: memoryReplayGuard(),
      logger: createLogger("error", new Egress()),
      ratePerSec,
    });
    server = createServer((req, res) => {
      void page(req, res, new URL(req.url ?? "/", "http://localhost")).then((handled) => {
        if (!handled) res.writeHead(404).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  };
  beforeEach(() => listen(1000));
  afterEach(() => new Promise<void>((r) => server.close(() => r())));

  it("accepts a delivery with the tenant's secret once and publishes it; the same again is a replay", async () => {
    const payload = body();
    const first = await post(payload);
    expect(first.status).toBe(202);
    expect(await first.json()).toEqual({ accepted: true });
    expect(heard).toEqual([payload]);
    const again = await post(payload);
    expect(again.status).toBe(202);
    expect(await again.json()).toEqual({ accepted: false });
    expect(heard).toEqual([payload]);
  });

  it("refuses a missing or wrong secret, another tenant's id, and an unknown service: nothing published", async () => {
    expect((await post(body(), {})).status).toBe(401);
    expect((await post(body(), { [HOOK_HEADER]: `${secret}x` })).status).toBe(401);
    const other = hookAddress(KEY, "build", "t_other");
    expect((await post(body(), { [HOOK_HEADER]: secret }, other.id)).status).toBe(401);
    const wrongService = await fetch(`${base}/hooks/drones/${id}`, {
      method: "POST",
      headers: { [HOOK_HEADER]: secret },
      body: body(),
    });
    expect(wrongService.status).toBe(401);
    expect(heard).toEqual([]);
  });

  it("ignores payloads the service does not know and stale ones; bounds the body", async () => {
    expect(await (await post('{"event":"something.else"}')).json()).toEqual({ accepted: false });
    expect(await (await post("not json")).json()).toEqual({ accepted: false });
    const old = body("p2", new Date(Date.now() - 2 * 3600_000).toISOString());
    expect(await (await post(old)).json()).toEqual({ accepted: false });
    expect((await post("x".repeat(17 * 1024))).status).toBe(413);
    expect(heard).toEqual([]);
  });

  it("answers 429 past its rate, before reading the body", async () => {
    await new Promise<void>((r) => server.close(() => r()));
    await listen(1); // a burst of 2, then one a second
    const answers = await Promise.all(Array.from({ length: 14 }, (_, i) => post(body(`p${i}`))));
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(0);
    // The burst, plus one a second for however long the 14 requests took (well under 5 s).
    expect(statuses.filter((s) => s === 202).length).toBeLessThanOrEqual(7);
  });
});
