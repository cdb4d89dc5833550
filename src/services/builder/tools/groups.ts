import { z } from "zod";
import { trimLine } from "../../../core/base/text.js";
import { defineTool } from "../deps.js";
import * as s from "../schemas.js";

/**
 * Project groups (reference §16; all free): folders that are only a label on each project. Assign
 * one with groupId on build_create_project / build_launch_project / build_update_project; filter
 * with build_list_projects { groupId }. Descriptions over 500 characters are cut by the service.
 */
const groupId = s.pathId("groupId");
const name = z.string().trim().min(1, "name must not be empty").max(80, "name must be at most 80 characters");
const description = z.string().describe("Cut to 500 characters");

const group = z.looseObject({
  groupId: z.string(),
  name: z.string().optional(),
  description: z.string().optional(),
  createdAt: z.string().optional(),
  updatedAt: z.string().optional(),
  projectCount: z.number().optional(),
});
type Group = z.infer<typeof group>;

const line = (g: Group) => {
  const projects = g.projectCount !== undefined ? ` (${g.projectCount} project${g.projectCount === 1 ? "" : "s"})` : "";
  const description = g.description ? `: "${trimLine(g.description, 80)}"` : "";
  return `- ${g.groupId}: "${trimLine(g.name, 80)}"${projects}${description}`;
};

export function groupTools() {
  return [
    defineTool({
      name: "build_create_group",
      upstream: "POST /project-groups",
      title: "Create project group",
      description:
        "Create a project group (a folder; up to 3,000 per account). Each call creates another, " +
        "even with the same name.",
      toolset: "build_groups",
      kind: "write",
      input: { name, description: description.optional() },
      output: group,
      verify: ({ name }) => `call build_list_groups with search "${name}"`,
      run: (input, ctx) => ctx.deps.client.groups.createGroup(input, ctx.signal),
      render: (g) => `Created group ${g.groupId} ("${trimLine(g.name, 80)}").`,
    }),

    defineTool({
      name: "build_list_groups",
      upstream: "GET /project-groups",
      title: "List project groups",
      description: "Project groups, newest first, with their project counts.",
      toolset: "build_groups",
      kind: "read",
      input: {
        search: z.string().optional().describe("Case-insensitive match on the name"),
        limit: z
          .number()
          .int()
          .min(1, "limit must be 1-200")
          .max(200, "limit must be 1-200")
          .optional()
          .describe("Default 100"),
        skip: z.number().int().min(0).optional(),
      },
      output: z.object({
        groups: z.array(group),
        count: z.number().int(),
        skip: z.number().int(),
        limit: z.number().int(),
        total: z.number().int().optional().describe("X-Total-Count: groups matching the search"),
      }),
      run: async (input, ctx) => {
        const page = await ctx.deps.client.groups.listGroups(input, ctx.signal);
        const groups = group.array().parse(page.groups);
        return {
          groups,
          count: groups.length,
          skip: page.skip ?? input.skip ?? 0,
          limit: page.limit ?? input.limit ?? 100,
          total: page.total,
        };
      },
      render: (r) => {
        if (r.count === 0)
          return r.total ? `No groups on this page (skip ${r.skip}); ${r.total} match in all.` : "No groups match.";
        const more =
          r.total !== undefined && r.skip + r.count < r.total
            ? `\nMore: call again with skip ${r.skip + r.count}.`
            : "";
        const of = r.total !== undefined ? ` of ${r.total}` : "";
        return `${r.count}${of} group(s):\n${r.groups.map(line).join("\n")}${more}`;
      },
    }),

    defineTool({
      name: "build_get_group",
      upstream: "GET /project-groups/{groupId}",
      title: "Project group",
      description: "One project group with its project count (its projects: build_list_projects { groupId }).",
      toolset: "build_groups",
      kind: "read",
      input: { groupId },
      output: group,
      run: ({ groupId }, ctx) => ctx.deps.client.groups.getGroup(groupId, ctx.signal),
      render: (g) => `Group${line(g).slice(1)}`,
    }),

    defineTool({
      name: "build_update_group",
      upstream: "PATCH /project-groups/{groupId}",
      title: "Update project group",
      description: 'Rename a project group or change its description (description "" clears it). Omitted fields stay.',
      toolset: "build_groups",
      kind: "write",
      idempotent: true,
      input: { groupId, name: name.optional(), description: description.optional() },
      output: group,
      verify: ({ groupId }) => `call build_get_group for "${groupId}"`,
      run: ({ groupId, ...body }, ctx) => ctx.deps.client.groups.updateGroup(groupId, body, ctx.signal),
      render: (g) => `Updated group${line(g).slice(1)}`,
    }),

    defineTool({
      name: "build_delete_group",
      upstream: "DELETE /project-groups/{groupId}",
      title: "Delete project group",
      description: "Delete a project group. Its projects are kept and become ungrouped.",
      toolset: "build_groups",
      kind: "destructive",
      destroys: ({ groupId }) => `Project group ${groupId} is deleted (its projects stay, ungrouped).`,
      input: { groupId },
      output: z.looseObject({ groupId: z.string(), deleted: z.boolean(), releasedProjects: z.number().optional() }),
      verify: ({ groupId }) => `call build_get_group for "${groupId}" (404 PROJECT_GROUP_NOT_FOUND = deleted)`,
      run: async ({ groupId }, ctx) => ({
        deleted: true,
        ...(await ctx.deps.client.groups.deleteGroup(groupId, ctx.signal)),
        groupId,
      }),
      render: (r) => {
        const released = r.releasedProjects !== undefined ? `; ${r.releasedProjects} project(s) are now ungrouped` : "";
        return `Deleted group ${r.groupId}${released}.`;
      },
    }),
  ];
}
