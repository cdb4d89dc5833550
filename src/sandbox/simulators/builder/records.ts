import type { BuildContext } from "./context.js";
import { fail, type BuildRoutes } from "./routes.js";
import { isObject, iso, type Json, type RecordLink, type SimProject, type Table, type TableProperty } from "./state.js";
import { bodyOf } from "./validation.js";

/**
 * Record writes of the project database (reference §10): create, update, delete, and the
 * many-to-many links whose junction the service keeps. Errors are 400s, as the reference lists them.
 */
export function registerRecordRoutes(ctx: BuildContext, routes: BuildRoutes): void {
  routes.onProject("POST", "/database/records", (p, req) => createRecord(ctx, p, bodyOf(req)));
  routes.onProject("PATCH", "/database/records/:recordId", (p, req) =>
    updateRecord(ctx, p, req.params.recordId, bodyOf(req)),
  );
  routes.onProject("DELETE", "/database/records/:recordId", (p, req) =>
    deleteRecord(p, req.params.recordId, req.query.get("tableName")),
  );
  routes.onProject("POST", "/database/records/:recordId/link", (p, req) =>
    link(p, req.params.recordId, bodyOf(req), true),
  );
  routes.onProject("DELETE", "/database/records/:recordId/link", (p, req) =>
    link(p, req.params.recordId, bodyOf(req), false),
  );
}

/** Fields the service sets itself: a value sent for them is ignored. */
const SYSTEM_FIELDS = ["_id", "createdAt", "updatedAt"];

function tableOf(p: SimProject, tableName: unknown): Table {
  if (typeof tableName !== "string" || tableName === "") fail(400, "MISSING_TABLE_NAME", "tableName is required");
  const table = p.tables.find((t) => t.type === tableName);
  if (!table) fail(400, "TABLE_NOT_FOUND", `Table ${tableName} does not exist in ${p.projectId}`);
  return table;
}

function dataOf(body: Json): Json {
  if (!isObject(body.data)) fail(400, "MISSING_DATA", "data must be an object");
  return Object.fromEntries(Object.entries(body.data).filter(([key]) => !SYSTEM_FIELDS.includes(key)));
}

function recordOf(p: SimProject, table: Table, recordId: string): Json {
  const record = table.records.find((r) => r._id === recordId);
  if (!record) fail(404, "RECORD_NOT_FOUND", `No record ${recordId} in table ${table.type} of ${p.projectId}`);
  return record;
}

function createRecord(ctx: BuildContext, p: SimProject, body: Json) {
  const table = tableOf(p, body.tableName);
  const data = dataOf(body);
  const at = iso(ctx.simNow());
  const record: Json = { _id: ctx.newId(), ...data, createdAt: at, updatedAt: at };
  table.records.push(record);
  return { ...record };
}

function updateRecord(ctx: BuildContext, p: SimProject, recordId: string, body: Json) {
  const table = tableOf(p, body.tableName);
  const data = dataOf(body);
  const record = recordOf(p, table, recordId);
  Object.assign(record, data, { updatedAt: iso(ctx.simNow()) });
  return { ...record };
}

function deleteRecord(p: SimProject, recordId: string, tableName: string | null) {
  const table = tableOf(p, tableName);
  const record = recordOf(p, table, recordId);
  table.records.splice(table.records.indexOf(record), 1);
  if (p.recordLinks) p.recordLinks = p.recordLinks.filter((l) => !l.recordIds.includes(recordId));
  return { deleted: true, recordId };
}

/**
 * POST adds a link, DELETE removes it; both are idempotent. A property that is not many-to-many
 * (or unknown) changes nothing and still answers success, as the reference says.
 */
function link(p: SimProject, recordId: string, body: Json, add: boolean) {
  const { propertyId, referenceId } = body;
  const table = tableOf(p, body.tableName);
  if (typeof propertyId !== "string" || propertyId === "") fail(400, "MISSING_PROPERTY_ID", "propertyId is required");
  if (typeof referenceId !== "string" || referenceId === "")
    fail(400, "MISSING_REFERENCE_ID", "referenceId is required");
  const answer = add ? { linked: true } : { unlinked: true };
  const property = manyToMany(table, propertyId);
  if (!property) return answer;
  if (add) {
    recordOf(p, table, recordId);
    const target = p.tables.find((t) => t._id === property.objectReference!.objectReferenceTypeId);
    if (target) recordOf(p, target, referenceId);
  }
  const key: RecordLink = { propertyId: property.id, recordIds: [recordId, referenceId].sort() as [string, string] };
  const same = (l: RecordLink) =>
    l.propertyId === key.propertyId && l.recordIds[0] === key.recordIds[0] && l.recordIds[1] === key.recordIds[1];
  const links = (p.recordLinks ??= []);
  if (add && !links.some(same)) links.push(key);
  if (!add) p.recordLinks = links.filter((l) => !same(l));
  return answer;
}

/** The many-to-many property named by its id or its name (the reference's example passes the name). */
function manyToMany(table: Table, propertyId: string): TableProperty | undefined {
  const property = table.properties.find((q) => q.id === propertyId || q.name === propertyId);
  return property && property.objectReference?.objectReferenceRelation === "manyToMany" ? property : undefined;
}
