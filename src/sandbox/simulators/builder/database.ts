import type { BuildContext } from "./context.js";
import { fail, type BuildRoutes } from "./routes.js";
import { given, isObject, round, type Json, type SimProject, type Table } from "./state.js";
import { bodyOf } from "./validation.js";

/**
 * The project database (reference §10): table structures (properties as a map name → {id, name,
 * propertyType, label, objectReference?}) and record queries with the documented options:
 * `_filter` (exact match, gte/lte/gt/lt/ne/in/nin/regex(+options)/contains/startsWith/endsWith,
 * `_or`), `_sort`, `_limit`/`_offset`, `_select`/`_omit`, `_count`, `_aggregate` with `_groupBy`.
 * Assumed where §10 is silent: an unknown operator, a `_sort` value other than asc/desc, or
 * `_select` with `_omit` is 400 INVALID_QUERY_OPTIONS; a filter on a missing field matches nothing
 * but `ne`/`nin`; `_count` is `{_total}` beside `results`; `_aggregate` answers
 * `aggregations` (an object, or one row per group with `_groupBy`) instead of records; relation
 * expansion is not simulated (the id stays as stored).
 */
export function registerDatabaseRoutes(_ctx: BuildContext, routes: BuildRoutes): void {
  routes.onProject("GET", "/database/tables-structure", (p) => ({ tables: p.tables.map(tableStructure) }));
  routes.onProject("POST", "/database/query", (p, req) => query(p, bodyOf(req)));
}

function tableStructure(t: Table) {
  const properties = Object.fromEntries(t.properties.map((q) => [q.name, structuredClone(q)]));
  return {
    _id: t._id,
    type: t.type,
    label: t.label,
    description: t.description,
    icon: "fa-solid fa-table",
    properties,
  };
}

function query(p: SimProject, body: Json) {
  const { tableName } = body;
  if (typeof tableName !== "string" || tableName === "") fail(400, "MISSING_TABLE_NAME", "tableName is required");
  const table = p.tables.find((t) => t.type === tableName);
  if (!table) fail(404, "TABLE_NOT_FOUND", `Table ${tableName} does not exist in ${p.projectId}`);
  const options = given(body.queryOptions) ? body.queryOptions : {};
  if (!isObject(options)) fail(400, "INVALID_QUERY_OPTIONS", "queryOptions must be an object");
  return queryRecords(table.records, options);
}

const invalid = (message: string): never => fail(400, "INVALID_QUERY_OPTIONS", message);

function queryRecords(records: Json[], options: Json): Json {
  let rows = isObject(options._filter) ? records.filter((r) => matches(r, options._filter as Json)) : [...records];
  const total = rows.length;
  if (given(options._aggregate))
    return { results: [], aggregations: aggregate(rows, options._aggregate, options._groupBy) };
  if (isObject(options._sort)) rows = sortRows(rows, options._sort);
  const offset = typeof options._offset === "number" && options._offset > 0 ? Math.floor(options._offset) : 0;
  const limit =
    typeof options._limit === "number" && options._limit > 0 ? Math.min(Math.floor(options._limit), 1000) : 50;
  const page = rows.slice(offset, offset + limit).map((r) => project(r, options));
  return { results: page, ...(options._count === true ? { _count: { _total: total } } : {}) };
}

function matches(record: Json, filter: Json): boolean {
  return Object.entries(filter).every(([field, condition]) => {
    if (field === "_or") {
      if (!Array.isArray(condition)) invalid("_filter._or must be an array of conditions");
      return (condition as unknown[]).some((c) => isObject(c) && matches(record, c));
    }
    return fieldMatches(record[field], condition);
  });
}

const OPERATORS = new Set([
  "gte",
  "lte",
  "gt",
  "lt",
  "ne",
  "in",
  "nin",
  "regex",
  "options",
  "contains",
  "startsWith",
  "endsWith",
]);

function fieldMatches(value: unknown, condition: unknown): boolean {
  if (!isObject(condition)) return value === condition;
  const ops = Object.keys(condition);
  if (ops.length === 0 || ops.some((op) => !OPERATORS.has(op)))
    invalid(`unknown _filter operator in ${JSON.stringify(condition)}`);
  return ops.every((op) => {
    const arg = condition[op];
    const text = String(value ?? "").toLowerCase();
    switch (op) {
      case "gte":
        return value !== undefined && compareValues(value, arg) >= 0;
      case "lte":
        return value !== undefined && compareValues(value, arg) <= 0;
      case "gt":
        return value !== undefined && compareValues(value, arg) > 0;
      case "lt":
        return value !== undefined && compareValues(value, arg) < 0;
      case "ne":
        return value !== arg;
      case "in":
        return Array.isArray(arg) && arg.includes(value);
      case "nin":
        return Array.isArray(arg) && !arg.includes(value);
      case "regex":
        return value !== undefined && regexOf(arg, condition.options).test(String(value));
      case "options":
        return true;
      case "contains":
        return value !== undefined && text.includes(String(arg).toLowerCase());
      case "startsWith":
        return value !== undefined && text.startsWith(String(arg).toLowerCase());
      default:
        return value !== undefined && text.endsWith(String(arg).toLowerCase());
    }
  });
}

function regexOf(pattern: unknown, flags: unknown): RegExp {
  try {
    return new RegExp(String(pattern), typeof flags === "string" ? flags.replace(/[^imsu]/g, "") : "");
  } catch {
    return invalid(`_filter regex ${JSON.stringify(pattern)} is not a valid regular expression`);
  }
}

function sortRows(rows: Json[], sort: Json): Json[] {
  const keys = Object.entries(sort).map(([field, dir]) => {
    if (dir !== "asc" && dir !== "desc") invalid(`_sort.${field} must be "asc" or "desc"`);
    return { field, sign: dir === "desc" ? -1 : 1 };
  });
  return [...rows].sort((a, b) => {
    for (const { field, sign } of keys) {
      const c = compareValues(a[field], b[field]);
      if (c !== 0) return sign * c;
    }
    return 0;
  });
}

function project(record: Json, options: Json): Json {
  const select = isObject(options._select) ? options._select : undefined;
  const omit = isObject(options._omit) ? options._omit : undefined;
  if (select && omit) invalid("_select and _omit are mutually exclusive");
  if (select) return Object.fromEntries(Object.entries(record).filter(([k]) => k === "_id" || select[k] === true));
  if (omit) return Object.fromEntries(Object.entries(record).filter(([k]) => omit[k] !== true));
  return { ...record };
}

const AGGREGATES = ["_sum", "_avg", "_min", "_max", "_count"] as const;

function aggregate(rows: Json[], spec: unknown, groupBy: unknown): Json | Json[] {
  if (!isObject(spec)) invalid("_aggregate must be an object");
  const fields = typeof groupBy === "string" ? [groupBy] : Array.isArray(groupBy) ? groupBy.map(String) : undefined;
  if (given(groupBy) && !fields) invalid("_groupBy must be a field name or an array of them");
  const summarize = (group: Json[]): Json => {
    const out: Json = {};
    for (const kind of AGGREGATES) {
      const wanted = (spec as Json)[kind];
      if (!given(wanted)) continue;
      if (kind === "_count" && wanted === true) {
        out._count = group.length;
        continue;
      }
      if (!isObject(wanted)) return invalid(`_aggregate.${kind} must be an object of field names`);
      out[kind] = Object.fromEntries(
        Object.keys(wanted).map((f) => [
          f,
          reduce(
            kind,
            group.map((r) => r[f]),
          ),
        ]),
      );
    }
    return out;
  };
  if (!fields) return summarize(rows);
  const groups = new Map<string, Json[]>();
  for (const r of rows) {
    const key = JSON.stringify(fields.map((f) => r[f] ?? null));
    groups.set(key, [...(groups.get(key) ?? []), r]);
  }
  return [...groups].map(([key, group]) => ({
    ...Object.fromEntries(fields.map((f, i) => [f, JSON.parse(key)[i]])),
    ...summarize(group),
  }));
}

function reduce(kind: (typeof AGGREGATES)[number], values: unknown[]): number | null {
  if (kind === "_count") return values.filter((v) => v !== undefined && v !== null).length;
  const numbers = values.filter((v): v is number => typeof v === "number");
  if (numbers.length === 0) return null;
  if (kind === "_sum") return round(numbers.reduce((a, b) => a + b, 0));
  if (kind === "_avg") return round(numbers.reduce((a, b) => a + b, 0) / numbers.length);
  return kind === "_min" ? Math.min(...numbers) : Math.max(...numbers);
}

function compareValues(a: unknown, b: unknown): number {
  if (typeof a === "number" && typeof b === "number") return a - b;
  return String(a ?? "").localeCompare(String(b ?? ""));
}
