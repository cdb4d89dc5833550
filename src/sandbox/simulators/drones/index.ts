import { Router, bearerToken, type SimRequest, type SimResponse } from "../../router.js";
import type { StartSimulator } from "../../simulator.js";

/**
 * In-memory simulator of the Drone Fleet Data API (docs/openapi/drones.yaml).
 *
 * Choices where the spec says "not shown" are marked "Not shown in the spec:" below. All seed
 * data is literal (no randomness), so tests can compute expectations from the exported constants.
 */

/** Not shown in the spec: allowed drone statuses. battery_level is a percentage 0–100. */
type DroneStatus = "active" | "idle" | "charging" | "maintenance" | "offline";
type MissionStatus = "planned" | "in_progress" | "completed" | "aborted";
type AlertSeverity = "info" | "warning" | "critical";
type AlertStatus = "open" | "acknowledged" | "resolved";

const ALERT_STATUSES: readonly AlertStatus[] = ["open", "acknowledged", "resolved"];
export const LIVE_KEY_PREFIX = "dfk_live_";

export interface Drone {
  _id: string;
  name: string;
  status: DroneStatus;
  battery_level: number;
  latitude: number;
  longitude: number;
  model: string;
  serial_number: string;
  firmware_version: string;
  home_base: string;
  last_seen: string;
}

interface Waypoint {
  latitude: number;
  longitude: number;
  altitude_m: number;
}

export interface Mission {
  _id: string;
  name: string;
  drone_id: string;
  type: string;
  status: MissionStatus;
  scheduled_for: string;
  started_at: string | null;
  ended_at: string | null;
  waypoints: Waypoint[];
  created_at: string;
}

export interface Alert {
  _id: string;
  drone_id: string;
  mission_id?: string;
  severity: AlertSeverity;
  type: string;
  message: string;
  status: AlertStatus;
  created_at: string;
  updated_at: string;
  /** PUT merges arbitrary fields into an alert. */
  [field: string]: unknown;
}

interface ApiKey {
  _id: string;
  name: string;
  key: string;
  created_at: string;
  last_used_at: string | null;
  scopes: string[];
  webhook?: { url: string; signing_secret: string; events: string[] };
}

interface DronesSimulatorOptions {
  apiKey: string;
}

// ---------------------------------------------------------------------------------------------
// Seed data
// ---------------------------------------------------------------------------------------------

/** Reference "now" of the seed data; timestamps are expressed as minutes before it. */
const SEED_TIME = Date.parse("2025-06-14T10:00:00.000Z");

function minutesAgo(minutes: number): string {
  return new Date(SEED_TIME - minutes * 60_000).toISOString();
}

/** Mongo-like 24-hex ids: a per-collection 16-hex prefix and an 8-hex sequence number. */
function objectId(prefix: string, n: number): string {
  return prefix + n.toString(16).padStart(8, "0");
}

export const CITIES = {
  Madrid: { latitude: 40.4168, longitude: -3.7038 },
  Barcelona: { latitude: 41.3874, longitude: 2.1686 },
  Lisbon: { latitude: 38.7223, longitude: -9.1393 },
  Paris: { latitude: 48.8566, longitude: 2.3522 },
  London: { latitude: 51.5074, longitude: -0.1278 },
} as const;
export type City = keyof typeof CITIES;

const MODELS = {
  m350: "DJI Matrice 350 RTK",
  m3e: "DJI Mavic 3 Enterprise",
  x10: "Skydio X10",
  anafi: "Parrot ANAFI USA",
  evo: "Autel EVO Max 4T",
} as const;

const FIRMWARE: Record<keyof typeof MODELS, string> = {
  m350: "v09.01.02",
  m3e: "v10.01.06",
  x10: "v2.4.1",
  anafi: "v1.10.4",
  evo: "v1.3.8",
};

type DroneRow = [
  name: string,
  model: keyof typeof MODELS,
  status: DroneStatus,
  battery: number,
  city: City,
  dLat: number,
  dLon: number,
  seenMinutesAgo: number,
];

// prettier-ignore
const DRONE_ROWS: DroneRow[] = [
  ["Falcon-01", "m350", "active", 82, "Madrid", 0.012, -0.008, 1],
  ["Falcon-02", "m350", "active", 64, "Madrid", -0.021, 0.015, 1],
  ["Falcon-03", "m3e", "idle", 97, "Madrid", 0.004, 0.031, 12],
  ["Falcon-04", "m3e", "charging", 12, "Madrid", -0.006, -0.002, 5],
  ["Falcon-05", "x10", "active", 45, "Madrid", 0.035, -0.027, 2],
  ["Falcon-06", "x10", "maintenance", 58, "Madrid", -0.015, -0.041, 2880],
  ["Falcon-07", "m350", "active", 18, "Madrid", 0.027, 0.019, 1],
  ["Falcon-08", "anafi", "idle", 76, "Madrid", -0.032, 0.006, 30],
  ["Falcon-09", "anafi", "offline", 7, "Madrid", 0.018, -0.036, 190],
  ["Falcon-10", "evo", "active", 91, "Madrid", 0.009, 0.044, 1],
  ["Heron-01", "m350", "active", 73, "Barcelona", 0.011, 0.014, 1],
  ["Heron-02", "m3e", "idle", 100, "Barcelona", -0.008, -0.012, 45],
  ["Heron-03", "m3e", "charging", 19, "Barcelona", 0.003, 0.006, 4],
  ["Heron-04", "x10", "active", 55, "Barcelona", 0.024, -0.019, 1],
  ["Heron-05", "evo", "maintenance", 34, "Barcelona", -0.017, 0.022, 1440],
  ["Heron-06", "x10", "active", 20, "Barcelona", 0.016, 0.005, 1],
  ["Heron-07", "anafi", "idle", 88, "Barcelona", -0.027, -0.004, 60],
  ["Heron-08", "evo", "offline", 41, "Barcelona", 0.031, 0.028, 720],
  ["Kestrel-01", "m350", "active", 67, "Lisbon", -0.019, 0.012, 1],
  ["Kestrel-02", "m3e", "active", 5, "Lisbon", 0.013, 0.007, 1],
  ["Kestrel-03", "m3e", "idle", 93, "Lisbon", 0.006, -0.021, 20],
  ["Kestrel-04", "x10", "idle", 49, "Lisbon", -0.012, -0.038, 90],
  ["Kestrel-05", "anafi", "maintenance", 71, "Lisbon", 0.022, 0.018, 4320],
  ["Kestrel-06", "evo", "active", 38, "Lisbon", 0.004, 0.029, 1],
  ["Kestrel-07", "evo", "idle", 84, "Lisbon", -0.028, 0.003, 15],
  ["Kestrel-08", "m350", "charging", 9, "Lisbon", 0.009, -0.011, 3],
  ["Osprey-01", "m3e", "active", 14, "Paris", 0.014, -0.017, 1],
  ["Osprey-02", "m350", "active", 88, "Paris", -0.011, 0.023, 1],
  ["Osprey-03", "x10", "idle", 62, "Paris", 0.025, 0.009, 35],
  ["Osprey-04", "anafi", "charging", 26, "Paris", -0.004, -0.006, 6],
  ["Osprey-05", "evo", "offline", 3, "Paris", 0.033, -0.029, 200],
  ["Osprey-06", "x10", "active", 77, "Paris", -0.022, -0.033, 1],
  ["Osprey-07", "m350", "maintenance", 100, "Paris", 0.007, 0.041, 10080],
  ["Osprey-08", "m3e", "idle", 95, "Paris", -0.031, 0.015, 25],
  ["Swift-01", "m350", "active", 95, "London", 0.013, -0.021, 1],
  ["Swift-02", "x10", "idle", 81, "London", -0.009, 0.017, 40],
];

function round6(n: number): number {
  return Math.round(n * 1e6) / 1e6;
}

export const FLEET: readonly Drone[] = DRONE_ROWS.map(([name, model, status, battery, city, dLat, dLon, seen], i) => ({
  _id: objectId("665f1c2a7d3e4b1a", i + 1),
  name,
  status,
  battery_level: battery,
  latitude: round6(CITIES[city].latitude + dLat),
  longitude: round6(CITIES[city].longitude + dLon),
  model: MODELS[model],
  serial_number: `SN-${model.toUpperCase()}-${String(1000 + i * 37)}`,
  firmware_version: FIRMWARE[model],
  home_base: city,
  last_seen: minutesAgo(seen),
}));

function droneId(name: string): string {
  const drone = FLEET.find((d) => d.name === name);
  if (!drone) throw new Error(`Seed data references unknown drone ${name}`);
  return drone._id;
}

/** Three waypoints fanning out from the drone's position, climbing as they go. */
function waypointsFrom(droneName: string): Waypoint[] {
  const d = FLEET.find((x) => x.name === droneName)!;
  return [
    { latitude: d.latitude, longitude: d.longitude, altitude_m: 60 },
    { latitude: round6(d.latitude + 0.005), longitude: round6(d.longitude + 0.004), altitude_m: 80 },
    { latitude: round6(d.latitude + 0.009), longitude: round6(d.longitude - 0.003), altitude_m: 100 },
  ];
}

type MissionRow = [name: string, drone: string, type: string, status: MissionStatus, startedMinutesAgo: number];

// prettier-ignore
const MISSION_ROWS: MissionRow[] = [
  ["Tagus bridge cable inspection", "Kestrel-01", "inspection", "in_progress", 25],
  ["Retiro park canopy survey", "Falcon-01", "survey", "in_progress", 40],
  ["Port Vell perimeter patrol", "Heron-01", "patrol", "in_progress", 15],
  ["Seine embankment mapping", "Osprey-02", "mapping", "in_progress", 55],
  ["Getafe solar farm thermal scan", "Falcon-05", "inspection", "completed", 300],
  ["Montjuïc cable car tower check", "Heron-04", "inspection", "completed", 420],
  ["Belém tower facade survey", "Kestrel-04", "survey", "completed", 1500],
  ["La Défense rooftop inspection", "Osprey-06", "inspection", "completed", 260],
  ["Thames Barrier gate inspection", "Swift-02", "inspection", "planned", -180],
  ["Casa de Campo wildfire watch", "Falcon-07", "monitoring", "aborted", 70],
  ["Sagrada Família crowd overwatch", "Heron-06", "monitoring", "in_progress", 35],
  ["Alfama rooftop delivery trial", "Kestrel-02", "delivery", "aborted", 50],
  ["Bois de Boulogne tree census", "Osprey-03", "survey", "planned", -1440],
  ["M-30 traffic monitoring", "Falcon-10", "monitoring", "in_progress", 20],
  ["Canary Wharf glass facade survey", "Swift-01", "survey", "completed", 200],
];

/** Completed missions ran 45 minutes; aborted ones stopped after 30. */
function endedAt(status: MissionStatus, started: number): string | null {
  if (status === "completed") return minutesAgo(started - 45);
  if (status === "aborted") return minutesAgo(started - 30);
  return null;
}

export const MISSIONS: readonly Mission[] = MISSION_ROWS.map(([name, drone, type, status, started], i) => ({
  _id: objectId("665f2d3b8e4f5c2b", i + 1),
  name,
  drone_id: droneId(drone),
  type,
  status,
  // Negative "minutes ago" means scheduled in the future.
  scheduled_for: minutesAgo(started),
  started_at: status === "planned" ? null : minutesAgo(started),
  ended_at: endedAt(status, started),
  waypoints: waypointsFrom(drone),
  created_at: minutesAgo(Math.max(started, 0) + 1440),
}));

function missionId(name: string): string {
  const mission = MISSIONS.find((m) => m.name === name);
  if (!mission) throw new Error(`Seed data references unknown mission ${name}`);
  return mission._id;
}

type AlertRow = [
  drone: string,
  mission: string | null,
  severity: AlertSeverity,
  type: string,
  message: string,
  status: AlertStatus,
  createdMinutesAgo: number,
  updatedMinutesAgo: number,
];

// prettier-ignore
const ALERT_ROWS: AlertRow[] = [
  [
    "Falcon-07",
    "Casa de Campo wildfire watch",
    "critical",
    "low_battery",
    "Battery at 18% during mission; returning to home point",
    "acknowledged",
    42,
    38,
  ],
  [
    "Kestrel-02",
    "Alfama rooftop delivery trial",
    "critical",
    "low_battery",
    "Battery at 5%; mission aborted and emergency landing started",
    "open",
    22,
    22,
  ],
  ["Falcon-04", null, "warning", "low_battery", "Battery at 12%; charging slower than expected", "open", 30, 30],
  ["Osprey-01", null, "warning", "low_battery", "Battery at 14% while active", "open", 8, 8],
  ["Osprey-05", null, "critical", "signal_loss", "No telemetry received for more than 3 hours", "open", 190, 190],
  ["Falcon-09", null, "critical", "signal_loss", "No telemetry received since 06:50 UTC", "open", 180, 180],
  [
    "Heron-01",
    "Port Vell perimeter patrol",
    "warning",
    "geofence_breach",
    "Crossed the port's restricted zone boundary by 40 m",
    "acknowledged",
    12,
    10,
  ],
  [
    "Falcon-06",
    null,
    "info",
    "maintenance_due",
    "Propeller replacement due after 200 flight hours",
    "acknowledged",
    2900,
    2880,
  ],
  ["Heron-05", null, "warning", "motor_temperature", "Motor 3 reached 78 °C during hover", "resolved", 1500, 1440],
  ["Kestrel-05", null, "info", "maintenance_due", "Scheduled IMU calibration", "open", 4400, 4400],
  ["Osprey-07", null, "info", "firmware_update", "Firmware v09.01.03 is available", "open", 10100, 10100],
  [
    "Kestrel-01",
    "Tagus bridge cable inspection",
    "warning",
    "wind_warning",
    "Gusts of 42 km/h measured over the river",
    "open",
    18,
    18,
  ],
  ["Osprey-02", "Seine embankment mapping", "info", "waypoint_reached", "Waypoint 2 of 3 reached", "resolved", 30, 29],
  [
    "Heron-06",
    "Sagrada Família crowd overwatch",
    "warning",
    "low_battery",
    "Battery at 20%; consider returning soon",
    "open",
    3,
    3,
  ],
  [
    "Falcon-10",
    "M-30 traffic monitoring",
    "warning",
    "collision_avoidance",
    "Obstacle avoidance engaged near an overpass",
    "acknowledged",
    9,
    7,
  ],
  [
    "Swift-01",
    "Canary Wharf glass facade survey",
    "info",
    "mission_completed",
    "Mission completed with 214 images captured",
    "resolved",
    155,
    150,
  ],
  ["Heron-08", null, "critical", "signal_loss", "No telemetry received for 12 hours", "acknowledged", 720, 600],
  [
    "Falcon-05",
    "Getafe solar farm thermal scan",
    "info",
    "mission_completed",
    "Mission completed; 3 hot spots flagged",
    "resolved",
    255,
    250,
  ],
  ["Kestrel-08", null, "warning", "low_battery", "Battery at 9%; charging", "open", 5, 5],
  ["Osprey-04", null, "warning", "charging_stalled", "Charging stalled at 26%", "open", 6, 6],
];

export const ALERTS: readonly Alert[] = ALERT_ROWS.map(
  ([drone, mission, severity, type, message, status, created, updated], i) => ({
    _id: objectId("665f3e4c9f5a6d3c", i + 1),
    drone_id: droneId(drone),
    ...(mission ? { mission_id: missionId(mission) } : {}),
    severity,
    type,
    message,
    status,
    created_at: minutesAgo(created),
    updated_at: minutesAgo(updated),
  }),
);

const READ_SCOPES = ["drones:read", "missions:read", "alerts:read"];

/** The real upstream exposes full key values and webhook secrets; the MCP server must mask them. */
export const API_KEYS: readonly ApiKey[] = [
  {
    _id: objectId("665f4f5da06b7e4d", 1),
    name: "Production integration",
    key: "dfk_live_7Hq2mZ9xR4tLw8vN3bK6cP1sD5fG0jYa",
    created_at: "2025-01-20T08:15:00.000Z",
    last_used_at: minutesAgo(1),
    scopes: [...READ_SCOPES, "alerts:write"],
  },
  {
    _id: objectId("665f4f5da06b7e4d", 2),
    name: "Analytics export",
    key: "dfk_live_Lp4Wn8Qe2Rt6Yu0Io3As7Df1Gh5Jk9Zx",
    created_at: "2025-03-02T14:40:00.000Z",
    last_used_at: minutesAgo(360),
    scopes: [...READ_SCOPES],
  },
  {
    _id: objectId("665f4f5da06b7e4d", 3),
    name: "Ops dashboard webhook",
    key: "dfk_live_Vb3Nm7Kl1Jh5Gf9Ds2Aq6We0Rt4Yu8Io",
    created_at: "2025-04-11T09:05:00.000Z",
    last_used_at: minutesAgo(15),
    scopes: ["alerts:read", "alerts:write"],
    webhook: {
      url: "https://ops.example.com/hooks/drone-fleet",
      signing_secret: "whsec_9fK2pL7qX4mN8rT1vB6cZ3wY5sH0dJ2g",
      events: ["alert.created", "alert.updated"],
    },
  },
  {
    _id: objectId("665f4f5da06b7e4d", 4),
    name: "Legacy staging",
    key: "dfk_live_Qw8Er4Ty2Ui6Op0As3Df7Gh1Jk5Lz9Xc",
    created_at: "2024-11-05T17:30:00.000Z",
    last_used_at: null,
    scopes: ["drones:read"],
  },
];

// ---------------------------------------------------------------------------------------------
// Responses. Not shown in the spec: failure shape, codes and statuses. We answer
// `{ ok: false, error: { code, message } }`, the same shape as the sizing simulator.
// ---------------------------------------------------------------------------------------------

function success(data: unknown): SimResponse {
  return { status: 200, body: { ok: true, data } };
}

function failure(status: number, code: string, message: string): SimResponse {
  return { status, body: { ok: false, error: { code, message } } };
}

function notFound(kind: string, id: string): SimResponse {
  return failure(404, "NOT_FOUND", `${kind} ${id} not found`);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

// ---------------------------------------------------------------------------------------------
// Simulator
// ---------------------------------------------------------------------------------------------

export class DronesSimulator {
  readonly router: Router;
  private readonly apiKey: string;
  private readonly fleet: Drone[] = structuredClone([...FLEET]);
  private readonly missions: Mission[] = structuredClone([...MISSIONS]);
  private readonly alerts: Alert[] = structuredClone([...ALERTS]);
  private readonly apiKeys: ApiKey[] = structuredClone([...API_KEYS]);

  constructor(options: DronesSimulatorOptions) {
    this.apiKey = options.apiKey;
    this.router = new Router({
      authorize: (req) => this.authorize(req),
      // The router parses the body before authorizing, so re-check the key to keep 401 first.
      badJson: (req) => this.authorize(req) ?? failure(400, "INVALID_JSON", "Request body is not valid JSON"),
      notFound: (req) => failure(404, "NOT_FOUND", `No route ${req.method} ${req.path}`),
    });
    // Not shown in the spec: query parameters, filtering and paging. Lists ignore the query.
    this.router
      .on("GET", "/api/drones", () => success(this.fleet))
      .on("GET", "/api/drones/:id", (req) => this.getOne(this.fleet, "Drone", req.params.id))
      .on("GET", "/api/missions", () => success(this.missions))
      .on("GET", "/api/missions/:id", (req) => this.getOne(this.missions, "Mission", req.params.id))
      .on("GET", "/api/alerts", () => success(this.alerts))
      .on("GET", "/api/alerts/:id", (req) => this.getOne(this.alerts, "Alert", req.params.id))
      .on("PUT", "/api/alerts/:id", (req) => this.updateAlert(req))
      .on("GET", "/api/api-keys", () => success(this.apiKeys));
  }

  /** The known fleet, for test assertions. */
  drones(): readonly Drone[] {
    return this.fleet;
  }

  private authorize(req: SimRequest): SimResponse | undefined {
    if (bearerToken(req) === this.apiKey) return undefined;
    return failure(401, "UNAUTHORIZED", "Invalid or missing API key");
  }

  private getOne(items: readonly { _id: string }[], kind: string, id: string): SimResponse {
    const found = items.find((item) => item._id === id);
    return found ? success(found) : notFound(kind, id);
  }

  /**
   * Not shown in the spec: the update body. We merge the body's fields into the alert, ignoring
   * `_id`, validate `status` when present, and stamp `updated_at`.
   */
  private updateAlert(req: SimRequest): SimResponse {
    const alert = this.alerts.find((a) => a._id === req.params.id);
    if (!alert) return notFound("Alert", req.params.id);
    const body = req.body;
    if (!isPlainObject(body)) return failure(400, "VALIDATION_ERROR", "Request body must be a JSON object");
    if ("status" in body && !(ALERT_STATUSES as readonly unknown[]).includes(body.status)) {
      return failure(400, "VALIDATION_ERROR", `status must be one of ${ALERT_STATUSES.join(", ")}`);
    }
    const { _id: _ignored, ...changes } = body;
    Object.assign(alert, changes, { updated_at: new Date().toISOString() });
    return success(alert);
  }
}

/** One account of this simulator, as the sandbox starts it (declaration.ts). */
export const startDronesSimulator: StartSimulator<DronesSimulator, object> = (apiKey) =>
  new DronesSimulator({ apiKey });
