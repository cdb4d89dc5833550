import { z } from "zod";
import { defineTool } from "../deps.js";
import { isObject } from "../../../core/base/json.js";
import { matchesFields, paginate } from "../fleet.js";
import { alertLine, missionLine, pageFooter, recordText, show } from "../render.js";
import * as s from "../schemas.js";

function filterText(filters: Record<string, unknown>): string {
  const parts = Object.entries(filters)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k} ${String(v)}`);
  return parts.length ? ` matching ${parts.join(", ")}` : "";
}

export function recordTools() {
  return [
    defineTool({
      name: "drones_list_missions",
      upstream: "GET /api/missions",
      title: "List missions",
      description: "List missions as the service sends them, filtered here, paged (limit, offset).",
      toolset: "drones",
      kind: "read",
      input: { status: s.word("status", "in_progress"), drone_id: s.word("drone_id", "<drone _id>"), ...s.paging },
      output: s.missionPage,
      run: async ({ status, drone_id, limit, offset }, ctx) => {
        const all = await ctx.deps.client.listMissions(ctx.signal);
        const { items, ...rest } = paginate(
          all.filter((m) => matchesFields(m, { status, drone_id })),
          offset ?? 0,
          limit ?? s.DEFAULT_LIMIT,
        );
        return { missions: items, total: all.length, ...rest };
      },
      render: (r, input) => {
        const filters = filterText({ status: input.status, drone_id: input.drone_id });
        if (r.matched === 0) return `No missions${filters} (of ${r.total}).`;
        return `${pageFooter(r, `mission(s)${filters}`)}\n${r.missions.map(missionLine).join("\n")}`;
      },
    }),

    defineTool({
      name: "drones_get_mission",
      upstream: "GET /api/missions/:id",
      title: "Mission details",
      description: "One mission by _id, with every field the service sends.",
      toolset: "drones",
      kind: "read",
      input: { id: s.recordId("mission", "drones_list_missions") },
      output: s.record,
      run: ({ id }, ctx) => ctx.deps.client.getMission(id, ctx.signal),
      render: (m) => recordText("Mission", m),
    }),

    defineTool({
      name: "drones_list_alerts",
      upstream: "GET /api/alerts",
      title: "List alerts",
      description: "List alerts as the service sends them, filtered here, paged (limit, offset).",
      toolset: "drones",
      kind: "read",
      input: {
        status: s.word("status", "open"),
        severity: s.word("severity", "critical"),
        drone_id: s.word("drone_id", "<drone _id>"),
        ...s.paging,
      },
      output: s.alertPage,
      run: async ({ status, severity, drone_id, limit, offset }, ctx) => {
        const all = await ctx.deps.client.listAlerts(ctx.signal);
        const { items, ...rest } = paginate(
          all.filter((a) => matchesFields(a, { status, severity, drone_id })),
          offset ?? 0,
          limit ?? s.DEFAULT_LIMIT,
        );
        return { alerts: items, total: all.length, ...rest };
      },
      render: (r, input) => {
        const filters = filterText({ status: input.status, severity: input.severity, drone_id: input.drone_id });
        if (r.matched === 0) return `No alerts${filters} (of ${r.total}).`;
        const footer = pageFooter(r, `alert(s)${filters}`);
        return `${footer} Messages are quoted as sent by the service.\n${r.alerts.map(alertLine).join("\n")}`;
      },
    }),

    defineTool({
      name: "drones_get_alert",
      upstream: "GET /api/alerts/:id",
      title: "Alert details",
      description: "One alert by _id, with every field the service sends.",
      toolset: "drones",
      kind: "read",
      input: { id: s.recordId("alert", "drones_list_alerts") },
      output: s.record,
      run: ({ id }, ctx) => ctx.deps.client.getAlert(id, ctx.signal),
      render: (a) => recordText("Alert", a),
    }),

    defineTool({
      name: "drones_update_alert",
      upstream: "PUT /api/alerts/:id",
      title: "Update alert",
      description:
        'Update one alert: `changes` is sent untouched as the PUT body, e.g. {"status": ' +
        '"acknowledged"} (how the service applies it is not documented). Returns what the service answers.',
      toolset: "drones",
      kind: "write",
      idempotent: true,
      input: {
        id: s.recordId("alert", "drones_list_alerts"),
        changes: z
          .record(z.string(), z.unknown(), {
            error: 'changes must be a JSON object of fields to set, e.g. {"status": "acknowledged"}',
          })
          .refine(
            (c) => Object.keys(c).length > 0,
            'changes must set at least one field, e.g. {"status": "acknowledged"}',
          ),
      },
      output: s.record,
      verify: ({ id }) => `call drones_get_alert for "${id}"`,
      run: async ({ id, changes }, ctx) => {
        const data = await ctx.deps.client.updateAlert(id, changes, ctx.signal);
        return isObject(data) ? data : { _id: id, result: data };
      },
      render: (a, input) => {
        const changed = Object.keys(input.changes)
          .map((k) => `- ${k}: ${show(a[k])}`)
          .join("\n");
        const when = typeof a.updated_at === "string" ? ` at ${a.updated_at}` : "";
        return `Alert ${String(a._id ?? input.id)} updated${when}. Now:\n${changed}`;
      },
    }),
  ];
}
