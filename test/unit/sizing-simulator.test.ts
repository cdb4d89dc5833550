import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import {
  CATALOG,
  PLAN_LIMITS,
  SizingSimulator,
  type CatalogItem,
  type SizingSimulatorOptions,
} from "../../src/sandbox/simulators/sizing/index.js";

const KEY = "sz_test_key";
const servers: Server[] = [];

afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

async function start(options: Partial<SizingSimulatorOptions> = {}) {
  const sim = new SizingSimulator({ apiKey: KEY, ...options });
  const server = createServer((req, res) => void sim.router.handle(req, res, req.url!));
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  async function call(method: string, path: string, body?: unknown, key: string | null = KEY) {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (key !== null) headers.authorization = `Bearer ${key}`;
    const payload = body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body);
    const res = await fetch(base + path, { method, headers, body: payload });
    return { status: res.status, headers: res.headers, json: (await res.json()) as any };
  }
  return { sim, call };
}

function item(name: string): CatalogItem {
  const found = CATALOG.find((i) => i.name === name);
  if (!found) throw new Error(`no catalog item ${name}`);
  return found;
}

const tee = item("Heavyweight Crew Tee"); // unisex XS–XL
const chino = item("Slim Stretch Chino"); // waist/hips only, numeric sizes
const centre = ([lo, hi]: [number, number]) => (lo + hi) / 2;

describe("sizing simulator: auth and catalog", () => {
  it("rejects missing and wrong keys with 401 before anything else", async () => {
    const { call } = await start();
    for (const key of [null, "wrong"]) {
      const res = await call("GET", "/api/retailer/catalog", undefined, key);
      expect(res.status).toBe(401);
      expect(res.json).toEqual({ ok: false, error: { code: "UNAUTHORIZED", message: "Invalid or missing API key" } });
    }
    const badJson = await call("POST", "/api/retailer/recommend", "{not json", "wrong");
    expect(badJson.status).toBe(401);
  });

  it("answers invalid JSON and unknown routes with the error envelope", async () => {
    const { call } = await start();
    const bad = await call("POST", "/api/retailer/recommend", "{not json");
    expect(bad.status).toBe(400);
    expect(bad.json.error.code).toBe("INVALID_JSON");
    const missing = await call("GET", "/api/retailer/nothing");
    expect(missing.status).toBe(404);
    expect(missing.json.error.code).toBe("NOT_FOUND");
  });

  it("lists the whole catalog with realistic, contiguous size charts", async () => {
    const { call } = await start();
    const res = await call("GET", "/api/retailer/catalog");
    expect(res.status).toBe(200);
    expect(res.json.ok).toBe(true);
    expect(res.json.data).toEqual(CATALOG);
    for (const it of CATALOG) {
      expect(it._id).toMatch(/^[0-9a-f]{24}$/);
      const sizes = it.available_sizes.split(",");
      expect(Object.keys(it.size_chart)).toEqual(sizes);
      for (let i = 1; i < sizes.length; i++) {
        const prev = it.size_chart[sizes[i - 1]];
        const cur = it.size_chart[sizes[i]];
        for (const m of ["chest", "waist", "hips"] as const) {
          if (cur[m]) expect(cur[m]![0]).toBe(prev[m]![1]);
        }
      }
    }
  });

  it("filters by category and gender, case-insensitively and exactly", async () => {
    const { call } = await start();
    const res = await call("GET", "/api/retailer/catalog?category=TOPS&gender=Unisex");
    const expected = CATALOG.filter((i) => i.category === "tops" && i.gender === "unisex");
    expect(expected.length).toBeGreaterThan(0);
    expect(res.json.data).toEqual(expected);

    const pants = await call("GET", "/api/retailer/catalog?category=pants");
    expect(pants.json.data.map((i: CatalogItem) => i._id)).toEqual(
      CATALOG.filter((i) => i.category === "pants").map((i) => i._id),
    );
    const partial = await call("GET", "/api/retailer/catalog?category=top");
    expect(partial.json.data).toEqual([]);
  });
});

describe("sizing simulator: recommend", () => {
  it("recommends the size whose ranges contain centred measurements", async () => {
    const { call } = await start();
    const m = tee.size_chart.M;
    const res = await call("POST", "/api/retailer/recommend", {
      clothing_item_id: tee._id,
      measurements: {
        chest: centre(m.chest!),
        waist: centre(m.waist!),
        hips: centre(m.hips!),
        height: 178,
        weight: 75,
      },
    });
    expect(res.status).toBe(200);
    const data = res.json.data;
    expect(data.recommended_size).toBe("M");
    expect(data.confidence_score).toBeGreaterThanOrEqual(0.9);
    expect(data.confidence_score).toBeLessThanOrEqual(1);
    expect(["S", "L"]).toContain(data.alternative_size);
    expect(data.size_breakdown).toEqual({ chest_fit: "comfortable", waist_fit: "comfortable", overall: "comfortable" });
    expect(data.fit_notes).toContain(`Chest ${centre(m.chest!)} cm sits in the middle of M`);
    expect(data.fit_notes).toMatch(/height and weight are not part/i);
  });

  it("leans the alternative toward the side the measurements lean and lowers confidence", async () => {
    const { call } = await start();
    const [lo, hi] = tee.size_chart.M.chest!;
    const res = await call("POST", "/api/retailer/recommend", {
      clothing_item_id: tee._id,
      measurements: { chest: hi - 1 },
    });
    const data = res.json.data;
    expect(data.recommended_size).toBe("M");
    expect(data.alternative_size).toBe("L");
    expect(data.confidence_score).toBeGreaterThan(0);
    expect(data.confidence_score).toBeLessThan(0.9);
    expect(data.size_breakdown).toEqual({ chest_fit: "snug", waist_fit: "n/a", overall: "snug" });
    expect(data.fit_notes).toContain(`near the top of M (${lo}–${hi} cm)`);
    expect(data.fit_notes).toContain("L is the alternative if you prefer room");
  });

  it("handles charts without chest (pants) and numeric sizes", async () => {
    const { call } = await start();
    const res = await call("POST", "/api/retailer/recommend", {
      clothing_item_id: chino._id,
      measurements: { waist: centre(chino.size_chart["32"].waist!), hips: centre(chino.size_chart["32"].hips!) },
    });
    expect(res.json.data.recommended_size).toBe("32");
    expect(res.json.data.size_breakdown.chest_fit).toBe("n/a");

    const chestOnly = await call("POST", "/api/retailer/recommend", {
      clothing_item_id: chino._id,
      measurements: { chest: 100 },
    });
    expect(chestOnly.status).toBe(400);
    expect(chestOnly.json.error.code).toBe("VALIDATION_ERROR");
    expect(chestOnly.json.error.message).toMatch(/waist, hips/);
  });

  it("picks the best compromise when no size contains every measurement", async () => {
    const { call } = await start();
    const res = await call("POST", "/api/retailer/recommend", {
      clothing_item_id: tee._id,
      measurements: { chest: 96, waist: 95, hips: 115 }, // M chest, XL waist/hips
    });
    expect(res.json.data.recommended_size).toBe("XL");
    expect(res.json.data.confidence_score).toBeLessThan(0.5);
  });

  it("nudges slim toward the smaller and relaxed toward the larger of two close sizes", async () => {
    const { call } = await start();
    const [lo, hi] = tee.size_chart.M.chest!;
    const ask = async (chest: number, preferred_fit?: string) =>
      (
        await call("POST", "/api/retailer/recommend", {
          clothing_item_id: tee._id,
          measurements: { chest },
          preferred_fit,
        })
      ).json.data;

    expect((await ask(lo + 0.5)).recommended_size).toBe("M");
    const slim = await ask(lo + 0.5, "slim");
    expect(slim.recommended_size).toBe("S");
    expect(slim.alternative_size).toBe("M");
    expect(slim.fit_notes).toContain("slim fit");

    expect((await ask(hi - 0.5)).recommended_size).toBe("M");
    expect((await ask(hi - 0.5, "relaxed")).recommended_size).toBe("L");
    expect((await ask(hi - 0.5, "slim")).recommended_size).toBe("M");
    // A centred measurement is not far enough toward either neighbour to move.
    expect((await ask(centre([lo, hi]), "relaxed")).recommended_size).toBe("M");
    expect((await ask(centre([lo, hi]), "slim")).recommended_size).toBe("M");
  });

  it("rejects invalid input with VALIDATION_ERROR naming the field", async () => {
    const { call } = await start();
    const cases: Array<[unknown, RegExp]> = [
      [{ clothing_item_id: tee._id, measurements: { chest: "96" } }, /measurements\.chest/],
      [{ clothing_item_id: tee._id, measurements: { waist: -3 } }, /measurements\.waist/],
      [{ clothing_item_id: tee._id, measurements: { bust: 90 } }, /measurements\.bust/],
      [{ clothing_item_id: tee._id }, /measurements/],
      [{ measurements: { chest: 96 } }, /clothing_item_id/],
      [{ clothing_item_id: tee._id, measurements: { chest: 96 }, preferred_fit: "baggy" }, /preferred_fit/],
      [[1, 2], /JSON object/],
    ];
    for (const [body, message] of cases) {
      const res = await call("POST", "/api/retailer/recommend", body);
      expect(res.status).toBe(400);
      expect(res.json.ok).toBe(false);
      expect(res.json.error.code).toBe("VALIDATION_ERROR");
      expect(res.json.error.message).toMatch(message);
    }
  });

  it("returns 404 NOT_FOUND for an unknown item", async () => {
    const { call } = await start();
    const res = await call("POST", "/api/retailer/recommend", {
      clothing_item_id: "0".repeat(24),
      measurements: { chest: 96 },
    });
    expect(res.status).toBe(404);
    expect(res.json.error.code).toBe("NOT_FOUND");
  });
});

describe("sizing simulator: try-on", () => {
  it("stores the session and returns it", async () => {
    const { sim, call } = await start();
    const res = await call("POST", "/api/retailer/try-on", {
      clothing_item_id: tee._id,
      user_id: "cust-42",
      measurements: { chest: 96, waist: 82, hips: 100 },
    });
    expect(res.status).toBe(200);
    const session = res.json.data;
    expect(session).toMatchObject({ user_id: "cust-42", clothing_item_id: tee._id, recommended_size: "M" });
    expect(typeof session.session_id).toBe("string");
    expect(new Date(session.created_at).toISOString()).toBe(session.created_at);
    expect(sim.sessions()).toEqual([session]);
  });

  it("requires a user_id", async () => {
    const { sim, call } = await start();
    const res = await call("POST", "/api/retailer/try-on", {
      clothing_item_id: tee._id,
      user_id: "",
      measurements: { chest: 96 },
    });
    expect(res.status).toBe(400);
    expect(res.json.error.message).toMatch(/user_id/);
    expect(sim.sessions()).toHaveLength(0);
  });
});

describe("sizing simulator: plan limits", () => {
  it("rate-limits per minute on the free plan with Retry-After", async () => {
    let now = Date.parse("2025-06-14T10:00:00Z");
    const { sim, call } = await start({ now: () => now });
    sim.setPlan("free");
    const limit = PLAN_LIMITS.free.requestsPerMinute;
    for (let i = 0; i < limit; i++) expect((await call("GET", "/api/retailer/catalog")).status).toBe(200);

    now += 15_000;
    const limited = await call("GET", "/api/retailer/catalog");
    expect(limited.status).toBe(429);
    expect(limited.json.error.code).toBe("RATE_LIMITED");
    expect(limited.headers.get("retry-after")).toBe("45");

    now += 45_000;
    expect((await call("GET", "/api/retailer/catalog")).status).toBe(200);
  });

  it("professional plan (the default) allows more than the free limit", async () => {
    const { call } = await start({ now: () => 0 });
    for (let i = 0; i <= PLAN_LIMITS.free.requestsPerMinute; i++) {
      expect((await call("GET", "/api/retailer/catalog")).status).toBe(200);
    }
  });

  it("stops try-ons at the monthly limit and resets next month", async () => {
    let now = Date.parse("2025-06-01T00:00:00Z");
    const { sim, call } = await start({ plan: "free", now: () => now });
    const tryOn = () =>
      call("POST", "/api/retailer/try-on", { clothing_item_id: tee._id, user_id: "u1", measurements: { chest: 96 } });
    const limit = PLAN_LIMITS.free.tryOnsPerMonth;
    for (let i = 0; i < limit; i++) {
      now += 2_000; // stay under the per-minute limit
      expect((await tryOn()).status).toBe(200);
    }
    now += 2_000;
    const refused = await tryOn();
    expect(refused.status).toBe(429);
    expect(refused.json.error.code).toBe("TRY_ON_LIMIT_REACHED");
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(sim.sessions()).toHaveLength(limit);

    now = Date.parse("2025-07-01T00:00:00Z");
    expect((await tryOn()).status).toBe(200);
  });
});
