import type { BuildContext } from "./context.js";
import { fail, type BuildRoutes } from "./routes.js";
import { given, isObject, type Json, type SimProject, type Table } from "./state.js";
import { bodyOf } from "./validation.js";

/** The project database: table structures and read-only record queries. */
export function registerDatabaseRoutes(_ctx: BuildContext, routes: BuildRoutes): void {
  routes.onProject("GET", "/database/tables-structure", (p) => ({ tables: p.tables.map(tableStructure) }));
  routes.onProject("POST", "/database/query", (p, req) => query(p, bodyOf(req)));
}

function tableStructure(t: Table) {
  const properties = t.properties.map((p) => ({ ...p }));
  return { _id: t._id, type: t.type, label: t.label, description: t.description, properties };
}

function query(p: SimProject, body: Json) {
  const { tableName } = body;
  if (typeof tableName !== "string" || tableName === "") fail(400, "MISSING_TABLE_NAME", "tableName is required");
  const table = p.tables.find((t) => t.type === tableName);
  if (!table) fail(404, "TABLE_NOT_FOUND", `Table ${tableName} does not exist in ${p.projectId}`);
  const options = given(body.queryOptions) ? body.queryOptions : {};
  if (!isObject(options)) fail(400, "INVALID_QUERY_OPTIONS", "queryOptions must be an object");
  return { results: queryRecords(table.records, options) };
}

/** `_filter` (equality), `_sort` (first key; -1, "-1" or "desc" descending), `_offset`, `_limit` (default 50, max 1000). */
function queryRecords(records: Json[], options: Json): Json[] {
  let rows = [...records];
  if (isObject(options._filter)) {
    const filter = options._filter;
    rows = rows.filter((r) => Object.entries(filter).every(([field, value]) => r[field] === value));
  }
  if (isObject(options._sort)) {
    const [[field, dir] = ["", 1]] = Object.entries(options._sort);
    const sign = dir === -1 || dir === "-1" || dir === "desc" ? -1 : 1;
    rows.sort((a, b) => sign * compareValues(a[field], b[field]));
  }
  const offset = typeof options._offset === "number" && options._offset > 0 ? Math.floor(options._offset) : 0;
  const limit = typeof options._limit === "number" && options._limit > 0 ? Math.min(Math.floor(options._limit), 1000) : 50;
  return rows.slice(offset, offset + limit).map((r) => ({ ...r }));
}

function compareValues(a: unknown, b: unknown): number {
  if (typeof a === "number" && typeof b === "number") return a - b;
  return String(a ?? "").localeCompare(String(b ?? ""));
}
