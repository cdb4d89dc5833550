import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import {
  ALERTS,
  API_KEYS,
  CITIES,
  DronesSimulator,
  FLEET,
  MISSIONS,
} from "../../src/sandbox/simulators/drones/index.js";

const KEY = "dfk_live_test_key";
const servers: Server[] = [];

afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

async function start() {
  const sim = new DronesSimulator({ apiKey: KEY });
  const server = createServer((req, res) => void sim.router.handle(req, res, req.url!));
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  async function call(method: string, path: string, body?: unknown, key: string | null = KEY) {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (key !== null) headers.authorization = `Bearer ${key}`;
    const payload = body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body);
    const res = await fetch(base + path, { method, headers, body: payload });
    return { status: res.status, json: (await res.json()) as any };
  }
  return { sim, call };
}

describe("drones simulator: seed data", () => {
  it("is a deterministic fleet around real cities with some low batteries", () => {
    expect(FLEET).toHaveLength(36);
    expect(new Set(FLEET.map((d) => d._id)).size).toBe(36);
    expect(new Set(FLEET.map((d) => d.name)).size).toBe(36);
    for (const d of FLEET) {
      expect(d._id).toMatch(/^[0-9a-f]{24}$/);
      expect(d.battery_level).toBeGreaterThanOrEqual(0);
      expect(d.battery_level).toBeLessThanOrEqual(100);
      const city = Object.values(CITIES).find(
        (c) => Math.abs(c.latitude - d.latitude) < 0.1 && Math.abs(c.longitude - d.longitude) < 0.1,
      );
      expect(city, d.name).toBeDefined();
    }
    expect(FLEET.filter((d) => d.battery_level < 20).map((d) => d.name)).toEqual([
      "Falcon-04",
      "Falcon-07",
      "Falcon-09",
      "Heron-03",
      "Kestrel-02",
      "Kestrel-08",
      "Osprey-01",
      "Osprey-05",
    ]);
  });

  it("references only known drones and missions", () => {
    const droneIds = new Set(FLEET.map((d) => d._id));
    const missionIds = new Set(MISSIONS.map((m) => m._id));
    expect(MISSIONS.every((m) => droneIds.has(m.drone_id))).toBe(true);
    expect(ALERTS.every((a) => droneIds.has(a.drone_id))).toBe(true);
    expect(ALERTS.every((a) => a.mission_id === undefined || missionIds.has(a.mission_id))).toBe(true);
  });
});

describe("drones simulator: API", () => {
  it("rejects missing and wrong keys with 401", async () => {
    const { call } = await start();
    for (const key of [null, "dfk_live_wrong"]) {
      const res = await call("GET", "/api/drones", undefined, key);
      expect(res.status).toBe(401);
      expect(res.json).toEqual({ ok: false, error: { code: "UNAUTHORIZED", message: "Invalid or missing API key" } });
    }
    expect((await call("PUT", `/api/alerts/${ALERTS[0]._id}`, "{oops", "nope")).status).toBe(401);
  });

  it("lists and gets drones, with 404 for unknown ids", async () => {
    const { sim, call } = await start();
    const list = await call("GET", "/api/drones");
    expect(list.status).toBe(200);
    expect(list.json).toEqual({ ok: true, data: FLEET });
    expect(sim.drones()).toEqual(FLEET);

    const one = await call("GET", `/api/drones/${FLEET[6]._id}`);
    expect(one.json).toEqual({ ok: true, data: FLEET[6] });
    expect(one.json.data).toHaveProperty("model");
    expect(one.json.data).toHaveProperty("last_seen");

    const missing = await call("GET", "/api/drones/ffffffffffffffffffffffff");
    expect(missing.status).toBe(404);
    expect(missing.json.ok).toBe(false);
    expect(missing.json.error.code).toBe("NOT_FOUND");
  });

  it("lists and gets missions and alerts", async () => {
    const { call } = await start();
    expect((await call("GET", "/api/missions")).json.data).toEqual(MISSIONS);
    expect((await call("GET", `/api/missions/${MISSIONS[2]._id}`)).json.data).toEqual(MISSIONS[2]);
    expect((await call("GET", "/api/missions/nope")).status).toBe(404);
    expect((await call("GET", "/api/alerts")).json.data).toEqual(ALERTS);
    expect((await call("GET", `/api/alerts/${ALERTS[3]._id}`)).json.data).toEqual(ALERTS[3]);
    expect((await call("GET", "/api/alerts/nope")).status).toBe(404);
  });

  it("updates an alert and shows the change on the next read", async () => {
    const { call } = await start();
    const target = ALERTS.find((a) => a.status === "open")!;
    const res = await call("PUT", `/api/alerts/${target._id}`, {
      status: "acknowledged",
      note: "on it",
      _id: "hijack",
    });
    expect(res.status).toBe(200);
    expect(res.json.data).toMatchObject({
      _id: target._id,
      status: "acknowledged",
      note: "on it",
      message: target.message,
    });
    expect(Date.parse(res.json.data.updated_at)).toBeGreaterThan(Date.parse(target.updated_at));

    const again = await call("GET", `/api/alerts/${target._id}`);
    expect(again.json.data).toEqual(res.json.data);
    const listed = (await call("GET", "/api/alerts")).json.data.find((a: { _id: string }) => a._id === target._id);
    expect(listed.status).toBe("acknowledged");
    // Seed constants stay untouched; a fresh simulator starts from them.
    expect(target.status).toBe("open");
  });

  it("rejects invalid alert updates", async () => {
    const { call } = await start();
    const id = ALERTS[0]._id;
    const badStatus = await call("PUT", `/api/alerts/${id}`, { status: "closed" });
    expect(badStatus.status).toBe(400);
    expect(badStatus.json.error.code).toBe("VALIDATION_ERROR");
    expect(badStatus.json.error.message).toMatch(/status/);

    for (const body of [[1], "42", undefined]) {
      const res = await call("PUT", `/api/alerts/${id}`, body);
      expect(res.status).toBe(400);
      expect(res.json.error.code).toBe("VALIDATION_ERROR");
    }
    const bad = await call("PUT", `/api/alerts/${id}`, "{oops");
    expect(bad.status).toBe(400);
    expect(bad.json.error.code).toBe("INVALID_JSON");
    expect((await call("PUT", "/api/alerts/nope", { status: "resolved" })).status).toBe(404);
    expect((await call("GET", `/api/alerts/${id}`)).json.data).toEqual(ALERTS[0]);
  });

  it("lists API keys with full live-prefixed values and a nested webhook secret", async () => {
    const { call } = await start();
    const res = await call("GET", "/api/api-keys");
    expect(res.json).toEqual({ ok: true, data: API_KEYS });
    for (const key of res.json.data) expect(key.key).toMatch(/^dfk_live_[A-Za-z0-9]{32}$/);
    expect(
      res.json.data.some((k: { webhook?: { signing_secret: string } }) =>
        k.webhook?.signing_secret.startsWith("whsec_"),
      ),
    ).toBe(true);
  });
});
