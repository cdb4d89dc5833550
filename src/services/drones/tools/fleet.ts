import { z } from "zod";
import { ToolError } from "../../../core/tools/tool.js";
import { defineTool } from "../deps.js";
import { viewUri } from "../../../core/service/views.js";
import { fleetSummary, matchesDrone, paginate, type DroneFilter, type DroneLike } from "../fleet.js";
import { hasPosition, nearestTo } from "../geo.js";
import { droneLine, kmText, pageFooter, percentText, quote, recordText, summaryText } from "../render.js";
import * as s from "../schemas.js";

const DEFAULT_NEAREST = 5;
const MAX_NEAREST = 100;

const droneFilters = {
  status: s.word("status", "active"),
  minBattery: s.percent("minBattery").optional().describe("battery_level at least (assumed %)"),
  maxBattery: s.percent("maxBattery").optional().describe("battery_level at most (assumed %)"),
};

function checkRange(f: DroneFilter): void {
  if (f.minBattery !== undefined && f.maxBattery !== undefined && f.minBattery > f.maxBattery) {
    throw new ToolError(
      `minBattery (${f.minBattery}%) is above maxBattery (${f.maxBattery}%): no drone can match. ` +
        `Swap or widen the range.`,
    );
  }
}

function filterText(f: DroneFilter): string {
  const parts = [
    f.status !== undefined ? `status ${f.status}` : "",
    f.minBattery !== undefined ? `battery ≥ ${f.minBattery}%` : "",
    f.maxBattery !== undefined ? `battery ≤ ${f.maxBattery}%` : "",
  ].filter(Boolean);
  return parts.length ? ` matching ${parts.join(", ")}` : "";
}

export function fleetTools() {
  return [
    defineTool({
      name: "drones_list_drones",
      view: viewUri("fleet-map"),
      upstream: "GET /api/drones",
      title: "List drones",
      description:
        "List the fleet's drones (_id, name, status, battery_level, latitude, longitude), filtered " +
        "here, paged (limit, offset).",
      toolset: "drones",
      kind: "read",
      input: { ...droneFilters, ...s.paging },
      output: s.dronePage.extend({
        statusesInFleet: z
          .array(z.string())
          .optional()
          .describe("when nothing matched a status: the statuses the fleet has"),
      }),
      run: async ({ status, minBattery, maxBattery, limit, offset }, ctx) => {
        const filter = { status, minBattery, maxBattery };
        checkRange(filter);
        const all = await ctx.deps.client.listDrones(ctx.signal);
        const page = paginate(
          all.filter((d) => matchesDrone(d, filter)),
          offset ?? 0,
          limit ?? s.DEFAULT_LIMIT,
        );
        const { items, ...rest } = page;
        // The spec names no status values: when a status matches nothing, say which ones exist.
        const statusesInFleet =
          page.matched === 0 && status !== undefined
            ? [...new Set(all.map((d) => d.status).filter((v): v is string => typeof v === "string"))].sort()
            : undefined;
        return {
          drones: items as s.Drone[],
          total: all.length,
          ...rest,
          ...(statusesInFleet ? { statusesInFleet } : {}),
        };
      },
      render: (r, input) => {
        if (r.matched === 0) {
          const known = r.statusesInFleet?.length ? ` The fleet's statuses are: ${r.statusesInFleet.join(", ")}.` : "";
          return `No drones${filterText(input)} (of ${r.total}).${known}`;
        }
        return `${pageFooter(r, `drone(s)${filterText(input)}`)}\n${r.drones.map(droneLine).join("\n")}`;
      },
    }),

    defineTool({
      name: "drones_get_drone",
      upstream: "GET /api/drones/:id",
      title: "Drone details",
      description:
        "One drone by _id, with every field the service sends (status, battery_level (assumed percent), position).",
      toolset: "drones",
      kind: "read",
      input: { id: s.recordId("drone", "drones_list_drones") },
      output: s.drone,
      run: ({ id }, ctx) => ctx.deps.client.getDrone(id, ctx.signal) as Promise<s.Drone>,
      render: (d) => `${droneLine(d).slice(2)}\n${recordText("Drone", d)}`,
    }),

    defineTool({
      name: "drones_fleet_summary",
      view: viewUri("fleet-map"),
      upstream: "computed from GET /api/drones",
      title: "Fleet summary",
      description:
        "Fleet overview computed from the drone list: drone counts by status, drones below a " +
        "battery threshold (default 20%), average battery_level (units not shown; assumed %), and " +
        "the bounding box of all positions (degrees).",
      toolset: "drones",
      kind: "read",
      input: {
        lowBatteryThreshold: s.percent("lowBatteryThreshold").optional().describe("Percent; strictly below it is low"),
      },
      output: s.fleetSummary,
      run: async ({ lowBatteryThreshold }, ctx) =>
        fleetSummary(await ctx.deps.client.listDrones(ctx.signal), lowBatteryThreshold ?? 20),
      render: summaryText,
    }),

    defineTool({
      name: "drones_find_nearest",
      view: viewUri("fleet-map"),
      upstream: "computed from GET /api/drones",
      title: "Nearest drones",
      description: "Drones nearest to a point by great-circle distance (distanceKm), nearest first; optional filters.",
      toolset: "drones",
      kind: "read",
      input: {
        latitude: s.latitude,
        longitude: s.longitude,
        status: droneFilters.status,
        minBattery: droneFilters.minBattery,
        maxDistanceKm: z
          .number({ error: "maxDistanceKm must be a positive number of km" })
          .positive("maxDistanceKm must be a positive number of km")
          .optional()
          .describe("Only drones within this many km"),
        limit: z
          .number({ error: `limit must be a whole number from 1 to ${MAX_NEAREST}` })
          .int(`limit must be a whole number from 1 to ${MAX_NEAREST}`)
          .min(1, `limit must be a whole number from 1 to ${MAX_NEAREST}`)
          .max(MAX_NEAREST, `limit must be a whole number from 1 to ${MAX_NEAREST}`)
          .optional()
          .describe(`How many drones (default ${DEFAULT_NEAREST})`),
      },
      output: s.nearestResult,
      run: async ({ latitude, longitude, status, minBattery, maxDistanceKm, limit }, ctx) => {
        const all = await ctx.deps.client.listDrones(ctx.signal);
        const candidates = all.filter((d) => matchesDrone(d, { status, minBattery }) && hasPosition(d));
        const origin = { latitude, longitude };
        const drones = nearestTo<DroneLike>(origin, candidates, limit ?? DEFAULT_NEAREST, maxDistanceKm) as Array<
          s.Drone & { distanceKm: number }
        >;
        return { origin, drones, count: drones.length, candidates: candidates.length };
      },
      render: (r, input) => {
        const where = `${r.origin.latitude}, ${r.origin.longitude}`;
        if (r.count === 0) {
          const within = input.maxDistanceKm ? ` within ${input.maxDistanceKm} km` : "";
          return `No drone${filterText(input)}${within} of ${where} (${r.candidates} candidate(s) with a position).`;
        }
        const lines = r.drones.map(
          (d, i) =>
            `${i + 1}. ${quote(d.name ?? d._id, 60)} (${d._id}): ${kmText(d.distanceKm)}, ` +
            `${d.status ?? "status unknown"}, ${percentText(d.battery_level)}`,
        );
        const how = `great-circle distance, of ${r.candidates} candidate(s)`;
        return `${r.count} nearest drone(s)${filterText(input)} to ${where} (${how}):\n${lines.join("\n")}`;
      },
    }),
  ];
}
