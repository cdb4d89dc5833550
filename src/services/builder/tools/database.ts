import { z } from "zod";
import { defineTool } from "../deps.js";
import * as s from "../schemas.js";

/**
 * Record writes of a project's database (reference §10; all free). Reads stay in build_admin
 * (build_get_database_schema, build_query_database). Creating is not idempotent; updates are.
 */
const tableName = z.string().min(1, "tableName is required");
const recordId = s.pathId("recordId");
const data = z.record(z.string(), z.unknown());
const record = z.looseObject({ _id: z.string(), createdAt: z.string().optional(), updatedAt: z.string().optional() });
const linkInput = {
  projectId: s.projectId,
  tableName,
  recordId,
  propertyId: z.string().min(1, "propertyId is required").describe("Many-to-many property of tableName (id or name)"),
  referenceId: z.string().min(1, "referenceId is required").describe("_id of the other record"),
};

const byId = (table: string, id: string) =>
  `call build_query_database on "${table}" with queryOptions {_filter: {_id: "${id}"}}`;

export function databaseTools() {
  return [
    defineTool({
      name: "build_create_record",
      upstream: "POST …/database/records",
      title: "Create record",
      description: "Add a record to a table of a project's database; returns it with its _id. Each call adds one.",
      toolset: "build_database",
      kind: "write",
      input: {
        projectId: s.projectId,
        tableName: tableName.describe("Table type (build_get_database_schema)"),
        data: data
          .refine((d) => !("_id" in d), "data must not contain _id (the service assigns it)")
          .describe("Field values"),
      },
      output: record,
      verify: ({ tableName }) =>
        `call build_query_database on "${tableName}" with a _filter on the values you sent before creating it again`,
      run: ({ projectId, ...body }, ctx) => ctx.deps.client.database.createRecord(projectId, body, ctx.signal),
      render: (r, { tableName }) => `Created record ${r._id} in ${tableName}.`,
    }),

    defineTool({
      name: "build_update_record",
      upstream: "PATCH …/database/records/{recordId}",
      title: "Update record",
      description: "Change fields of one record; others stay. Also sets one-to-one, one-to-many and many-to-one links.",
      toolset: "build_database",
      kind: "write",
      destroys: ({ projectId, tableName, recordId }) =>
        `The given fields of record ${recordId} of table ${tableName} in project ${projectId} are overwritten ` +
        "(the old values are not kept).",
      idempotent: true,
      input: { projectId: s.projectId, tableName, recordId, data },
      output: record,
      verify: ({ tableName, recordId }) => byId(tableName, recordId),
      run: ({ projectId, recordId, ...body }, ctx) =>
        ctx.deps.client.database.updateRecord(projectId, recordId, body, ctx.signal),
      render: (r, { tableName }) => `Updated record ${r._id} in ${tableName}${r.updatedAt ? ` (${r.updatedAt})` : ""}.`,
    }),

    defineTool({
      name: "build_delete_record",
      upstream: "DELETE …/database/records/{recordId}",
      title: "Delete record",
      description: "Delete one record of a project's database. Cannot be undone.",
      toolset: "build_database",
      kind: "destructive",
      destroys: ({ projectId, tableName, recordId }) =>
        `Record ${recordId} of table ${tableName} in project ${projectId} is deleted for good.`,
      input: { projectId: s.projectId, tableName, recordId },
      output: z.looseObject({ recordId: z.string(), deleted: z.boolean() }),
      verify: ({ tableName, recordId }) => byId(tableName, recordId),
      run: async ({ projectId, tableName, recordId }, ctx) => ({
        deleted: true,
        recordId,
        ...(await ctx.deps.client.database.deleteRecord(projectId, recordId, tableName, ctx.signal)),
      }),
      render: (r, { tableName }) => `Deleted record ${r.recordId} from ${tableName}.`,
    }),

    defineTool({
      name: "build_link_records",
      upstream: "POST …/database/records/{recordId}/link",
      title: "Link records",
      description:
        "Link two records through a many-to-many property. A property that is not many-to-many is silently ignored.",
      toolset: "build_database",
      kind: "write",
      input: linkInput,
      output: z.looseObject({ linked: z.boolean() }),
      verify: ({ tableName, recordId }) =>
        `call build_query_database on "${tableName}" with queryOptions {_filter: {_id: ` +
        `"${recordId}"}, "<property name>": true}`,
      run: async ({ projectId, recordId, ...body }, ctx) => ({
        linked: true,
        ...(await ctx.deps.client.database.linkRecords(projectId, recordId, body, ctx.signal)),
      }),
      render: (r, i) =>
        `${r.linked ? "Linked" : "Did not link"} ${i.recordId} to ${i.referenceId} through ${i.propertyId}.`,
    }),

    defineTool({
      name: "build_unlink_records",
      upstream: "DELETE …/database/records/{recordId}/link",
      title: "Unlink records",
      description: "Remove a many-to-many link; both records stay. Safe to repeat.",
      toolset: "build_database",
      kind: "destructive",
      destroys: (i) =>
        `The ${i.propertyId} link between records ${i.recordId} and ${i.referenceId} of project ${i.projectId} is ` +
        "removed (both records stay).",
      input: linkInput,
      output: z.looseObject({ unlinked: z.boolean() }),
      verify: () => "unlinking again is harmless (idempotent): call it again",
      run: async ({ projectId, recordId, ...body }, ctx) => ({
        unlinked: true,
        ...(await ctx.deps.client.database.unlinkRecords(projectId, recordId, body, ctx.signal)),
      }),
      render: (r, i) =>
        `${r.unlinked ? "Unlinked" : "Did not unlink"} ${i.recordId} from ${i.referenceId} (${i.propertyId}).`,
    }),
  ];
}
