import { z } from "zod";
import { trimLine } from "../../../core/base/text.js";
import { ToolError } from "../../../core/tools/tool.js";
import { defineTool } from "../deps.js";
import * as s from "../schemas.js";

/**
 * PATCH /projects/:projectId (reference §3; free). The service trims label and description and caps
 * them at 80 and 500 characters; whether it cuts or refuses longer text is not stated, so longer
 * text is passed on and the render says when it came back shorter.
 */
const FIELDS = ["label", "description", "groupId"] as const;

export function projectAdminTools() {
  return [
    defineTool({
      name: "build_update_project",
      upstream: "PATCH /projects/{projectId}",
      title: "Update project",
      description:
        "Change a project's label, description or group; omitted fields stay, null clears (groupId " +
        "null = ungroup). The projectId cannot change.",
      toolset: "build_admin",
      kind: "write",
      idempotent: true,
      input: {
        projectId: s.projectId,
        label: z.string().nullable().optional().describe("Display name, ≤80"),
        description: z.string().nullable().optional().describe("≤500"),
        groupId: z.string().min(1, "groupId must not be empty (null ungroups)").nullable().optional(),
      },
      output: z.looseObject({
        projectId: z.string(),
        label: z.string().optional(),
        description: z.string().optional(),
        groupId: z.string().optional(),
      }),
      verify: ({ projectId }) => `call build_get_project for "${projectId}"`,
      before: async (input) => {
        if (!FIELDS.some((f) => input[f] !== undefined)) {
          throw new ToolError(
            "Invalid arguments for build_update_project: (arguments): pass at least one of label, " +
              "description or groupId. Nothing was sent upstream.",
          );
        }
      },
      run: async ({ projectId, ...changes }, ctx) => {
        const updated = await ctx.deps.client.projectAdmin.updateProject(projectId, changes, ctx.signal);
        ctx.resourcesChanged();
        return { ...updated, projectId: String(updated.projectId ?? projectId) };
      },
      render: (r, input) => {
        const label = r.label ? `"${trimLine(r.label, 80)}"` : "none";
        const group = r.groupId ? `group ${r.groupId}` : "no group";
        const description = r.description ? `, description "${trimLine(r.description, 120)}"` : ", no description";
        const lines = [`Updated ${r.projectId}: label ${label}, ${group}${description}.`];
        for (const field of ["label", "description"] as const) {
          const sent = input[field]?.trim();
          if (sent && (r[field] ?? "").length < sent.length)
            lines.push(`The service kept only the first ${(r[field] ?? "").length} characters of the ${field}.`);
        }
        return lines.join("\n");
      },
    }),
  ];
}
