import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Client } from "@modelcontextprotocol/client";
import type { Sandbox } from "../../src/sandbox/index.js";
import {
  ALERTS,
  API_KEYS,
  CITIES,
  FLEET,
  LIVE_KEY_PREFIX,
  MISSIONS,
  type Drone,
} from "../../src/sandbox/simulators/drones/index.js";
import {
  call,
  connectHttp,
  connectStdio,
  ok,
  sandboxEnv,
  spawnHttpServer,
  testSandbox,
  text,
  type HttpServerProcess,
  type StdioConnection,
} from "../harness.js";

/** The JSON body of a text resource content (fails on a blob). */
function body(content: { text: string } | { blob: string }): unknown {
  if (!("text" in content)) throw new Error("expected a text resource");
  return JSON.parse(content.text);
}

const DRONE_TOOLS = [
  "drones_list_drones",
  "drones_get_drone",
  "drones_list_missions",
  "drones_get_mission",
  "drones_list_alerts",
  "drones_get_alert",
  "drones_update_alert",
  "drones_list_api_keys",
  "drones_fleet_summary",
  "drones_find_nearest",
];

/** The test's own great-circle distance (haversine, mean Earth radius), independent of src/. */
function km(a: { latitude: number; longitude: number }, b: { latitude: number; longitude: number }): number {
  const rad = (d: number) => (d * Math.PI) / 180;
  const h =
    Math.sin(rad(b.latitude - a.latitude) / 2) ** 2 +
    Math.cos(rad(a.latitude)) * Math.cos(rad(b.latitude)) * Math.sin(rad(b.longitude - a.longitude) / 2) ** 2;
  return 2 * 6371.0088 * Math.asin(Math.sqrt(h));
}

const ids = (items: ReadonlyArray<{ _id: string }>) => items.map((i) => i._id);
const byName = (name: string) => FLEET.find((d) => d.name === name)!;

interface DronePage {
  drones: Drone[];
  total: number;
  matched: number;
  offset: number;
  count: number;
  omitted: number;
  nextOffset?: number;
}
interface Nearest {
  origin: { latitude: number; longitude: number };
  drones: Array<Drone & { distanceKm: number }>;
  count: number;
  candidates: number;
}

describe("drone fleet over stdio", () => {
  let sandbox: Sandbox;
  let conn: StdioConnection;
  const hits = (key?: string) => sandbox.drones.router.count(key);

  beforeAll(async () => {
    sandbox = await testSandbox();
    conn = await connectStdio(sandboxEnv(sandbox));
  });
  afterAll(async () => {
    await conn?.close();
    await sandbox?.close();
  });

  it("lists every drone tool with annotations and an output schema", async () => {
    const { tools } = await conn.client.listTools();
    const found = new Map(tools.map((t) => [t.name, t]));
    for (const name of DRONE_TOOLS) {
      const tool = found.get(name);
      expect(tool, name).toBeDefined();
      expect(tool!.outputSchema, name).toBeDefined();
      expect(tool!.annotations?.readOnlyHint, name).toBe(name !== "drones_update_alert");
      expect(tool!.annotations?.destructiveHint, name).toBe(false);
    }
  });

  it("lists the whole fleet, then filters by status and battery range locally", async () => {
    const all = await call(conn.client, "drones_list_drones");
    expect(all.isError).toBeFalsy();
    const page = all.structuredContent as unknown as DronePage;
    expect(page).toMatchObject({
      total: FLEET.length,
      matched: FLEET.length,
      count: FLEET.length,
      offset: 0,
      omitted: 0,
    });
    expect(page.drones).toEqual(FLEET);
    expect(text(all)).toMatch(new RegExp(`^${FLEET.length} drone\\(s\\), showing 1-${FLEET.length}\\.`));
    const falcon = FLEET[0];
    expect(text(all)).toContain(
      `- ${falcon._id} "${falcon.name}": ${falcon.status}, battery ${falcon.battery_level}%, ` +
        `at ${falcon.latitude}, ${falcon.longitude}`,
    );

    const upstreamBefore = hits("GET /api/drones");
    const charging = FLEET.filter((d) => d.status === "charging");
    const byStatus = await call(conn.client, "drones_list_drones", { status: "Charging" }); // case-insensitive
    expect(ids((byStatus.structuredContent as unknown as DronePage).drones)).toEqual(ids(charging));
    expect(byStatus.structuredContent).toMatchObject({ total: FLEET.length, matched: charging.length });
    expect(text(byStatus)).toMatch(
      new RegExp(`^${charging.length} drone\\(s\\) matching status Charging \\(of ${FLEET.length}\\)`),
    );
    // The filter is local: the upstream was asked for the plain list, once.
    expect(hits("GET /api/drones")).toBe(upstreamBefore + 1);

    // Bounds are inclusive: Heron-06 (20%) and Falcon-05 (45%) sit exactly on them.
    const inRange = FLEET.filter((d) => d.battery_level >= 20 && d.battery_level <= 45);
    expect(inRange.map((d) => d.name)).toEqual(expect.arrayContaining(["Heron-06", "Falcon-05"]));
    const range = await ok<DronePage>(conn.client, "drones_list_drones", { minBattery: 20, maxBattery: 45 });
    expect(ids(range.drones)).toEqual(ids(inRange));
    expect(range.drones.every((d) => d.battery_level! >= 20 && d.battery_level! <= 45)).toBe(true);

    const activeLow = FLEET.filter((d) => d.status === "active" && d.battery_level <= 20);
    const combined = await call(conn.client, "drones_list_drones", { status: "active", maxBattery: 20 });
    expect(ids((combined.structuredContent as unknown as DronePage).drones)).toEqual(ids(activeLow));
    expect(text(combined)).toContain("matching status active, battery ≤ 20%");

    const paged = await ok<DronePage>(conn.client, "drones_list_drones", { limit: 5, offset: 5 });
    expect(ids(paged.drones)).toEqual(ids(FLEET.slice(5, 10)));
    expect(paged).toMatchObject({ count: 5, omitted: FLEET.length - 5, nextOffset: 10 });

    const none = await call(conn.client, "drones_list_drones", { status: "crashed" });
    expect(none.isError).toBeFalsy();
    // A status that matches nothing names the statuses the fleet has.
    const statuses = [...new Set(FLEET.map((d) => d.status))].sort();
    expect(none.structuredContent).toMatchObject({ drones: [], matched: 0, statusesInFleet: statuses });
    expect(text(none)).toBe(
      `No drones matching status crashed (of ${FLEET.length}). The fleet's statuses are: ${statuses.join(", ")}.`,
    );
  });

  it("reads one drone with every field", async () => {
    const drone = byName("Heron-04");
    const r = await call(conn.client, "drones_get_drone", { id: drone._id });
    expect(r.isError).toBeFalsy();
    expect(r.structuredContent).toEqual(drone);
    expect(text(r)).toContain(`${drone._id} "Heron-04": active, battery 55%`);
    expect(text(r)).toContain(`- serial_number: "${drone.serial_number}"`);
    expect(text(r)).toContain(`- home_base: "Barcelona"`);
  });

  it("computes the fleet summary: counts by status, low batteries, bounding box", async () => {
    const counts: Record<string, number> = {};
    for (const d of FLEET) counts[d.status] = (counts[d.status] ?? 0) + 1;
    const low = FLEET.filter((d) => d.battery_level < 20).sort((a, b) => a.battery_level - b.battery_level);
    const lats = FLEET.map((d) => d.latitude);
    const lons = FLEET.map((d) => d.longitude);
    const average = Math.round((FLEET.reduce((s, d) => s + d.battery_level, 0) / FLEET.length) * 10) / 10;

    const r = await call(conn.client, "drones_fleet_summary");
    expect(r.isError).toBeFalsy();
    const s = r.structuredContent as {
      totalDrones: number;
      byStatus: Record<string, number>;
      averageBatteryPercent: number;
      lowBatteryThresholdPercent: number;
      lowBatteryCount: number;
      lowBattery: Array<{ _id: string; name: string; status: string; battery_level: number }>;
      boundingBox: { minLatitude: number; maxLatitude: number; minLongitude: number; maxLongitude: number };
      dronesWithoutBattery: number;
      dronesWithoutPosition: number;
    };
    expect(s.totalDrones).toBe(FLEET.length);
    expect(s.byStatus).toEqual(counts);
    expect(s.averageBatteryPercent).toBe(average);
    expect(s.lowBatteryThresholdPercent).toBe(20);
    expect(s.lowBatteryCount).toBe(low.length);
    expect(s.lowBattery).toEqual(
      low.map((d) => ({ _id: d._id, name: d.name, status: d.status, battery_level: d.battery_level })),
    );
    // Heron-06 sits at exactly 20%: not strictly below the threshold.
    expect(s.lowBattery.map((d) => d.name)).not.toContain("Heron-06");
    expect(s.boundingBox).toEqual({
      minLatitude: Math.min(...lats),
      maxLatitude: Math.max(...lats),
      minLongitude: Math.min(...lons),
      maxLongitude: Math.max(...lons),
    });
    expect(s.dronesWithoutBattery).toBe(0);
    expect(s.dronesWithoutPosition).toBe(0);

    const t = text(r);
    expect(t).toMatch(new RegExp(`^${FLEET.length} drones: `));
    for (const [status, n] of Object.entries(counts)) expect(t).toContain(`${n} ${status}`);
    expect(t).toContain(`Average battery ${average}%.`);
    expect(t).toContain(
      `${low.length} below 20% battery, lowest first: "${low[0].name}" ${low[0].battery_level}% (${low[0].status})`,
    );
    expect(t).toMatch(/Area covered: latitude [\d.]+ to [\d.]+, longitude -[\d.]+ to [\d.]+ \(degrees\)\./);

    const strict = await ok<{ lowBatteryCount: number; lowBattery: Array<{ _id: string }> }>(
      conn.client,
      "drones_fleet_summary",
      { lowBatteryThreshold: 10 },
    );
    const under10 = FLEET.filter((d) => d.battery_level < 10).sort((a, b) => a.battery_level - b.battery_level);
    expect(strict.lowBatteryCount).toBe(under10.length);
    expect(ids(strict.lowBattery)).toEqual(ids(under10));
  });

  it("finds the nearest drones by great-circle distance", async () => {
    // From Madrid's centre: the ten Madrid drones, a few km away, nearest first.
    const madrid = FLEET.filter((d) => d.home_base === "Madrid");
    const fromMadrid = await call(conn.client, "drones_find_nearest", { ...CITIES.Madrid, limit: madrid.length });
    expect(fromMadrid.isError).toBeFalsy();
    const m = fromMadrid.structuredContent as unknown as Nearest;
    expect(m.origin).toEqual(CITIES.Madrid);
    expect(m).toMatchObject({ count: madrid.length, candidates: FLEET.length });
    expect(new Set(ids(m.drones))).toEqual(new Set(ids(madrid)));
    const expectedOrder = [...madrid].sort((a, b) => km(CITIES.Madrid, a) - km(CITIES.Madrid, b));
    expect(ids(m.drones)).toEqual(ids(expectedOrder));
    for (const d of m.drones) {
      expect(d.distanceKm).toBeLessThan(7);
      expect(d.distanceKm).toBeCloseTo(km(CITIES.Madrid, d), 2);
    }
    const nearest = m.drones[0];
    expect(text(fromMadrid)).toMatch(
      new RegExp(
        `^${madrid.length} nearest drone\\(s\\) to 40\\.4168, -3\\.7038 \\(great-circle distance, ` +
          `of ${FLEET.length} candidate\\(s\\)\\):`,
      ),
    );
    expect(text(fromMadrid)).toContain(
      `1. "${nearest.name}" (${nearest._id}): ${nearest.distanceKm.toFixed(2)} km, ${nearest.status}, ` +
        `battery ${nearest.battery_level}%`,
    );

    // From Barcelona: its own drones first, and every Madrid drone about 505 km away.
    const fromBarcelona = await ok<Nearest>(conn.client, "drones_find_nearest", {
      latitude: 41.3874,
      longitude: 2.1686,
      limit: 100,
    });
    expect(fromBarcelona.count).toBe(FLEET.length);
    const barcelonaCount = FLEET.filter((d) => d.home_base === "Barcelona").length;
    expect(new Set(fromBarcelona.drones.slice(0, barcelonaCount).map((d) => d.home_base))).toEqual(
      new Set(["Barcelona"]),
    );
    const madridFromBarcelona = fromBarcelona.drones.filter((d) => d.home_base === "Madrid");
    expect(madridFromBarcelona).toHaveLength(madrid.length);
    for (const d of madridFromBarcelona) {
      expect(d.distanceKm).toBeGreaterThan(495);
      expect(d.distanceKm).toBeLessThan(515);
    }
    for (let i = 1; i < fromBarcelona.drones.length; i++)
      expect(fromBarcelona.drones[i].distanceKm).toBeGreaterThanOrEqual(fromBarcelona.drones[i - 1].distanceKm);

    // From London: the two London drones, then Paris at about 344 km.
    const fromLondon = await call(conn.client, "drones_find_nearest", { ...CITIES.London, limit: 3 });
    const l = fromLondon.structuredContent as unknown as Nearest;
    expect(
      l.drones
        .slice(0, 2)
        .map((d) => d.name)
        .sort(),
    ).toEqual(["Swift-01", "Swift-02"]);
    expect(l.drones[2].home_base).toBe("Paris");
    expect(l.drones[2].distanceKm).toBeGreaterThan(336);
    expect(l.drones[2].distanceKm).toBeLessThan(352);
    expect(text(fromLondon)).toMatch(/3\. "Osprey-\d\d" \(\w+\): 3\d\d\.\d km/);

    // Filters and a radius.
    const activeCharged = FLEET.filter((d) => d.status === "active" && d.battery_level >= 50).sort(
      (a, b) => km(CITIES.Lisbon, a) - km(CITIES.Lisbon, b),
    );
    const filtered = await ok<Nearest>(conn.client, "drones_find_nearest", {
      ...CITIES.Lisbon,
      status: "active",
      minBattery: 50,
      limit: 3,
    });
    expect(ids(filtered.drones)).toEqual(ids(activeCharged.slice(0, 3)));
    expect(filtered.candidates).toBe(activeCharged.length);
    const within = await ok<Nearest>(conn.client, "drones_find_nearest", {
      ...CITIES.Madrid,
      maxDistanceKm: 400,
      limit: 100,
    });
    expect(new Set(ids(within.drones))).toEqual(new Set(ids(madrid)));
    const nothing = await call(conn.client, "drones_find_nearest", { latitude: 0, longitude: 0, maxDistanceKm: 100 });
    expect(nothing.isError).toBeFalsy();
    expect(nothing.structuredContent).toMatchObject({ count: 0, drones: [] });
    expect(text(nothing)).toMatch(/^No drone within 100 km of 0, 0/);
  });

  it("lists and reads missions", async () => {
    const inProgress = MISSIONS.filter((m) => m.status === "in_progress");
    const r = await call(conn.client, "drones_list_missions", { status: "in_progress" });
    expect(r.isError).toBeFalsy();
    expect(r.structuredContent).toMatchObject({ total: MISSIONS.length, matched: inProgress.length });
    expect(ids((r.structuredContent as { missions: Array<{ _id: string }> }).missions)).toEqual(ids(inProgress));
    expect(text(r)).toMatch(
      new RegExp(`^${inProgress.length} mission\\(s\\) matching status in_progress \\(of ${MISSIONS.length}\\)`),
    );
    expect(text(r)).toContain(
      `- ${inProgress[0]._id} "${inProgress[0].name}": in_progress, ${inProgress[0].type}, ` +
        `drone ${inProgress[0].drone_id}`,
    );

    const swift = byName("Swift-01");
    const forDrone = await ok<{ missions: Array<{ _id: string }> }>(conn.client, "drones_list_missions", {
      drone_id: swift._id,
    });
    expect(ids(forDrone.missions)).toEqual(ids(MISSIONS.filter((m) => m.drone_id === swift._id)));

    const mission = MISSIONS[3];
    const one = await call(conn.client, "drones_get_mission", { id: mission._id });
    expect(one.structuredContent).toEqual(mission);
    expect(text(one)).toMatch(new RegExp(`^Mission ${mission._id} `));
    expect(text(one)).toContain(`- name: "${mission.name}"`);
    expect(text(one)).toContain("- waypoints: 3 item(s)");
  });

  it("lists alerts with local filters", async () => {
    const openCritical = ALERTS.filter((a) => a.status === "open" && a.severity === "critical");
    const r = await call(conn.client, "drones_list_alerts", { status: "open", severity: "critical" });
    expect(r.isError).toBeFalsy();
    expect(ids((r.structuredContent as { alerts: Array<{ _id: string }> }).alerts)).toEqual(ids(openCritical));
    expect(r.structuredContent).toMatchObject({ total: ALERTS.length, matched: openCritical.length });
    expect(text(r)).toMatch(
      new RegExp(
        `^${openCritical.length} alert\\(s\\) matching status open, severity critical \\(of ${ALERTS.length}\\)`,
      ),
    );
    expect(text(r)).toContain(
      `[critical] open ${openCritical[0].type} drone ${openCritical[0].drone_id}: "${openCritical[0].message}"`,
    );

    const forDrone = ALERTS.filter((a) => a.drone_id === byName("Falcon-07")._id);
    const f = await ok<{ alerts: Array<{ _id: string }> }>(conn.client, "drones_list_alerts", {
      drone_id: byName("Falcon-07")._id,
    });
    expect(ids(f.alerts)).toEqual(ids(forDrone));
  });

  it("updates an alert, and the next read (tool and resource) shows the change", async () => {
    const alert = ALERTS.find((a) => a.status === "open" && a.severity === "critical")!;
    const before = await ok<Record<string, unknown>>(conn.client, "drones_get_alert", { id: alert._id });
    expect(before).toEqual(alert);
    const shown = await call(conn.client, "drones_get_alert", { id: alert._id });
    expect(text(shown)).toMatch(new RegExp(`^Alert ${alert._id} `));
    expect(text(shown)).toContain(`- status: "open"`);

    const puts = hits("PUT /api/alerts/:id");
    const updated = await call(conn.client, "drones_update_alert", {
      id: alert._id,
      changes: { status: "acknowledged", acknowledged_by: "e2e-operator" },
    });
    expect(updated.isError).toBeFalsy();
    const u = updated.structuredContent as Record<string, unknown>;
    expect(u).toMatchObject({
      _id: alert._id,
      status: "acknowledged",
      acknowledged_by: "e2e-operator",
      message: alert.message,
    });
    expect(u.updated_at).not.toBe(alert.updated_at);
    expect(text(updated)).toContain(`Alert ${alert._id} updated at ${String(u.updated_at)}. Now:`);
    expect(text(updated)).toContain(`- status: "acknowledged"`);
    expect(text(updated)).toContain(`- acknowledged_by: "e2e-operator"`);
    expect(hits("PUT /api/alerts/:id")).toBe(puts + 1);

    const after = await call(conn.client, "drones_get_alert", { id: alert._id });
    expect(after.structuredContent).toMatchObject({
      status: "acknowledged",
      acknowledged_by: "e2e-operator",
      updated_at: u.updated_at,
    });
    expect(text(after)).toContain(`- status: "acknowledged"`);

    const resource = await conn.client.readResource({ uri: `drones://alerts/${alert._id}` });
    expect(resource.contents[0].mimeType).toBe("application/json");
    expect(body(resource.contents[0])).toMatchObject({
      _id: alert._id,
      status: "acknowledged",
      acknowledged_by: "e2e-operator",
    });

    const stillOpen = await ok<{ alerts: Array<{ _id: string }> }>(conn.client, "drones_list_alerts", {
      status: "open",
      severity: "critical",
    });
    expect(ids(stillOpen.alerts)).not.toContain(alert._id);

    // The upstream's own validation comes back as a tool error, and nothing changes.
    const bad = await call(conn.client, "drones_update_alert", { id: alert._id, changes: { status: "snoozed" } });
    expect(bad.isError).toBe(true);
    expect(text(bad)).toContain("HTTP 400, VALIDATION_ERROR");
    expect(text(bad)).toMatch(/status must be one of open, acknowledged, resolved/);
    expect(await ok(conn.client, "drones_get_alert", { id: alert._id })).toMatchObject({ status: "acknowledged" });
  });

  it("masks every key and webhook secret in the API key listing", async () => {
    const r = await call(conn.client, "drones_list_api_keys");
    expect(r.isError).toBeFalsy();
    const everything = JSON.stringify(r);
    const secrets = API_KEYS.flatMap((k) => [k.key, ...(k.webhook ? [k.webhook.signing_secret] : [])]);
    expect(secrets.filter((s) => s.startsWith("whsec_"))).toHaveLength(1);
    for (const secret of secrets) {
      expect(everything).not.toContain(secret);
      // Not even the secret part after the prefix, nor a long piece of it.
      const body = secret.replace(/^(dfk_live_|whsec_)/, "");
      expect(everything).not.toContain(body);
      expect(everything).not.toContain(body.slice(0, 12));
      expect(conn.stderr()).not.toContain(secret);
    }

    const listed = r.structuredContent as {
      api_keys: Array<{
        _id: string;
        name: string;
        key: string;
        scopes: string[];
        webhook?: { url: string; signing_secret: string; events: string[] };
      }>;
      count: number;
      maskedValues: number;
    };
    expect(listed.count).toBe(API_KEYS.length);
    expect(listed.maskedValues).toBe(secrets.length);
    API_KEYS.forEach((key, i) => {
      const got = listed.api_keys[i];
      expect(got._id).toBe(key._id);
      expect(got.name).toBe(key.name);
      expect(got.scopes).toEqual(key.scopes);
      expect(got.key.startsWith(LIVE_KEY_PREFIX)).toBe(true);
      expect(got.key.endsWith(key.key.slice(-4))).toBe(true);
      expect(got.key).toBe(`${LIVE_KEY_PREFIX}…${key.key.slice(-4)}`);
      expect(text(r)).toContain(`key ${got.key}`);
      if (key.webhook) {
        expect(got.webhook!.url).toBe(key.webhook.url);
        expect(got.webhook!.events).toEqual(key.webhook.events);
        expect(got.webhook!.signing_secret).toBe(`whsec_…${key.webhook.signing_secret.slice(-4)}`);
        expect(text(r)).toContain(`(signing secret whsec_…${key.webhook.signing_secret.slice(-4)})`);
      }
    });
    expect(text(r)).toMatch(
      new RegExp(`^${API_KEYS.length} API key\\(s\\); secrets masked \\(${secrets.length} value\\(s\\)\\):`),
    );
  });

  it("reports an unknown id as HTTP 404 NOT_FOUND", async () => {
    for (const tool of ["drones_get_drone", "drones_get_mission", "drones_get_alert"]) {
      const r = await call(conn.client, tool, { id: "000000000000000000000000" });
      expect(r.isError, tool).toBe(true);
      expect(text(r), tool).toContain("HTTP 404, NOT_FOUND");
      expect(text(r), tool).toMatch(/Next step: no drone, mission or alert has that _id/);
    }
    const update = await call(conn.client, "drones_update_alert", {
      id: "000000000000000000000000",
      changes: { status: "resolved" },
    });
    expect(update.isError).toBe(true);
    expect(text(update)).toContain("HTTP 404, NOT_FOUND");
    await expect(conn.client.readResource({ uri: "drones://drones/000000000000000000000000" })).rejects.toThrow(
      /Resource not found/,
    );
  });

  it("refuses invalid arguments before any upstream request, naming the field", async () => {
    const before = hits();
    const cases: Array<[string, Record<string, unknown>, RegExp]> = [
      ["drones_find_nearest", { latitude: 91, longitude: 0 }, /latitude must be a number from -90 to 90/],
      ["drones_find_nearest", { latitude: 40, longitude: 200 }, /longitude must be a number from -180 to 180/],
      ["drones_find_nearest", { latitude: "40.4", longitude: -3.7 }, /latitude/],
      ["drones_find_nearest", { longitude: -3.7 }, /latitude/],
      [
        "drones_find_nearest",
        { latitude: 40, longitude: -3, minBattery: 101 },
        /minBattery must be a number from 0 to 100/,
      ],
      ["drones_find_nearest", { latitude: 40, longitude: -3, maxDistanceKm: -5 }, /maxDistanceKm/],
      ["drones_list_drones", { minBattery: 101 }, /minBattery must be a number from 0 to 100/],
      ["drones_list_drones", { maxBattery: -1 }, /maxBattery/],
      ["drones_list_drones", { minBattery: 80, maxBattery: 20 }, /minBattery \(80%\) is above maxBattery \(20%\)/],
      ["drones_list_drones", { limit: 0 }, /limit/],
      ["drones_fleet_summary", { lowBatteryThreshold: 150 }, /lowBatteryThreshold/],
      ["drones_get_drone", { id: "  " }, /id must be the _id of a drone/],
      ["drones_update_alert", { id: ALERTS[0]._id, changes: {} }, /changes must set at least one field/],
      ["drones_update_alert", { id: ALERTS[0]._id, changes: "acknowledged" }, /changes must be a JSON object/],
    ];
    for (const [tool, args, message] of cases) {
      const r = await call(conn.client, tool, args);
      expect(r.isError, `${tool} ${JSON.stringify(args)}`).toBe(true);
      expect(text(r), `${tool} ${JSON.stringify(args)}`).toMatch(message);
    }
    expect(hits()).toBe(before);
  });

  it("lists drones, missions and alerts as JSON resources, reads them, and completes their ids", async () => {
    const { resourceTemplates } = await conn.client.listResourceTemplates();
    expect(resourceTemplates.map((t) => t.uriTemplate)).toEqual(
      expect.arrayContaining(["drones://drones/{id}", "drones://missions/{id}", "drones://alerts/{id}"]),
    );

    const { resources } = await conn.client.listResources();
    const of = (segment: string) => resources.filter((r) => r.uri.startsWith(`drones://${segment}/`));
    expect(of("drones").map((r) => r.uri)).toEqual(FLEET.map((d) => `drones://drones/${d._id}`));
    expect(of("missions").map((r) => r.uri)).toEqual(MISSIONS.map((m) => `drones://missions/${m._id}`));
    expect(of("alerts").map((r) => r.uri)).toEqual(ALERTS.map((a) => `drones://alerts/${a._id}`));
    for (const r of [...of("drones"), ...of("missions"), ...of("alerts")]) expect(r.mimeType).toBe("application/json");
    expect(of("drones")[0]).toMatchObject({
      name: FLEET[0].name,
      description: `${FLEET[0].status}, battery ${FLEET[0].battery_level}%`,
    });

    const drone = byName("Osprey-03");
    const d = await conn.client.readResource({ uri: `drones://drones/${drone._id}` });
    expect(d.contents[0]).toMatchObject({ uri: `drones://drones/${drone._id}`, mimeType: "application/json" });
    expect(body(d.contents[0])).toEqual(drone);
    const mission = MISSIONS[8];
    const m = await conn.client.readResource({ uri: `drones://missions/${mission._id}` });
    expect(m.contents[0].mimeType).toBe("application/json");
    expect(body(m.contents[0])).toEqual(mission);
    const alert = ALERTS.at(-1)!;
    const a = await conn.client.readResource({ uri: `drones://alerts/${alert._id}` });
    expect(a.contents[0].mimeType).toBe("application/json");
    expect(body(a.contents[0])).toEqual(alert);

    const complete = (template: string, value: string) =>
      conn.client
        .complete({ ref: { type: "ref/resource", uri: template }, argument: { name: "id", value } })
        .then((c) => c.completion.values);
    // By id prefix, and by the record's name.
    const prefix = FLEET[0]._id.slice(0, 22);
    const byIdPrefix = await complete("drones://drones/{id}", prefix);
    expect(byIdPrefix).toEqual(ids(FLEET.filter((x) => x._id.startsWith(prefix))));
    expect(byIdPrefix.length).toBeGreaterThan(1);
    expect(await complete("drones://drones/{id}", "heron")).toEqual(
      ids(FLEET.filter((x) => x.name.startsWith("Heron"))),
    );
    expect(await complete("drones://missions/{id}", "Tagus")).toEqual([
      MISSIONS.find((x) => x.name.startsWith("Tagus"))!._id,
    ]);
    expect(await complete("drones://missions/{id}", MISSIONS[4]._id)).toEqual([MISSIONS[4]._id]);
    expect(await complete("drones://alerts/{id}", "critical signal")).toEqual(
      ids(ALERTS.filter((x) => x.severity === "critical" && x.type === "signal_loss")),
    );
    expect(await complete("drones://alerts/{id}", "nothing-like-this")).toEqual([]);
  });

  it("offers the fleet_status_report prompt, pointing at the fleet tools", async () => {
    const { prompts } = await conn.client.listPrompts();
    expect(prompts.map((p) => p.name)).toContain("fleet_status_report");
    const prompt = await conn.client.getPrompt({
      name: "fleet_status_report",
      arguments: { lowBatteryThreshold: "25", near: "Madrid" },
    });
    const body = prompt.messages.map((msg) => (msg.content.type === "text" ? msg.content.text : "")).join("\n");
    for (const tool of ["drones_fleet_summary", "drones_list_alerts", "drones_list_missions", "drones_find_nearest"])
      expect(body).toContain(tool);
    expect(body).toContain("lowBatteryThreshold 25");
    expect(body).toContain('"Madrid"');
    const plain = await conn.client.getPrompt({ name: "fleet_status_report", arguments: {} });
    const plainBody = plain.messages.map((msg) => (msg.content.type === "text" ? msg.content.text : "")).join("\n");
    expect(plainBody).toContain("lowBatteryThreshold 20");
    expect(plainBody).not.toContain("drones_find_nearest");
  });
});

describe("drone fleet over HTTP", () => {
  let sandbox: Sandbox;
  let server: HttpServerProcess;
  let client: Client;

  beforeAll(async () => {
    sandbox = await testSandbox();
    server = await spawnHttpServer(sandboxEnv(sandbox));
    client = await connectHttp(server.url);
  });
  afterAll(async () => {
    await client?.close();
    await server?.stop();
    await sandbox?.close();
  });

  it("finds the nearest drones and reads a drone over Streamable HTTP", async () => {
    const before = sandbox.drones.router.count("GET /api/drones");
    const r = await call(client, "drones_find_nearest", { latitude: 41.3874, longitude: 2.1686, limit: 2 });
    expect(r.isError).toBeFalsy();
    const near = r.structuredContent as unknown as Nearest;
    expect(near.drones.map((d) => d.home_base)).toEqual(["Barcelona", "Barcelona"]);
    expect(near.drones[0].distanceKm).toBeLessThan(near.drones[1].distanceKm);
    expect(text(r)).toMatch(/^2 nearest drone\(s\) to 41\.3874, 2\.1686/);
    expect(sandbox.drones.router.count("GET /api/drones")).toBe(before + 1);

    expect(await ok(client, "drones_get_drone", { id: FLEET[0]._id })).toEqual(FLEET[0]);
  });
});

describe("drone fleet with a wrong DRONES_API_KEY", () => {
  const WRONG = `${LIVE_KEY_PREFIX}wrong_key_canary_31337xyz`;
  let sandbox: Sandbox;
  let conn: StdioConnection;

  beforeAll(async () => {
    sandbox = await testSandbox();
    conn = await connectStdio(sandboxEnv(sandbox, { DRONES_API_KEY: WRONG }));
  });
  afterAll(async () => {
    await conn?.close();
    await sandbox?.close();
  });

  it("answers HTTP 401 naming DRONES_API_KEY, never echoing the key", async () => {
    for (const [tool, args] of [
      ["drones_list_drones", {}],
      ["drones_fleet_summary", {}],
      ["drones_update_alert", { id: ALERTS[0]._id, changes: { status: "resolved" } }],
    ] as const) {
      const r = await call(conn.client, tool, args);
      expect(r.isError, tool).toBe(true);
      expect(text(r), tool).toContain("HTTP 401, UNAUTHORIZED");
      expect(text(r), tool).toMatch(/check DRONES_API_KEY/);
      expect(JSON.stringify(r), tool).not.toContain(WRONG);
    }
    expect(conn.stderr()).not.toContain(WRONG);
    expect(sandbox.drones.router.count()).toBe(0);
  });
});
