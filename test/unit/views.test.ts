import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import {
  applyAgentStatus,
  applyDeployment,
  applyPoll,
  applyProject,
  carryOver,
  doneLabel,
  elapsedMs,
  nextPoll,
  secretsNeeded,
  stateFromResult,
} from "../../views/build-console/phase.js";
import { Poller, type TickOutcome } from "../../views/build-console/poller.js";
import {
  chartRows,
  confidencePercent,
  fitWordsOf,
  itemFromResult,
  measurementsOf,
  placeValue,
  readSizeChart,
  sizeOrder,
} from "../../views/fit-card/bands.js";
import {
  batteryArcPath,
  circlePath,
  countSubpaths,
  ensureSpan,
  fitProjection,
  neighborInDirection,
  PointGrid,
  shapePath,
  spreadOverlaps,
} from "../../views/fleet-map/geo.js";
import {
  applyAlerts,
  embeddedAlerts,
  modelFrom,
  statusCounts,
  statusSlots,
  toMapDrone,
} from "../../views/fleet-map/model.js";
import { compass, nearestPlace, placeLine, ringDistances } from "../../views/fleet-map/places.js";
import { recordRows } from "../../views/fleet-map/record.js";
import {
  displayValue,
  formatDuration,
  formatKm,
  formatRoundKm,
  httpsUrl,
  humanize,
  siteUrl,
} from "../../views/shared/format.js";
import { structuredOf, textOf } from "../../views/shared/result.js";

/** Pure logic of the MCP Apps views (views/**); the browser test covers what is drawn. */

const VIEWS_DIR = fileURLToPath(new URL("../../views/", import.meta.url));

// ---- shared: reading and showing untrusted values ----

describe("views/shared: untrusted values", () => {
  it("accepts only absolute https URLs without credentials for images and links", () => {
    expect(httpsUrl("https://previews.example.app/p/v1.png")).toBe("https://previews.example.app/p/v1.png");
    for (const bad of [
      "javascript:alert(1)",
      "data:image/png;base64,AAAA",
      "http://example.com/a.png",
      "//example.com/a.png",
      "https://user:pw@example.com/",
      "/relative.png",
      42,
      null,
    ]) {
      expect(httpsUrl(bad), String(bad)).toBeNull();
    }
  });

  it("turns the build service's scheme-less production host into an https URL, refusing other schemes", () => {
    expect(siteUrl("salon.apps.example")).toBe("https://salon.apps.example/");
    expect(siteUrl("https://salon.apps.example")).toBe("https://salon.apps.example/");
    expect(siteUrl("javascript:alert(1)")).toBeNull();
    expect(siteUrl("")).toBeNull();
  });

  it("shows any value as one line of plain text: markup stays literal, objects become JSON, long text is cut", () => {
    expect(displayValue('<img src=x onerror="alert(1)">')).toBe('<img src=x onerror="alert(1)">');
    expect(displayValue({ a: [1, 2] })).toBe('{"a":[1,2]}');
    expect(displayValue("a\n\n  b")).toBe("a b");
    expect(displayValue("x".repeat(500), 20)).toHaveLength(20);
    expect(displayValue(undefined)).toBe("—");
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    expect(displayValue(circular)).toBe("(unprintable)");
  });

  it("formats durations, distances and field names", () => {
    expect(formatDuration(45_000)).toBe("45s");
    expect(formatDuration(200_000)).toBe("3m 20s");
    expect(formatDuration(3_720_000)).toBe("1h 02m");
    expect(formatKm(0.688)).toBe("688 m");
    expect(formatKm(2.6612)).toBe("2.66 km");
    expect(formatKm(1234.5)).toBe("1,235 km");
    expect([0.5, 2, 20, 1000].map(formatRoundKm)).toEqual(["500 m", "2 km", "20 km", "1,000 km"]);
    expect(humanize("battery_level")).toBe("Battery level");
    expect(humanize("lastSeenAt")).toBe("Last seen at");
  });

  it("reads structured content and text of a tool result without trusting its shape", () => {
    expect(structuredOf({ structuredContent: { a: 1 } })).toEqual({ a: 1 });
    expect(structuredOf({ structuredContent: [1] })).toBeUndefined();
    expect(
      textOf({
        content: [
          { type: "text", text: "a" },
          { type: "image", data: "" },
          { type: "text", text: "b" },
        ],
      }),
    ).toBe("a\nb");
    expect(textOf({ content: "nope" })).toBe("");
  });

  it("never builds markup from strings anywhere in views/ (no innerHTML, document.write, eval)", () => {
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name);
        if (statSync(path).isDirectory()) walk(path);
        else if (path.endsWith(".ts")) files.push(path);
      }
    };
    walk(VIEWS_DIR);
    expect(files.length).toBeGreaterThan(10);
    for (const file of files) {
      const code = readFileSync(file, "utf8");
      expect(code, file).not.toMatch(
        new RegExp(
          /\.(innerHTML|outerHTML)\s*=|insertAdjacentHTML|document\.write|\beval\(|new Function\(|/.source +
            /setAttribute\(\s*["']style["']/.source,
        ),
      );
    }
  });
});

// ---- fleet map ----

const drone = (id: string, lat: number, lon: number, extra: Record<string, unknown> = {}) => ({
  _id: id,
  name: id,
  status: "active",
  battery_level: 50,
  latitude: lat,
  longitude: lon,
  ...extra,
});

describe("views/fleet-map: model", () => {
  it("recognises the three tools' structured content", () => {
    const list = modelFrom({
      drones: [drone("a", 40, -3), drone("b", 41, 2)],
      total: 2,
      matched: 2,
      offset: 0,
      count: 2,
      omitted: 0,
    });
    expect(list?.mode).toBe("list");
    expect(list?.drones).toHaveLength(2);

    const nearest = modelFrom({
      origin: { latitude: 40.4, longitude: -3.7 },
      drones: [
        { ...drone("n1", 40.41, -3.7), distanceKm: 1.1 },
        { ...drone("n2", 40.5, -3.6), distanceKm: 9 },
      ],
      count: 2,
      candidates: 30,
    });
    expect(nearest?.mode).toBe("nearest");
    expect(nearest?.origin).toEqual({ lat: 40.4, lon: -3.7 });
    expect(nearest?.drones.map((d) => [d.rank, d.distanceKm])).toEqual([
      [1, 1.1],
      [2, 9],
    ]);

    const summary = modelFrom({
      totalDrones: 3,
      byStatus: { active: 2, Offline: 1 },
      averageBatteryPercent: 40,
      lowBatteryThresholdPercent: 25,
      lowBatteryCount: 1,
      lowBattery: [{ _id: "x", name: "X", status: "offline", battery_level: 3 }],
      boundingBox: { minLatitude: 38, maxLatitude: 52, minLongitude: -9, maxLongitude: 3 },
      dronesWithoutBattery: 0,
      dronesWithoutPosition: 0,
    });
    expect(summary?.mode).toBe("summary");
    expect(summary?.box).toEqual({ minLat: 38, maxLat: 52, minLon: -9, maxLon: 3 });
    expect(summary?.lowBatteryThreshold).toBe(25);
    expect(statusCounts(summary!)).toEqual([
      { status: "active", count: 2 },
      { status: "offline", count: 1 },
    ]);
    expect(modelFrom({ hello: "world" })).toBeNull();
  });

  it("draws only drones with a valid position and counts the others", () => {
    expect(toMapDrone(drone("ok", 89.9, 179.9))).not.toBeNull();
    for (const bad of [
      drone("lat", 91, 0),
      drone("lon", 0, -181),
      { _id: "none" },
      { _id: "str", latitude: "40", longitude: "-3" },
      "text",
    ])
      expect(toMapDrone(bad)).toBeNull();
    const model = modelFrom({
      drones: [drone("a", 40, -3), { _id: "b", latitude: null, longitude: null }],
      total: 2,
      matched: 2,
    });
    expect(model?.drones).toHaveLength(1);
    expect(model?.unpositioned).toBe(1);
  });

  it("marks drones with open alerts only, from the alert list or from the record itself", () => {
    const model = modelFrom({
      drones: [drone("a", 40, -3), drone("b", 41, 2), drone("c", 42, 1, { open_alerts: 2 })],
      total: 3,
      matched: 3,
    })!;
    const marked = applyAlerts(model, [
      { _id: "1", drone_id: "a", status: "open", severity: "critical", message: "Battery at 5%" },
      { _id: "2", drone_id: "b", status: "resolved" },
      { _id: "3", drone_id: "b", status: "acknowledged" },
    ]);
    expect(marked).toBe(2);
    expect(model.drones.map((d) => d.openAlerts.length)).toEqual([1, 0, 2]);
    expect(embeddedAlerts({ alerts: [{ status: "open" }, { status: "resolved" }] })).toHaveLength(1);
  });

  it("gives the service's statuses fixed colour slots and others the next free ones", () => {
    const slots = statusSlots(["returning", "active", "lost"]);
    expect(slots.get("active")).toBe(0);
    expect(slots.get("offline")).toBe(4);
    expect(slots.get("returning")).toBe(5);
    expect(slots.get("lost")).toBe(6);
  });

  it("lists a drone's record as text rows, pass-through fields included", () => {
    const [d] = modelFrom({
      drones: [drone("a", 40.5, -3.25, { model: "<b>X10</b>", home_base: { city: "Madrid" } })],
      total: 1,
      matched: 1,
    })!.drones;
    const rows = Object.fromEntries(recordRows(d));
    expect(rows).toMatchObject({
      Status: "active",
      Battery: "50%",
      Position: "40.5000° N, 3.2500° W",
      ID: "a",
      Model: "<b>X10</b>",
      "Home base": '{"city":"Madrid"}',
    });
  });
});

describe("views/fleet-map: geometry", () => {
  const box = { minLat: 38.7, maxLat: 51.5, minLon: -9.14, maxLon: 2.35 };

  it("fits the drones' bounding box inside the map with the padding on the limiting side", () => {
    const p = fitProjection(box, 800, 500, 30);
    const corners = [p([box.minLon, box.maxLat])!, p([box.maxLon, box.minLat])!];
    for (const [x, y] of corners) {
      expect(x).toBeGreaterThanOrEqual(29.5);
      expect(x).toBeLessThanOrEqual(770.5);
      expect(y).toBeGreaterThanOrEqual(29.5);
      expect(y).toBeLessThanOrEqual(470.5);
    }
    // The tall box fills the height exactly (top at the padding, bottom at height - padding).
    expect(corners[0][1]).toBeCloseTo(30, 0);
    expect(corners[1][1]).toBeCloseTo(470, 0);
  });

  it("frames a single drone with a minimum span around it, centred", () => {
    const p = fitProjection({ minLat: 40.4, maxLat: 40.4, minLon: -3.7, maxLon: -3.7 }, 600, 400, 20);
    const [x, y] = p([-3.7, 40.4])!;
    expect(x).toBeCloseTo(300, 0);
    expect(y).toBeCloseTo(200, 0);
    const span = ensureSpan({ minLat: 10, maxLat: 10, minLon: 5, maxLon: 5 }, 0.02);
    expect(span.maxLat - span.minLat).toBeCloseTo(0.02, 6);
    expect(span.maxLon - span.minLon).toBeGreaterThan(0.02);
  });

  it("falls back to a world view without positions", () => {
    const p = fitProjection(null, 800, 400, 10);
    const [x] = p([0, 0])!;
    expect(x).toBeCloseTo(400, 0);
  });

  it("writes one sub-path per marker so a group's markers can be counted", () => {
    const d = [
      circlePath(10, 10, 4),
      shapePath("square", 20, 20, 4),
      shapePath("diamond", 30, 30, 4),
      shapePath("triangle", 40, 40, 4),
    ].join("");
    expect(countSubpaths(d)).toBe(4);
    expect(batteryArcPath(0, 0, 5, 0)).toBe("");
    expect(countSubpaths(batteryArcPath(0, 0, 5, 100))).toBe(1);
    expect(batteryArcPath(0, 0, 10, 25)).toMatch(/A10,10 0 0,1 10,0$/);
  });

  it("finds the nearest marker to the pointer within a radius", () => {
    const grid = new PointGrid(Float64Array.from([10, 100, 105]), Float64Array.from([10, 100, 100]));
    expect(grid.nearest(12, 9, 8)).toBe(0);
    expect(grid.nearest(104, 101, 8)).toBe(2);
    expect(grid.nearest(50, 50, 8)).toBe(-1);
  });

  it("moves the keyboard cursor to the closest marker in the arrow's direction", () => {
    //   0 at centre, 1 right, 2 up-right (off axis), 3 left, 4 below
    const xs = [100, 160, 130, 40, 100];
    const ys = [100, 100, 40, 100, 170];
    expect(neighborInDirection(xs, ys, 0, "right")).toBe(1);
    expect(neighborInDirection(xs, ys, 0, "left")).toBe(3);
    expect(neighborInDirection(xs, ys, 0, "up")).toBe(2);
    expect(neighborInDirection(xs, ys, 0, "down")).toBe(4);
    expect(neighborInDirection(xs, ys, 1, "right")).toBe(-1);
    // Stacked markers are stepped through in order.
    expect(neighborInDirection([5, 5, 5], [5, 5, 5], 0, "right")).toBe(1);
    expect(neighborInDirection([5, 5, 5], [5, 5, 5], 2, "left")).toBe(1);
  });

  it("fans out stacked markers so none overlaps, keeping the first in place", () => {
    const n = 12;
    const { x, y, moved } = spreadOverlaps(new Float64Array(n).fill(200), new Float64Array(n).fill(200), 18);
    expect(moved).toBe(n - 1);
    expect([x[0], y[0]]).toEqual([200, 200]);
    for (let i = 0; i < n; i++)
      for (let j = i + 1; j < n; j++) expect(Math.hypot(x[i] - x[j], y[i] - y[j])).toBeGreaterThanOrEqual(18 - 1e-9);
    expect(spreadOverlaps(new Float64Array(900).fill(1), new Float64Array(900).fill(1), 10).moved).toBe(0);
  });
});

// ---- build console ----

const project = (extra: Record<string, unknown> = {}) => ({
  projectId: "salon-booking",
  agentProcessStatus: "done",
  deployment: null,
  productionProjectUrl: "salon-booking.apps.example",
  ...extra,
});
const waitResult = (extra: Record<string, unknown>) => ({
  outcome: "done",
  until: "agent",
  elapsedSeconds: 200,
  polls: 12,
  message: "The agent run has ended.",
  project: project(),
  ...extra,
});
const conversation = [
  { author: "user", message: "Build it", messageType: "regular" },
  { author: "agent", message: "Starting", messageType: "starting" },
  {
    author: "agent",
    message: "Needs Stripe",
    messageType: "building",
    secretKeysNeeded: {
      STRIPE_API_KEY: { isProvided: false, description: "Stripe key" },
      MAPS_KEY: { isProvided: false },
    },
  },
  {
    author: "agent",
    message: "Got the maps key",
    messageType: "building",
    secretKeysNeeded: { MAPS_KEY: { isProvided: true } },
  },
];

describe("views/fleet-map: place context", () => {
  it("names where a query point is: the nearest city, its distance and direction", () => {
    expect(nearestPlace({ lat: 40.4168, lon: -3.7038 }).place.name).toBe("Madrid");
    expect(placeLine({ lat: 40.4168, lon: -3.7038 }, formatKm)).toBe("central Madrid");
    // About 3 km north-east of Madrid's centre.
    expect(placeLine({ lat: 40.44, lon: -3.675 }, formatKm)).toMatch(/^\d\.\d+ km NE of central Madrid$/);
    expect(placeLine({ lat: 45.0, lon: 4.84 }, formatKm)).toMatch(/^\d+(\.\d)? km S of Lyon$/);
    expect(compass({ lat: 0, lon: 0 }, { lat: 0, lon: -1 })).toBe("W");
  });

  it("draws range rings every scale-bar step out to the farthest drone, a few at most", () => {
    expect(ringDistances(2, 3.41)).toEqual([2, 4]);
    expect(ringDistances(1, 0.3)).toEqual([1]);
    expect(ringDistances(1, 40)).toEqual([1, 2, 3, 4]);
    expect(ringDistances(0, 5)).toEqual([]);
  });
});

describe("views/build-console: phase", () => {
  it("opens a launch with a started agent as a running agent followed by build_get_agent_status", () => {
    const state = stateFromResult(
      "build_launch_project",
      { projectId: "salon-booking", agent: { started: true, status: "init" } },
      false,
      "",
      {},
      1000,
    );
    expect(state.phase).toBe("agent-running");
    expect(nextPoll(state)).toEqual({ name: "build_get_agent_status", arguments: { projectId: "salon-booking" } });
  });

  it("keeps the request a run was started with, to show before the agent's first message", () => {
    const args = { projectId: "salon-booking", prompt: "  A booking app for a hair salon  " };
    const state = stateFromResult("build_launch_project", { agent: { started: true } }, false, "", args, 1000);
    expect(state).toMatchObject({ phase: "agent-running", request: "A booking app for a hair salon" });
    expect(stateFromResult("build_start_agent", { status: "init" }, false, "", args).request).toBe(
      "A booking app for a hair salon",
    );
  });

  it("never shows a message time ahead of the view's clock, and keeps the time it first showed", () => {
    const now = Date.parse("2026-11-28T16:55:00Z");
    const conversation = (...stamps: string[]) =>
      stamps.map((createdAt, i) => ({ author: "agent", message: `step ${i}`, messageType: "building", createdAt }));
    const base = stateFromResult("build_start_agent", { projectId: "p-one", status: "init" }, false, "", {}, now);
    // A simulated upstream: 17:03 at 16:55.
    const first = applyAgentStatus(
      base,
      { status: "init", realtimeConversation: conversation("2026-11-28T16:50:00Z", "2026-11-28T17:03:00Z") },
      now,
    );
    const shown = (state: typeof first) => state.messages.map((m) => new Date(m.at!).toISOString());
    expect(shown(first)).toEqual(["2026-11-28T16:50:00.000Z", "2026-11-28T16:55:00.000Z"]);
    const later = applyAgentStatus(
      first,
      {
        status: "init",
        realtimeConversation: conversation("2026-11-28T16:50:00Z", "2026-11-28T17:03:00Z", "2026-11-28T17:20:00Z"),
      },
      now + 60_000,
    );
    expect(shown(later)).toEqual(["2026-11-28T16:50:00.000Z", "2026-11-28T16:55:00.000Z", "2026-11-28T16:56:00.000Z"]);
    for (const m of later.messages) expect(Date.parse(m.at!)).toBeLessThanOrEqual(now + 60_000);
  });

  it("reports a launch whose agent did not start as failed, with the reason", () => {
    const state = stateFromResult(
      "build_launch_project",
      { projectId: "p-one", agent: { started: false, message: "Not enough credits" } },
      false,
      "",
    );
    expect(state.phase).toBe("failed");
    // Item 20: the next step is the tool, not the service's HTTP path; the service's words stay as a note.
    expect(state.failure).toMatch(/call build_start_agent with the same prompt/);
    expect(state.notes.join(" ")).toContain("Not enough credits");
    expect(nextPoll(state)).toBeNull();
  });

  it("derives the phase from a waitResult: done, failed (an isError result), timed out", () => {
    const done = stateFromResult("build_wait", waitResult({ creditsSpent: 12 }), false, "", {}, 5000);
    expect(done).toMatchObject({ phase: "done", work: "agent", canDeploy: true, credits: { value: 12, scope: "run" } });
    expect(elapsedMs(done, 99_999)).toBe(200_000);
    // A finished wait carries no agent messages: the view reads them once.
    expect(nextPoll(done)?.name).toBe("build_get_agent_status");

    const failed = stateFromResult(
      "build_wait",
      waitResult({ outcome: "failed", message: "The agent run failed: boom" }),
      true,
      "The agent run failed: boom\nNext step: …",
    );
    expect(failed.phase).toBe("failed");
    expect(failed.failure).toContain("boom");

    const deploying = stateFromResult(
      "build_wait",
      waitResult({
        outcome: "timed_out",
        until: "deployment",
        project: project({ deployment: { status: "deploying" } }),
      }),
      false,
      "",
    );
    expect(deploying.phase).toBe("deploying");
    expect(nextPoll(deploying)?.name).toBe("build_get_deployment_status");

    const recovering = stateFromResult(
      "build_wait",
      waitResult({
        outcome: "timed_out",
        until: "versionRecovery",
        project: project({ versionRecovery: { status: "recovering" } }),
      }),
      false,
      "",
    );
    expect(recovering.phase).toBe("recovering");
    expect(nextPoll(recovering)?.name).toBe("build_get_project");
    const importing = stateFromResult(
      "build_wait",
      waitResult({ outcome: "timed_out", until: "import", project: project({ importInProgress: { startedAt: "t" } }) }),
      false,
      "",
    );
    expect(importing.phase).toBe("importing");
  });

  it("an isError result without structured content is a failure with the error text", () => {
    const state = stateFromResult("build_deploy", undefined, true, "409 SERVER_NOT_READY: the dev server is starting");
    expect(state).toMatchObject({ phase: "failed", failure: "409 SERVER_NOT_READY: the dev server is starting" });
  });

  it("follows agent status: running, done with messages and missing secrets, then one project read for preview", () => {
    let state = stateFromResult("build_start_agent", { projectId: "salon-booking", status: "init" }, false, "", {}, 0);
    state = applyPoll(
      state,
      "build_get_agent_status",
      { status: "init", creditsSpent: 4, realtimeConversation: conversation.slice(0, 3) },
      3000,
    );
    expect(state.phase).toBe("agent-running");
    expect(state.secrets.map((s) => s.name)).toEqual(["STRIPE_API_KEY", "MAPS_KEY"]);

    state = applyPoll(
      state,
      "build_get_agent_status",
      { status: "done", creditsSpent: 9, realtimeConversation: conversation },
      6000,
    );
    expect(state).toMatchObject({ phase: "done", canDeploy: true, credits: { value: 9, scope: "run" } });
    expect(state.secrets).toEqual([{ name: "STRIPE_API_KEY", description: "Stripe key" }]);
    expect(state.messages.map((m) => m.text)).toEqual(["Starting", "Needs Stripe", "Got the maps key"]);
    // The elapsed time stops when the work ends.
    expect(elapsedMs(state, 60_000)).toBe(6000);
    expect(nextPoll(state)?.name).toBe("build_get_project");

    state = applyPoll(
      state,
      "build_get_project",
      project({ previewImageUrl: "https://previews.apps.example/p.png" }),
      6100,
    );
    expect(state.previewImageUrl).toBe("https://previews.apps.example/p.png");
    expect(state.productionUrl).toBeUndefined();
    expect(nextPoll(state)).toBeNull();
  });

  it("reads a run ending in an error or limit-reached message as failed", () => {
    const base = stateFromResult("build_start_agent", { projectId: "p-one", status: "init" }, false, "");
    for (const messageType of ["error", "limit-reached"]) {
      const state = applyAgentStatus(base, {
        status: "done",
        realtimeConversation: [{ author: "agent", message: "It broke", messageType }],
      });
      expect(state).toMatchObject({ phase: "failed", failure: "It broke", canDeploy: false });
    }
  });

  it("follows a deployment to success and links production only once it succeeded", () => {
    const agentDone = applyProject(
      { ...stateFromResult("build_wait", waitResult({}), false, ""), needsMessages: false },
      project({ previewImageUrl: "https://p.example/1.png" }),
    );
    let state = carryOver(
      agentDone,
      stateFromResult("build_deploy", { projectId: "salon-booking", status: "deploying" }, false, ""),
    );
    expect(state).toMatchObject({
      phase: "deploying",
      work: "deployment",
      previewImageUrl: "https://p.example/1.png",
      canDeploy: false,
    });
    state = applyDeployment(state, { status: "deploying" });
    expect(state.phase).toBe("deploying");
    state = applyDeployment(state, { status: "success" });
    expect(state.phase).toBe("done");
    expect(nextPoll(state)?.name).toBe("build_get_project");
    state = applyPoll(state, "build_get_project", project({ deployment: { status: "success" } }));
    expect(state.productionUrl).toBe("https://salon-booking.apps.example/");
    expect(applyDeployment(state, { status: "error" }).phase).toBe("failed");
  });

  it("never takes a non-https preview image", () => {
    const state = applyProject(
      stateFromResult("build_wait", waitResult({}), false, ""),
      project({ previewImageUrl: "javascript:alert(1)" }),
    );
    expect(state.previewImageUrl).toBeUndefined();
  });

  // T1: the old view took a `done` left by the previous run as this run's end ("Agent finished", deploy enabled).
  it("does not end a started run on the previous run's done", () => {
    const startedAt = "2026-11-26T10:00:00.000Z";
    const t = Date.parse(startedAt);
    let state = stateFromResult(
      "build_start_agent",
      { projectId: "salon-booking", status: "init", startedAt },
      false,
      "",
      {},
      t,
    );
    const previous = {
      status: "done",
      startedAt: "2026-11-19T09:00:00.000Z",
      realtimeConversation: [{ author: "agent", message: "Old run done", messageType: "finished" }],
    };
    state = applyPoll(state, "build_get_agent_status", previous, t + 3000);
    expect(state).toMatchObject({ phase: "agent-running", canDeploy: false });
    expect(nextPoll(state)?.name).toBe("build_get_agent_status");
    // This run's own done (it started after the call) ends it.
    state = applyPoll(
      state,
      "build_get_agent_status",
      { ...previous, startedAt: "2026-11-26T10:00:01.000Z" },
      t + 6000,
    );
    expect(state).toMatchObject({ phase: "done", canDeploy: true });
    // A done seen after init is ours whatever its startedAt says.
    let seen = stateFromResult("build_start_agent", { projectId: "p", status: "init", startedAt }, false, "", {}, t);
    seen = applyPoll(seen, "build_get_agent_status", { status: "init", startedAt: null }, t + 1000);
    expect(applyPoll(seen, "build_get_agent_status", previous, t + 2000).phase).toBe("done");
    // Still the previous run a minute later: the view says so instead of following forever.
    const stale = applyPoll(
      stateFromResult("build_start_agent", { projectId: "p", status: "init", startedAt }, false, "", {}, t),
      "build_get_agent_status",
      previous,
      t + 61_000,
    );
    // build_wait's own verdict (completion.ts): nothing to follow, said as such.
    expect(stale).toMatchObject({ phase: "idle", canDeploy: false, failure: expect.stringMatching(/never showed/) });
    expect(nextPoll(stale)).toBeNull();
  });

  // Issue 29 (T2): the old view reset a recovery wait that went on to "recovering", and its next
  // project read, a cached snapshot from before the call (versionRecovery: null), became "Version
  // recovered": the next deploy then published the old version.
  it("does not say 'Version recovered' on a stale null read after a recovery wait that went on", () => {
    const since = "2026-11-26T10:00:00.000Z";
    const t = Date.parse(since);
    let state = stateFromResult(
      "build_wait",
      waitResult({ outcome: "timed_out", until: "versionRecovery", project: project({ versionRecovery: null }) }),
      false,
      "",
      { projectId: "salon-booking", until: "versionRecovery", since },
      t + 3000,
    );
    state = applyPoll(state, "build_get_project", project({ versionRecovery: null }), t + 6000);
    expect(doneLabel(state)).not.toBe("Version recovered");
    expect(state.phase).toBe("recovering");
    // Seen running, then null: now it has ended.
    state = applyPoll(state, "build_get_project", project({ versionRecovery: { status: "recovering" } }), t + 9000);
    state = applyPoll(state, "build_get_project", project({ versionRecovery: null }), t + 12_000);
    expect(doneLabel(state)).toBe("Version recovered");
  });

  // Issue 29 (T3): the old view took any null import lock for done, failed imports included.
  it("does not say 'Import finished' for an import whose lock went null without a live server", () => {
    let state = stateFromResult(
      "build_wait",
      waitResult({
        outcome: "timed_out",
        until: "import",
        project: project({ importInProgress: { startedAt: "2026-11-26T10:00:01.000Z" } }),
      }),
      false,
      "",
      { projectId: "salon-booking", until: "import" },
    );
    expect(state.phase).toBe("importing");
    state = applyPoll(
      state,
      "build_get_project",
      project({ importInProgress: null, agentServerStatus: "Archived", previewImageUrl: undefined }),
    );
    expect(doneLabel(state)).not.toBe("Import finished");
    expect(state).toMatchObject({ phase: "failed", failure: expect.stringMatching(/most likely failed/) });
  });

  // Issue 29: an idle build_wait (nothing ran) showed "Recovering…", then "Version recovered".
  it("shows a recovery build_wait found nothing to wait for as such, and follows nothing", () => {
    const state = stateFromResult(
      "build_wait",
      waitResult({
        outcome: "idle",
        until: "versionRecovery",
        message: "No version recovery is running: nothing to wait for.",
        project: project({ versionRecovery: null }),
      }),
      false,
      "",
      { projectId: "salon-booking", until: "versionRecovery" },
    );
    expect(state.phase).not.toBe("recovering");
    expect(doneLabel(state)).not.toBe("Version recovered");
    expect(state).toMatchObject({ phase: "idle", failure: "No version recovery is running: nothing to wait for." });
    expect(nextPoll(state)).toBeNull();
  });

  // T4: the old view showed "Deployed" for last week's success (or a null status) right after build_deploy.
  it("does not end a deployment on the previous deployment's success or on null", () => {
    const startedAt = "2026-11-26T10:00:00.000Z";
    const t = Date.parse(startedAt);
    let state = stateFromResult(
      "build_deploy",
      { projectId: "salon-booking", status: "deploying", startedAt },
      false,
      "",
      {},
      t,
    );
    state = applyPoll(
      state,
      "build_get_deployment_status",
      { status: "success", createdAt: "2026-11-19T09:00:00.000Z" },
      t + 3000,
    );
    expect(state.phase).toBe("deploying");
    state = applyPoll(state, "build_get_deployment_status", { status: null, createdAt: null }, t + 4000);
    expect(state.phase).toBe("deploying");
    state = applyPoll(
      state,
      "build_get_project",
      project({ deployment: { status: "success", createdAt: "2026-11-19T09:00:00.000Z" } }),
      t + 5000,
    );
    expect(state.phase).toBe("deploying");
    expect(state.productionUrl).toBeUndefined();
    state = applyPoll(
      state,
      "build_get_deployment_status",
      { status: "success", createdAt: "2026-11-26T10:00:02.000Z" },
      t + 9000,
    );
    expect(state.phase).toBe("done");
    // An error seen after deploying is this deployment's.
    let failing = stateFromResult("build_deploy", { projectId: "p", status: "deploying", startedAt }, false, "", {}, t);
    failing = applyPoll(
      failing,
      "build_get_deployment_status",
      { status: "deploying", createdAt: "2026-11-19T09:00:00.000Z" },
      t + 1000,
    );
    expect(
      applyPoll(
        failing,
        "build_get_deployment_status",
        { status: "error", createdAt: "2026-11-19T09:00:00.000Z" },
        t + 2000,
      ).phase,
    ).toBe("failed");
  });

  // §4: the old view trusted isProvided, which is practically always false: a set secret stayed "needed".
  it("drops a needed secret once the project's details list it, and prefers the tool's secretsMissing", () => {
    const asking = [
      {
        author: "agent",
        message: "Needs Stripe",
        messageType: "building",
        secretKeysNeeded: { STRIPE_API_KEY: { isProvided: false } },
      },
    ];
    let state = stateFromResult("build_start_agent", { projectId: "p", status: "init" }, false, "");
    state = applyPoll(state, "build_get_agent_status", { status: "init", realtimeConversation: asking });
    expect(state.secrets.map((x) => x.name)).toEqual(["STRIPE_API_KEY"]);
    state = applyPoll(state, "build_get_project", project({ secrets: [{ _id: "s1", secretName: "STRIPE_API_KEY" }] }));
    expect(state.secrets).toEqual([]);
    expect(
      applyPoll(state, "build_get_agent_status", { status: "init", realtimeConversation: asking }).secrets,
    ).toEqual([]);
    const fresh = stateFromResult("build_start_agent", { projectId: "p", status: "init" }, false, "");
    expect(
      applyPoll(fresh, "build_get_agent_status", { status: "init", realtimeConversation: asking, secretsMissing: [] })
        .secrets,
    ).toEqual([]);
  });

  it("keeps the last provided/missing state of each secret", () => {
    expect(secretsNeeded(conversation).map((s) => s.name)).toEqual(["STRIPE_API_KEY"]);
    expect(secretsNeeded("nope")).toEqual([]);
  });
});

describe("views/build-console: poller", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  function counting(outcomes: TickOutcome[] = []) {
    const calls: number[] = [];
    const tick = async (): Promise<TickOutcome> => {
      calls.push(Date.now());
      return outcomes.shift() ?? "continue";
    };
    return { calls, tick };
  }

  it("ticks every interval, one at a time, until stopped", async () => {
    const { calls, tick } = counting();
    const poller = new Poller(tick, { intervalMs: 3000 });
    poller.start();
    await vi.advanceTimersByTimeAsync(2999);
    expect(calls).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    await vi.advanceTimersByTimeAsync(6000);
    expect(calls).toHaveLength(3);
    poller.stop();
    await vi.advanceTimersByTimeAsync(30_000);
    expect(calls).toHaveLength(3);
    expect(poller.active).toBe(false);
  });

  it("does not tick while paused (view hidden) and ticks at once on resume", async () => {
    const { calls, tick } = counting();
    const poller = new Poller(tick, { intervalMs: 1000 });
    poller.start();
    poller.pause();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(calls).toHaveLength(0);
    poller.resume();
    await vi.advanceTimersByTimeAsync(0);
    expect(calls).toHaveLength(1);
  });

  it("stops by itself when a tick says so, and goes on at once after 'again'", async () => {
    const { calls, tick } = counting(["again", "stop"]);
    const onStop = vi.fn();
    const poller = new Poller(tick, { intervalMs: 1000, onStop });
    poller.start(0);
    // Both ticks within a few ms: "again" does not wait for the 1 s interval.
    for (let i = 0; i < 5; i++) await vi.advanceTimersByTimeAsync(1);
    expect(calls).toHaveLength(2);
    expect(onStop).toHaveBeenCalledWith("done");
    await vi.advanceTimersByTimeAsync(10_000);
    expect(calls).toHaveLength(2);
  });

  it("backs off after failures and gives up after maxFailures in a row", async () => {
    const { calls, tick } = counting(["retry", "retry", "retry"]);
    const onStop = vi.fn();
    const poller = new Poller(tick, { intervalMs: 1000, maxFailures: 3, onStop });
    poller.start(0);
    await vi.advanceTimersByTimeAsync(0); // fails once: next in 2 s
    await vi.advanceTimersByTimeAsync(1999);
    expect(calls).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1); // fails twice: next in 4 s
    await vi.advanceTimersByTimeAsync(4000); // third failure: gives up
    expect(calls).toHaveLength(3);
    expect(onStop).toHaveBeenCalledWith("failures");
  });
});

// ---- fit card ----

const CHART = {
  XS: { chest: [80, 86], waist: [66, 72] },
  S: { chest: [86, 92], waist: [72, 78] },
  M: { chest: [92, 100], waist: [78, 86] },
  L: { chest: [100, 108], waist: [86, 94] },
};

describe("views/fit-card: bands", () => {
  it("reads a size chart, dropping malformed bands", () => {
    const chart = readSizeChart({
      ...CHART,
      XL: { chest: [116, 108] },
      XXL: "big",
      XXXL: { chest: ["a", 1], waist: [1, 2, 3] },
    });
    expect(Object.keys(chart!)).toEqual(["XS", "S", "M", "L"]);
    expect(readSizeChart(null)).toBeNull();
    expect(readSizeChart({ M: { chest: "92-100" } })).toBeNull();
  });

  it("orders sizes as the item lists them, else by their lower bounds", () => {
    const chart = readSizeChart({ L: CHART.L, XS: CHART.XS, M: CHART.M, S: CHART.S })!;
    expect(sizeOrder(chart)).toEqual(["XS", "S", "M", "L"]);
    expect(sizeOrder(chart, "L, M,S,XS,XXL")).toEqual(["L", "M", "S", "XS"]);
  });

  it("places each measurement in its band, with the recommended and alternative sizes marked", () => {
    const rows = chartRows(
      readSizeChart(CHART)!,
      { chest: 96, waist: 82, height: 178 },
      { recommended: "M", alternative: "L", fitWords: { chest: "comfortable" } },
    );
    expect(rows.map((r) => r.measure)).toEqual(["chest", "waist"]);
    const chest = rows[0];
    expect(chest.placement).toEqual({ size: "M", offset: 0, position: "inside" });
    const band = chest.bands.find((b) => b.role === "recommended")!;
    expect(band).toMatchObject({ size: "M", lo: 92, hi: 100 });
    expect(chest.bands.find((b) => b.role === "alternative")?.size).toBe("L");
    expect(chest.fitWord).toBe("comfortable");
    expect(chest.domain[0]).toBeLessThan(80);
    expect(chest.domain[1]).toBeGreaterThan(108);
    expect(rows[1].placement).toMatchObject({ size: "M", position: "inside" });
  });

  it("says where a measurement outside every band falls", () => {
    const bands = chartRows(readSizeChart(CHART)!, {}, {})[0].bands;
    expect(placeValue(bands, 70)).toEqual({ position: "below" });
    expect(placeValue(bands, 120)).toEqual({ position: "above" });
    expect(placeValue(bands, 100).size).toBe("M");
    expect(
      placeValue(
        [
          { size: "A", lo: 1, hi: 2, role: "other" },
          { size: "B", lo: 3, hi: 4, role: "other" },
        ],
        2.5,
      ),
    ).toEqual({ position: "between" });
    expect(chartRows(readSizeChart(CHART)!, {}, {})[0].domain[1]).toBeGreaterThan(108);
  });

  it("normalises confidence, fit words and measurements", () => {
    expect(confidencePercent(0.82)).toBe(82);
    expect(confidencePercent(82)).toBe(82);
    expect(confidencePercent("high")).toBeUndefined();
    expect(fitWordsOf({ chest_fit: "fitted", waist_fit: "n/a", overall: "comfortable" })).toEqual({
      chest: "fitted",
      overall: "comfortable",
    });
    expect(measurementsOf(undefined, { chest: 96, waist: "82" })).toEqual({ chest: 96 });
    expect(measurementsOf({ hips: 97 }, { chest: 96 })).toEqual({ hips: 97 });
  });

  it("takes the item's chart from the result when the tool includes it", () => {
    expect(
      itemFromResult({ recommended_size: "M", item: { name: "Tee", available_sizes: "XS,S,M,L", size_chart: CHART } }),
    ).toMatchObject({ name: "Tee", availableSizes: "XS,S,M,L" });
    expect(itemFromResult({ recommended_size: "M", size_chart: CHART }).chart).not.toBeNull();
    expect(itemFromResult({ recommended_size: "M" }).chart).toBeNull();
  });
});
