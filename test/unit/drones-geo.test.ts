import { describe, expect, it } from "vitest";
import { fleetSummary, matchesDrone, matchesFields, paginate } from "../../src/services/drones/fleet.js";
import { boundingBox, EARTH_RADIUS_KM, haversineKm, nearestTo } from "../../src/services/drones/geo.js";
import { isSecretField, looksLikeSecret, maskSecret, maskSecrets } from "../../src/services/drones/mask.js";
import { API_KEYS, FLEET } from "../../src/sandbox/simulators/drones/index.js";

const MADRID = { latitude: 40.4168, longitude: -3.7038 };
const BARCELONA = { latitude: 41.3874, longitude: 2.1686 };
const LONDON = { latitude: 51.5074, longitude: -0.1278 };
const PARIS = { latitude: 48.8566, longitude: 2.3522 };

describe("haversine", () => {
  it("uses the mean Earth radius", () => {
    expect(EARTH_RADIUS_KM).toBe(6371.0088);
  });

  it("measures known city pairs", () => {
    expect(Math.abs(haversineKm(MADRID, BARCELONA) - 505)).toBeLessThanOrEqual(3);
    expect(Math.abs(haversineKm(LONDON, PARIS) - 344)).toBeLessThanOrEqual(3);
  });

  it("is symmetric, zero for one point, and half the circumference for antipodes", () => {
    expect(haversineKm(MADRID, BARCELONA)).toBeCloseTo(haversineKm(BARCELONA, MADRID), 9);
    expect(haversineKm(PARIS, PARIS)).toBe(0);
    expect(haversineKm({ latitude: 0, longitude: 0 }, { latitude: 0, longitude: 180 })).toBeCloseTo(
      Math.PI * EARTH_RADIUS_KM,
      6,
    );
  });
});

describe("nearest and bounding box", () => {
  it("orders by distance, skips drones without a position, honours limit and max distance", () => {
    const items = [
      { _id: "bcn", ...BARCELONA },
      { _id: "lon", ...LONDON },
      { _id: "nowhere", latitude: undefined, longitude: 3 },
      { _id: "bad", latitude: 95, longitude: 3 },
      { _id: "mad", latitude: 40.42, longitude: -3.7 },
    ];
    const near = nearestTo(MADRID, items, 2);
    expect(near.map((d) => d._id)).toEqual(["mad", "bcn"]);
    expect(near[0].distanceKm).toBeLessThan(1);
    expect(nearestTo(MADRID, items, 10, 600).map((d) => d._id)).toEqual(["mad", "bcn"]);
  });

  it("boxes every point", () => {
    expect(boundingBox([MADRID, LONDON, BARCELONA])).toEqual({
      minLatitude: 40.4168,
      maxLatitude: 51.5074,
      minLongitude: -3.7038,
      maxLongitude: 2.1686,
    });
    expect(boundingBox([])).toBeNull();
  });
});

describe("fleet summary and filters", () => {
  it("summarises the sandbox fleet", () => {
    const s = fleetSummary(FLEET as never, 20);
    expect(s.totalDrones).toBe(36);
    expect(Object.values(s.byStatus).reduce((a, b) => a + b, 0)).toBe(36);
    expect(s.lowBattery.map((d) => d.name).sort()).toEqual([
      "Falcon-04",
      "Falcon-07",
      "Falcon-09",
      "Heron-03",
      "Kestrel-02",
      "Kestrel-08",
      "Osprey-01",
      "Osprey-05",
    ]);
    expect(s.lowBattery[0].battery_level).toBe(3);
    const avg = FLEET.reduce((a, d) => a + d.battery_level, 0) / FLEET.length;
    expect(s.averageBatteryPercent).toBeCloseTo(avg, 1);
    expect(s.boundingBox!.minLatitude).toBe(Math.min(...FLEET.map((d) => d.latitude)));
    expect(s.boundingBox!.maxLongitude).toBe(Math.max(...FLEET.map((d) => d.longitude)));
  });

  it("counts missing status as unknown and missing data apart", () => {
    const s = fleetSummary([{ _id: "a" }, { _id: "b", status: "idle", battery_level: 10, latitude: 1, longitude: 2 }]);
    expect(s.byStatus).toEqual({ unknown: 1, idle: 1 });
    expect(s.dronesWithoutBattery).toBe(1);
    expect(s.dronesWithoutPosition).toBe(1);
    expect(s.averageBatteryPercent).toBe(10);
  });

  it("filters by status and battery range", () => {
    const d = { _id: "x", status: "in_progress", battery_level: 40 };
    expect(matchesDrone(d, { status: "In progress", minBattery: 40, maxBattery: 40 })).toBe(true);
    expect(matchesDrone(d, { minBattery: 41 })).toBe(false);
    expect(matchesDrone({ _id: "y" }, { maxBattery: 100 })).toBe(false);
    expect(matchesFields({ severity: "critical", status: "open" }, { severity: "CRITICAL", status: undefined })).toBe(
      true,
    );
  });

  it("pages", () => {
    const p = paginate([1, 2, 3, 4, 5], 1, 2);
    expect(p).toEqual({ items: [2, 3], matched: 5, offset: 1, count: 2, omitted: 3, nextOffset: 3 });
    expect(paginate([1, 2], 0, 50).nextOffset).toBeUndefined();
  });
});

describe("masking", () => {
  it("keeps a known prefix and the last four characters", () => {
    expect(maskSecret("dfk_live_7Hq2mZ9xR4tLw8vN3bK6cP1sD5fG0jYa")).toBe("dfk_live_…0jYa");
    expect(maskSecret("whsec_9fK2pL7qX4mN8rT1vB6cZ3wY5sH0dJ2g")).toBe("whsec_…dJ2g");
    expect(maskSecret("abcdefghijklmnopqrstuvwxyz")).toBe("abcd…wxyz");
    expect(maskSecret("short")).toBe("****");
    expect(maskSecret("Bearer abcdefghijklmnopqrstuvwxyz")).toBe("Bearer abcd…wxyz");
    expect(maskSecret("dfk_live_…0jYa")).toBe("dfk_live_…0jYa");
  });

  it("masks nested secrets by field name and by shape, and leaves the rest alone", () => {
    const input = {
      _id: "665f4f5da06b7e4d00000003",
      name: "Ops dashboard webhook",
      key: "dfk_live_Vb3Nm7Kl1Jh5Gf9Ds2Aq6We0Rt4Yu8Io",
      scopes: ["alerts:read", "alerts:write"],
      created_at: "2025-04-11T09:05:00.000Z",
      webhook: {
        url: "https://ops.example.com/hooks/drone-fleet?token=abcdefghijklmnop1234",
        signing_secret: "whsec_9fK2pL7qX4mN8rT1vB6cZ3wY5sH0dJ2g",
        events: ["alert.created"],
      },
      extra: [{ note: "rotated", previous: "dfk_live_Qw8Er4Ty2Ui6Op0As3Df7Gh1Jk5Lz9Xc" }],
      clientSecret: "plain-words-secret",
      accessToken: "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA",
      credentials: { user: "ops", pass: "hunter2hunter2hunter2" },
      refs: { opaque: "Ab3dEf6hIj9kLm2nOp5qRs8tUv" },
    };
    const { value, masked } = maskSecrets(input);
    expect(value.key).toBe("dfk_live_…u8Io");
    expect(value.webhook.signing_secret).toBe("whsec_…dJ2g");
    expect(value.webhook.url).toBe("https://ops.example.com/hooks/drone-fleet?token=abcd…1234");
    expect(value.extra[0].previous).toBe("dfk_live_…z9Xc");
    expect(value.extra[0].note).toBe("rotated");
    expect(value.clientSecret).toBe("plai…cret");
    expect(value.accessToken).toBe("Zm9v…g5MA");
    expect(value.credentials).toEqual({ user: "****", pass: "hunt…ter2" });
    expect(value.refs.opaque).toBe("Ab3d…8tUv");
    expect(value._id).toBe(input._id);
    expect(value.name).toBe(input.name);
    expect(value.scopes).toEqual(input.scopes);
    expect(value.created_at).toBe(input.created_at);
    expect(value.webhook.events).toEqual(["alert.created"]);
    expect(masked).toBe(9);
    expect(JSON.stringify(value)).not.toMatch(
      /Vb3Nm7Kl1Jh5Gf9Ds2Aq6We0Rt4|9fK2pL7qX4mN8rT1vB6cZ3wY5sH0|hunter2hunter2hunter2/,
    );
  });

  it("masks every secret of the sandbox key listing", () => {
    const { value } = maskSecrets(API_KEYS);
    const text = JSON.stringify(value);
    for (const k of API_KEYS) {
      expect(text).not.toContain(k.key);
      if (k.webhook) expect(text).not.toContain(k.webhook.signing_secret);
    }
    expect(value.map((k) => k._id)).toEqual(API_KEYS.map((k) => k._id));
  });

  it("recognises secret names and shapes", () => {
    for (const name of [
      "key",
      "secret",
      "token",
      "signing_secret",
      "api_key",
      "apiKey",
      "accessToken",
      "password",
      "client_secret",
    ])
      expect(isSecretField(name), name).toBe(true);
    for (const name of ["name", "monkey", "key_id", "token_type", "scopes", "_id", "keyword"])
      expect(isSecretField(name), name).toBe(false);
    expect(looksLikeSecret("665f4f5da06b7e4d00000003", "_id")).toBe(false);
    expect(looksLikeSecret("3f2b8c1e-9d4a-4b7e-8f00-1a2b3c4d5e6f")).toBe(false);
    expect(looksLikeSecret("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig")).toBe(true);
    expect(looksLikeSecret("sk_live_51HxYzAbCdEf")).toBe(true);
  });
});
