import { z } from "zod";
import { credits } from "../../../core/base/text.js";
import { ToolError } from "../../../core/tools/tool.js";
import { defineTool } from "../deps.js";
import type { CreditLimits } from "../api/billing.js";
import * as s from "../schemas.js";

/** Per-project monthly credit caps (reference §17) and spending analytics (§18); both free. */

const DAY_MS = 24 * 60 * 60 * 1000;
const MAX_RANGE_DAYS = 90;

const cap = (name: string) =>
  z.number().positive(`${name} must be a positive number, or null to remove the cap`).nullable().optional();

const limits = z.looseObject({
  maxDevelopmentCreditsPerMonth: z.number().nullable().optional(),
  maxInfrastructureCreditsPerMonth: z.number().nullable().optional(),
});

/** A calendar day; checked in a refinement (zod's own date pattern would cost every conversation ~80 tokens). */
const day = (field: string) =>
  z
    .string()
    .regex(/^\d{4}-\d{2}-\d{2}$/, { message: `${field} must be a date YYYY-MM-DD`, abort: true })
    .refine((v) => {
      const t = Date.parse(`${v}T00:00:00Z`);
      return !Number.isNaN(t) && new Date(t).toISOString().slice(0, 10) === v;
    }, `${field} must be a date YYYY-MM-DD`);

const capText = (v: number | null | undefined) =>
  v === null ? "no cap" : v === undefined ? "unknown" : `${credits(v)}/month`;

/** Rules between fields cannot live in a field's schema: checked before anything is sent. */
function invalid(tool: string, message: string): never {
  throw new ToolError(`Invalid arguments for ${tool}: ${message}. Nothing was sent upstream.`);
}

const byTypeText = (byType: Record<string, number> | undefined, max = 8) =>
  Object.entries(byType ?? {})
    .filter(([, v]) => typeof v === "number" && v !== 0)
    .sort((a, b) => b[1] - a[1])
    .slice(0, max)
    .map(([k, v]) => `${k} ${round(v)}`)
    .join(", ");

const round = (n: number) => Math.round(n * 100) / 100;

export function billingTools() {
  return [
    defineTool({
      name: "build_set_credit_limits",
      upstream: "PATCH …/credit-limits",
      title: "Set credit caps",
      description:
        "Set a project's monthly credit caps (free): development (runs, deploys…; default none), " +
        "infrastructure (the app's AI, email, PDF…; default 250). null removes, omitted keeps. At " +
        "a cap that spending is refused until the 1st.",
      toolset: "build_billing",
      kind: "write",
      // §1.5: the same caps again leave the same end state.
      idempotent: true,
      input: {
        projectId: s.projectId,
        maxDevelopmentCreditsPerMonth: cap("maxDevelopmentCreditsPerMonth"),
        maxInfrastructureCreditsPerMonth: cap("maxInfrastructureCreditsPerMonth"),
      },
      output: z.looseObject({ projectId: z.string(), creditLimits: limits }),
      verify: ({ projectId }) =>
        `repeat the call (it is safe: same end state), or read creditLimits with build_get_project ` +
        `for "${projectId}" after a few seconds (details are cached briefly)`,
      before: async (input) => {
        if (input.maxDevelopmentCreditsPerMonth === undefined && input.maxInfrastructureCreditsPerMonth === undefined) {
          invalid(
            "build_set_credit_limits",
            "give maxDevelopmentCreditsPerMonth, maxInfrastructureCreditsPerMonth or both (a " +
              "positive number, or null to remove that cap)",
          );
        }
      },
      run: async ({ projectId, maxDevelopmentCreditsPerMonth, maxInfrastructureCreditsPerMonth }, ctx) => {
        const body: CreditLimits = {};
        if (maxDevelopmentCreditsPerMonth !== undefined)
          body.maxDevelopmentCreditsPerMonth = maxDevelopmentCreditsPerMonth;
        if (maxInfrastructureCreditsPerMonth !== undefined)
          body.maxInfrastructureCreditsPerMonth = maxInfrastructureCreditsPerMonth;
        const data = await ctx.deps.client.billing.setCreditLimits(projectId, body, ctx.signal);
        return { ...data, projectId, creditLimits: data.creditLimits ?? body };
      },
      render: (r) =>
        `Monthly credit caps of ${r.projectId}: development ` +
        `${capText(r.creditLimits.maxDevelopmentCreditsPerMonth)}, infrastructure ` +
        `${capText(r.creditLimits.maxInfrastructureCreditsPerMonth)}. Caps reset on the 1st of each month.`,
    }),

    defineTool({
      name: "build_get_spending",
      upstream: "GET /api/v1/credits/spending-analytics",
      title: "Credit spending",
      description:
        "Credits spent per day, split into development and infrastructure and by type (prompt, " +
        "deploy, email…), for the account or one project. Up to 90 days, kept 90 days.",
      toolset: "build_billing",
      kind: "read",
      input: {
        from: day("from"),
        to: day("to"),
        projectId: s.projectId.optional(),
      },
      output: z.looseObject({
        from: z.string(),
        to: z.string(),
        projectId: z.string().optional(),
        daily: z.array(
          z.looseObject({
            date: z.string(),
            development: z.number().optional(),
            infrastructure: z.number().optional(),
            byType: z.record(z.string(), z.number()).optional(),
          }),
        ),
        totals: z
          .looseObject({
            development: z.number().optional(),
            infrastructure: z.number().optional(),
            total: z.number().optional(),
            byType: z.record(z.string(), z.number()).optional(),
          })
          .optional(),
        projects: z
          .array(z.union([z.string(), z.looseObject({})]))
          .optional()
          .describe("Projects with spending"),
      }),
      before: async ({ from, to }) => {
        const days = (Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / DAY_MS;
        if (days < 0) invalid("build_get_spending", "from must not be after to");
        if (days > MAX_RANGE_DAYS)
          invalid("build_get_spending", `from must be at most ${MAX_RANGE_DAYS} days before to (it is ${days})`);
      },
      run: async ({ from, to, projectId }, ctx) => {
        const data = await ctx.deps.client.billing.getSpendingAnalytics(
          { from, to, ...(projectId ? { projectId } : {}) },
          ctx.signal,
        );
        return { ...data, from, to, projectId, daily: data.daily ?? [] };
      },
      render: (r) => {
        const scope = `${r.from} to ${r.to}${r.projectId ? ` for ${r.projectId}` : ""}`;
        const t = r.totals;
        const dayTotal = (d: (typeof r.daily)[number]) => (d.development ?? 0) + (d.infrastructure ?? 0);
        const total = t?.total ?? r.daily.reduce((sum, d) => sum + dayTotal(d), 0);
        if (!total) return `No credits spent ${scope}.`;
        const split = t
          ? ` (development ${round(t.development ?? 0)}, infrastructure ${round(t.infrastructure ?? 0)})`
          : "";
        const lines = [`Spent ${scope}: ${credits(round(total))}${split}.`];
        const types = byTypeText(t?.byType);
        if (types) lines.push(`By type: ${types}.`);
        const busiest = r.daily
          .filter((d) => dayTotal(d) > 0)
          .sort((a, b) => dayTotal(b) - dayTotal(a))
          .slice(0, 5)
          .map((d) => `${d.date} ${round(dayTotal(d))}`);
        if (busiest.length) lines.push(`Busiest days: ${busiest.join(", ")}.`);
        const ids = (r.projects ?? []).map((p) => (typeof p === "string" ? p : String(p.projectId ?? "?")));
        if (ids.length)
          lines.push(
            `Projects with spending: ` +
              `${ids.slice(0, 20).join(", ")}${ids.length > 20 ? ` and ${ids.length - 20} more` : ""}.`,
          );
        return lines.join("\n");
      },
    }),
  ];
}
