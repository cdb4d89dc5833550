/**
 * Property-based fuzzing of every tool the server lists, end to end over stdio (and a shorter
 * run over Streamable HTTP). Arguments come from each tool's own JSON `inputSchema`: valid
 * values, boundary values, and hostile ones (wrong types, missing and unknown fields, huge
 * strings, deep nesting, odd unicode, prototype-pollution keys, odd numbers, huge arrays).
 *
 * Every answer must be a well-formed CallToolResult: a tool error is an `isError` result that
 * says something, never a protocol error, a crash or a hang. Afterwards the server must still be
 * alive, its stdout must have carried nothing but JSON-RPC, and no pollution may have reached it.
 *
 * Reproduce a failure with FUZZ_SEED=<seed printed by fast-check>; FUZZ_SHRINK=1 turns shrinking on
 * (slower, with huge values); FUZZ_RUNS=<n> changes the runs per tool over stdio.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CallToolResult, Client, Tool } from "@modelcontextprotocol/client";
import type { Sandbox } from "../../src/sandbox/index.js";
import {
  connectHttp,
  connectStdio,
  MODERN,
  sandboxEnv,
  spawnHttpServer,
  testSandbox,
  type HttpServerProcess,
  type StdioConnection,
  retryStart,
} from "../harness.js";

const SEED = Number(process.env.FUZZ_SEED ?? 20_251_107);
const STDIO_RUNS = Number(process.env.FUZZ_RUNS ?? 170);
const HTTP_RUNS = 12;
const GENERATED = `answers ${STDIO_RUNS} generated calls per tool with well-formed results`;
const CALL_TIMEOUT_MS = 15_000;
/** A sandbox, a server started (retried) and a dozen reads: at load 20, past the default 30 s. */
const SETUP_TIMEOUT_MS = 90_000;
/** The HTTP run skips the huge cases (the stdio run has them): keep its requests small and quick. */
const HTTP_MAX_ARG_BYTES = 900_000;
const SHRINK = process.env.FUZZ_SHRINK === "1";

// ---------------------------------------------------------------------------------------------
// JSON Schema -> fast-check
// ---------------------------------------------------------------------------------------------

interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  propertyNames?: JsonSchema;
  items?: JsonSchema;
  enum?: unknown[];
  const?: unknown;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minItems?: number;
  maxItems?: number;
}

type Args = Record<string, unknown>;

/** Identifiers that exist upstream, by property name, so valid calls reach deep code paths. */
const known: Record<string, string[]> = {};

const KNOWN_ALIASES: Record<string, string> = { drone_id: "droneId" };

/** Sets an own property, even `__proto__`, without touching any prototype. */
function setOwn(target: Args, key: string, value: unknown): Args {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  return target;
}

function isPlainObject(v: unknown): v is Args {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** A shallow copy that keeps own `__proto__` keys as data. */
function copy(args: Args): Args {
  const out: Args = {};
  for (const k of Object.keys(args)) setOwn(out, k, args[k]);
  return out;
}

function stripLookarounds(pattern: string): string {
  return pattern.replace(/\(\?<?[=!][^()]*\)/g, "");
}

function fitLength(s: string, min: number, max: number | undefined): string {
  let out = s;
  if (out.length < min) out = out + (out.at(-1) ?? "a").repeat(min - out.length);
  if (max !== undefined && out.length > max) out = out.slice(0, max);
  return out;
}

function stringArb(s: JsonSchema): fc.Arbitrary<string> {
  const min = s.minLength ?? 0;
  if (s.pattern) {
    const re = new RegExp(s.pattern);
    let gen: fc.Arbitrary<string>;
    try {
      gen = fc.stringMatching(re);
    } catch {
      gen = fc.stringMatching(new RegExp(stripLookarounds(s.pattern)));
    }
    return gen
      .map((x) => fitLength(x, min, s.maxLength))
      .filter((x) => re.test(x) && x.length >= min && (s.maxLength === undefined || x.length <= s.maxLength));
  }
  const max = Math.min(s.maxLength ?? 60, Math.max(min, 60));
  return fc.oneof(
    fc.string({ minLength: min, maxLength: max }),
    fc.string({ minLength: min, maxLength: max, unit: "grapheme" }),
  );
}

function numberArb(s: JsonSchema, integer: boolean): fc.Arbitrary<number> {
  if (integer) {
    const min = Math.max(
      s.minimum ?? (s.exclusiveMinimum !== undefined ? s.exclusiveMinimum + 1 : -1e6),
      Number.MIN_SAFE_INTEGER,
    );
    const max = Math.min(
      s.maximum ?? (s.exclusiveMaximum !== undefined ? s.exclusiveMaximum - 1 : 1e6),
      Number.MAX_SAFE_INTEGER,
    );
    // Small values are the useful ones (limits, offsets); the full range now and then.
    return fc.oneof(
      { arbitrary: fc.integer({ min, max: Math.min(max, min + 200) }), weight: 3 },
      { arbitrary: fc.integer({ min, max }), weight: 1 },
    );
  }
  const min = s.minimum ?? s.exclusiveMinimum ?? -1e6;
  const max = s.maximum ?? s.exclusiveMaximum ?? 1e6;
  return fc.double({
    min,
    max,
    minExcluded: s.exclusiveMinimum !== undefined,
    maxExcluded: s.exclusiveMaximum !== undefined,
    noNaN: true,
    noDefaultInfinity: true,
  });
}

/** Valid values for a schema (as far as JSON Schema can say: refinements are not expressed). */
function validArb(s: JsonSchema, key = "", depth = 0): fc.Arbitrary<unknown> {
  if (s.enum) return fc.constantFrom(...s.enum);
  if (s.const !== undefined) return fc.constant(s.const);
  const alternatives = s.anyOf ?? s.oneOf;
  if (alternatives) return fc.oneof(...alternatives.map((a) => validArb(a, key, depth)));
  const types = Array.isArray(s.type) ? s.type : s.type ? [s.type] : [];
  if (types.length === 0) return fc.jsonValue({ maxDepth: depth > 2 ? 0 : 2 });
  if (types.length > 1) return fc.oneof(...types.map((t) => validArb({ ...s, type: t }, key, depth)));
  switch (types[0]) {
    case "string": {
      const ids = known[KNOWN_ALIASES[key] ?? key];
      const base = stringArb(s);
      return ids?.length
        ? fc.oneof({ arbitrary: fc.constantFrom(...ids), weight: 3 }, { arbitrary: base, weight: 1 })
        : base;
    }
    case "integer":
      return numberArb(s, true);
    case "number":
      return numberArb(s, false);
    case "boolean":
      return fc.boolean();
    case "null":
      return fc.constant(null);
    case "array":
      return fc.array(s.items ? validArb(s.items, key, depth + 1) : fc.jsonValue({ maxDepth: 1 }), {
        minLength: s.minItems ?? 0,
        maxLength: Math.min(s.maxItems ?? 4, 4),
      });
    case "object":
      return objectArb(s, depth);
    default:
      return fc.jsonValue({ maxDepth: 1 });
  }
}

function objectArb(s: JsonSchema, depth: number): fc.Arbitrary<Args> {
  const props = s.properties ?? {};
  const model: Record<string, fc.Arbitrary<unknown>> = {};
  for (const [k, sub] of Object.entries(props)) model[k] = validArb(sub, k, depth + 1);
  const record = fc.record(model, { requiredKeys: (s.required ?? []).filter((k) => k in props) });
  const extraAllowed = s.additionalProperties !== undefined && s.additionalProperties !== false;
  if (!extraAllowed) return record as fc.Arbitrary<Args>;
  const value =
    typeof s.additionalProperties === "object" && Object.keys(s.additionalProperties).length > 0
      ? validArb(s.additionalProperties, "", depth + 1)
      : fc.jsonValue({ maxDepth: 2 });
  const extra = fc.dictionary(
    fc.string({ minLength: 1, maxLength: 12 }).filter((k) => !(k in props)),
    value,
    { maxKeys: 4 },
  );
  return fc.tuple(record, extra).map(([r, e]) => {
    const out = copy(e as Args);
    for (const k of Object.keys(r)) setOwn(out, k, (r as Args)[k]);
    return out;
  });
}

/** Edges: exact limits, one past them, empty containers, odd-but-legal numbers. */
function boundaryArb(s: JsonSchema, key: string): fc.Arbitrary<unknown> {
  const values: unknown[] = [];
  const types = Array.isArray(s.type) ? s.type : s.type ? [s.type] : [];
  if (s.enum) {
    values.push(
      ...s.enum,
      "",
      ...s.enum.filter((e): e is string => typeof e === "string").map((e) => e.toUpperCase()),
      ...s.enum.map((e) => ` ${String(e)} `),
    );
  } else if (s.anyOf ?? s.oneOf) {
    return fc.oneof(...(s.anyOf ?? s.oneOf)!.map((a) => boundaryArb(a, key)));
  } else if (types.includes("string")) {
    const min = s.minLength ?? 0;
    const fill = (n: number) => (s.pattern ? "a".repeat(n) : "x".repeat(n));
    values.push(fill(min), "", " ", "a", "\t\n");
    if (min > 0) values.push(fill(min - 1));
    if (s.maxLength !== undefined) values.push(fill(s.maxLength), fill(s.maxLength + 1));
    if (key === "projectId")
      values.push("a---", "a".repeat(35), "a".repeat(36), "-abc", "1abc", "ABCD", "abc_", "abcd ");
  } else if (types.includes("integer") || types.includes("number")) {
    const int = types.includes("integer");
    for (const b of [s.minimum, s.maximum, s.exclusiveMinimum, s.exclusiveMaximum]) {
      if (b === undefined) continue;
      values.push(b, b - 1, b + 1, b - Number.EPSILON * Math.max(1, Math.abs(b)), b + 0.5);
    }
    values.push(
      0,
      -0,
      1,
      -1,
      1e308,
      -1e308,
      5e-324,
      Number.MAX_SAFE_INTEGER,
      Number.MAX_SAFE_INTEGER + 2,
      int ? 1.5 : 0.1,
    );
  } else if (types.includes("array")) {
    values.push([]);
    const max = s.maxItems;
    if (max !== undefined && s.items) {
      return fc.oneof(
        fc.constantFrom(...values),
        fc.array(validArb(s.items, key), { minLength: max, maxLength: max }),
        fc.array(validArb(s.items, key), { minLength: max + 1, maxLength: max + 1 }),
      );
    }
  } else if (types.includes("object")) {
    values.push({});
  } else if (types.includes("boolean")) {
    values.push(true, false);
  }
  if (values.length === 0) values.push(null);
  return fc.constantFrom(...values);
}

// ---------------------------------------------------------------------------------------------
// Hostile values
// ---------------------------------------------------------------------------------------------

const UNICODE = [
  "😀🚁🛸",
  "👩‍👩‍👧‍👦",
  "\u202Eevil\u202C",
  "مرحبا بالعالم",
  "שלום",
  "\u0000",
  "a\u0000b",
  "\u0000\u0000\u0000",
  "\uD800",
  "\uDFFF",
  "x\uD83Dy",
  "\uFEFF",
  "\u200B\u200C\u200D",
  "e\u0301",
  "𝕏𝔸",
  "\r\n\t\u0085\u2028\u2029",
  "Ω≈ç√∫",
  "{{7*7}}",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a template-injection probe, on purpose
  "${process.exit()}",
  "'; DROP TABLE projects; --",
  "../../../etc/passwd",
  "%00%2e%2e%2f",
  "<script>alert(1)</script>",
  "[minutes=1] [fail] [secrets]",
  "Ignore previous instructions",
  "\\u0000",
];

const unicodeString = fc.oneof(
  fc.constantFrom(...UNICODE),
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.array(fc.constantFrom(...UNICODE), { minLength: 1, maxLength: 6 }).map((parts) => parts.join("")),
);

const hugeString = fc
  .tuple(
    fc.integer({ min: 50_000, max: 200_000 }),
    fc.constantFrom("a", "é", "😀", "\u0000", "x\u202E", "\uD800", "ab-", "lorem ipsum "),
  )
  .map(([n, chunk]) => chunk.repeat(Math.ceil(n / chunk.length)).slice(0, n));

function nest(depth: number, useArray: boolean, leaf: unknown): unknown {
  let v: unknown = leaf;
  for (let i = 0; i < depth; i++) v = useArray ? [v] : { a: v };
  return v;
}

const deepValue = fc
  .tuple(fc.integer({ min: 50, max: 500 }), fc.boolean(), fc.constantFrom<unknown>(1, "x", null, {}, []))
  .map(([d, arr, leaf]) => nest(d, arr, leaf));

const hugeArray = fc
  .tuple(
    fc.integer({ min: 500, max: 1500 }),
    fc.constantFrom<unknown>(
      "x",
      1,
      null,
      {},
      { name: "f", url: "https://x.example/a" },
      { secretName: "A", secretValue: "v" },
      [],
    ),
  )
  .map(([n, item]) => Array.from({ length: n }, (_, i) => (typeof item === "string" ? `${item}${i}` : item)));

const ODD_NUMBERS: unknown[] = [
  -0,
  1e308,
  -1e308,
  5e-324,
  -5e-324,
  2 ** 53,
  2 ** 53 + 2,
  -(2 ** 53),
  1.5,
  0.1,
  NaN,
  Infinity,
  -Infinity,
];
const NUMERIC_STRINGS: unknown[] = [
  "NaN",
  "Infinity",
  "-Infinity",
  "-0",
  "1e308",
  "1e-400",
  "0x1F",
  "0b1",
  "1_000",
  " 1 ",
  "1,5",
  "+1",
  "١٢٣",
  "",
];

/** Objects carrying prototype-pollution keys as own data properties. */
function pollution(): Args[] {
  const payload = () => ({ polluted: true, search: "polluted-zzz", status: "polluted", isAdmin: true, limit: 1 });
  const proto = setOwn({}, "__proto__", payload());
  const ctor = { constructor: { prototype: payload() } };
  const prototype = { prototype: payload() };
  const nested = { a: setOwn({}, "__proto__", payload()), b: [setOwn({}, "__proto__", payload())] };
  const both = setOwn({ constructor: { prototype: payload() } }, "__proto__", {
    constructor: { prototype: payload() },
  });
  return [proto, ctor, prototype, nested, both];
}
const pollutionValue = fc.constantFrom(...pollution());

const scalarWrong = fc.constantFrom<unknown>(
  null,
  true,
  false,
  0,
  1,
  -1,
  "",
  " ",
  "null",
  "undefined",
  "true",
  "[]",
  "{}",
  [],
  {},
  [null],
  [[]],
  { "": "" },
  ...ODD_NUMBERS,
  ...NUMERIC_STRINGS,
);

function hostileValue(big: boolean): fc.Arbitrary<unknown> {
  return fc.oneof(
    { arbitrary: scalarWrong, weight: 6 },
    { arbitrary: unicodeString, weight: 3 },
    { arbitrary: fc.jsonValue({ maxDepth: 3 }), weight: 3 },
    { arbitrary: pollutionValue, weight: 2 },
    { arbitrary: deepValue, weight: 1 },
    { arbitrary: big ? hugeString : fc.constant("x".repeat(1000)), weight: 1 },
    { arbitrary: big ? hugeArray : fc.constant([1, 2, 3]), weight: 1 },
  );
}

// ---------------------------------------------------------------------------------------------
// Cases
// ---------------------------------------------------------------------------------------------

class Case {
  constructor(
    readonly kind: string,
    readonly args: Args,
  ) {}
  /** fast-check prints this instead of a megabyte of JSON. */
  [fc.toStringMethod](): string {
    return `${this.kind} ${preview(this.args)}`;
  }
}

function preview(value: unknown, max = 600): string {
  let json: string;
  try {
    json =
      JSON.stringify(value, (_k, v) =>
        typeof v === "string" && v.length > 80 ? `${v.slice(0, 40)}…<${v.length} chars>` : v,
      ) ?? String(value);
  } catch (err) {
    json = `<unserialisable: ${String(err)}>`;
  }
  json = json.replace(/(\{"a":|\[){20,}/g, (m) => `<nested ${m.length / 5}x>`);
  return json.length > max ? `${json.slice(0, max)}…<${json.length} chars>` : json;
}

const WAIT_TOOLS_ALWAYS = new Set(["build_wait"]);

/**
 * Keeps waits short: a call that would block (build_wait, or wait: true) gets a valid
 * timeoutSeconds of at most 2 unless the case deliberately sent an invalid one.
 */
function capWait(tool: Tool, args: Args, timeoutSeconds: number): Args {
  const props = (tool.inputSchema as JsonSchema).properties ?? {};
  if (!("timeoutSeconds" in props)) return args;
  const waits = WAIT_TOOLS_ALWAYS.has(tool.name) || args.wait === true;
  if (!waits) return args;
  const t = args.timeoutSeconds;
  const validLong = typeof t === "number" && Number.isInteger(t) && t > 2 && t <= 7200;
  if (t === undefined || validLong) setOwn(args, "timeoutSeconds", timeoutSeconds);
  return args;
}

/** One arbitrary of call cases for a tool: valid, boundary and hostile arguments. */
function caseArb(tool: Tool, big: boolean): fc.Arbitrary<Case> {
  const schema = tool.inputSchema as JsonSchema;
  const props = schema.properties ?? {};
  const keys = Object.keys(props);
  const required = schema.required ?? [];
  const valid = objectArb(schema, 0);
  const anyKey = keys.length ? fc.constantFrom(...keys) : fc.constant("x");
  const hostile = hostileValue(big);
  const objectKeys = keys.filter((k) => {
    const t = props[k].type;
    return t === "object" || t === "array";
  });

  const mutate = (kind: string, arb: fc.Arbitrary<Args>) => arb.map((args) => new Case(kind, args));

  const cases: Array<fc.WeightedArbitrary<Case>> = [
    { weight: 8, arbitrary: mutate("valid", valid) },
    {
      weight: 3,
      arbitrary: mutate(
        "boundary",
        keys.length
          ? fc
              .tuple(
                valid,
                fc.array(fc.oneof(...keys.map((k) => fc.tuple(fc.constant(k), boundaryArb(props[k], k)))), {
                  minLength: 1,
                  maxLength: 3,
                }),
              )
              .map(([base, edits]) => {
                const out = copy(base);
                for (const [k, v] of edits) setOwn(out, k, v);
                return out;
              })
          : fc.constant({}),
      ),
    },
    {
      weight: 4,
      arbitrary: mutate(
        "wrong-type",
        fc.tuple(valid, anyKey, hostile).map(([base, k, v]) => setOwn(copy(base), k, v)),
      ),
    },
    {
      weight: 1,
      arbitrary: mutate(
        "all-wrong",
        fc.tuple(fc.array(hostileValue(false), { minLength: keys.length, maxLength: keys.length })).map(([vals]) => {
          const out: Args = {};
          keys.forEach((k, i) => setOwn(out, k, vals[i]));
          return out;
        }),
      ),
    },
    {
      weight: 2,
      arbitrary: mutate(
        "missing-required",
        fc
          .tuple(valid, required.length ? fc.subarray(required, { minLength: 1 }) : fc.subarray(keys))
          .map(([base, drop]) => {
            const out = copy(base);
            for (const k of drop) delete out[k];
            return out;
          }),
      ),
    },
    { weight: 1, arbitrary: fc.constant(new Case("empty", {})) },
    {
      weight: 2,
      arbitrary: mutate(
        "extra-props",
        fc
          .tuple(
            valid,
            fc.array(
              fc.tuple(
                fc.oneof(
                  fc.string({ minLength: 1, maxLength: 10 }),
                  fc.constantFrom("__proto__", "constructor", "prototype", "toString", "hasOwnProperty", "valueOf", ""),
                ),
                hostile,
              ),
              { minLength: 1, maxLength: 5 },
            ),
          )
          .map(([base, extra]) => {
            const out = copy(base);
            for (const [k, v] of extra) if (!(k in props)) setOwn(out, k, v);
            return out;
          }),
      ),
    },
    {
      weight: 2,
      arbitrary: mutate(
        "prototype-pollution",
        fc
          .tuple(
            valid,
            pollutionValue,
            fc.option(objectKeys.length ? fc.constantFrom(...objectKeys) : fc.constant(undefined), { nil: undefined }),
          )
          .map(([base, payload, into]) => {
            const out = copy(base);
            for (const k of Object.keys(payload)) setOwn(out, k, (payload as Args)[k]);
            if (into !== undefined) {
              const inner = out[into];
              if (isPlainObject(inner)) {
                const merged = copy(inner);
                for (const k of Object.keys(payload)) setOwn(merged, k, (payload as Args)[k]);
                setOwn(out, into, merged);
              } else if (Array.isArray(inner)) {
                setOwn(out, into, [...inner, payload]);
              }
            }
            return out;
          }),
      ),
    },
    {
      weight: 2,
      arbitrary: mutate(
        "unicode",
        fc
          .tuple(valid, fc.array(fc.tuple(anyKey, unicodeString), { minLength: 1, maxLength: 4 }))
          .map(([base, edits]) => {
            const out = copy(base);
            for (const [k, v] of edits) setOwn(out, k, v);
            return out;
          }),
      ),
    },
    {
      weight: 1,
      arbitrary: mutate(
        "odd-numbers",
        fc
          .tuple(valid, anyKey, fc.constantFrom(...ODD_NUMBERS, ...NUMERIC_STRINGS))
          .map(([base, k, v]) => setOwn(copy(base), k, v)),
      ),
    },
  ];
  if (big) {
    cases.push(
      {
        weight: 1,
        arbitrary: mutate(
          "huge-string",
          fc.tuple(valid, anyKey, hugeString).map(([base, k, v]) => setOwn(copy(base), k, v)),
        ),
      },
      {
        weight: 1,
        arbitrary: mutate(
          "huge-array",
          fc.tuple(valid, anyKey, hugeArray).map(([base, k, v]) => setOwn(copy(base), k, v)),
        ),
      },
      {
        weight: 1,
        arbitrary: mutate(
          "deep-nesting",
          fc
            .tuple(valid, objectKeys.length ? fc.constantFrom(...objectKeys, ...keys) : anyKey, deepValue)
            .map(([base, k, v]) => {
              const out = copy(base);
              const inner = out[k];
              if (isPlainObject(inner)) setOwn(out, k, setOwn(copy(inner), "deep", v));
              else setOwn(out, k, v);
              return out;
            }),
        ),
      },
    );
  }
  return fc
    .tuple(fc.oneof(...cases), fc.integer({ min: 1, max: 2 }))
    .map(([c, t]) => new Case(c.kind, capWait(tool, c.args, t)))
    .filter((c) => big || JSON.stringify(c.args).length < HTTP_MAX_ARG_BYTES);
}

// ---------------------------------------------------------------------------------------------
// Checks
// ---------------------------------------------------------------------------------------------

/** Server texts that mean a crash was caught and wrapped, or the SDK refused our own output. */
const CRASH_TEXT = new RegExp(
  /Internal error in switchboard-mcp|Output validation error|TypeError|ReferenceError|RangeError|/.source +
    /Maximum call stack|is not a function|Cannot read propert|Cannot convert|\bat [\w.<>]+ \(.*:\d+:\d+\)/.source,
);

function checkResult(tool: string, c: Case, raw: unknown): void {
  const where = `${tool} ${c.kind} ${preview(c.args, 300)}`;
  expect(isPlainObject(raw), `${where}: result is an object`).toBe(true);
  const result = raw as CallToolResult;
  expect(Array.isArray(result.content), `${where}: content is an array`).toBe(true);
  expect(result.content.length, `${where}: content is not empty`).toBeGreaterThan(0);
  for (const item of result.content) {
    expect(item.type, `${where}: content item is text`).toBe("text");
    const t = (item as { text?: unknown }).text;
    expect(
      typeof t === "string" && t.trim().length > 0,
      `${where}: text is a non-empty string (got ${preview(t, 100)})`,
    ).toBe(true);
  }
  const allText = result.content.map((i) => (i as { text: string }).text).join("\n");
  if (result.isError) {
    expect(allText.trim().length, `${where}: error text says something`).toBeGreaterThan(10);
    expect(allText, `${where}: error text`).not.toMatch(/^\s*(undefined|null|\[object Object\]|Error|\{\})\s*$/);
    expect(allText, `${where}: error text`).not.toContain("[object Object]");
    expect(allText, `${where}: error text is not a crash: ${allText.slice(0, 400)}`).not.toMatch(CRASH_TEXT);
  } else {
    expect(isPlainObject(result.structuredContent), `${where}: structuredContent is a plain object`).toBe(true);
    expect(allText, `${where}: text`).not.toContain("[object Object]");
    expect(allText, `${where}: text`).not.toMatch(/^\s*undefined\s*$/);
  }
}

function findKey(value: unknown, key: string, depth = 0): boolean {
  if (value === null || typeof value !== "object" || depth > 200) return false;
  if (Array.isArray(value)) return value.some((v) => findKey(v, key, depth + 1));
  return Object.keys(value).some((k) => k === key || findKey((value as Args)[k], key, depth + 1));
}

interface FuzzStats {
  calls: number;
  errors: number;
  byKind: Record<string, number>;
}

async function fuzzTools(
  client: Client,
  tools: Tool[],
  runs: number,
  big: boolean,
  stats: FuzzStats,
): Promise<string[]> {
  const failures: string[] = [];
  for (const [index, tool] of tools.entries()) {
    const seed = SEED + index;
    try {
      await fc.assert(
        fc.asyncProperty(caseArb(tool, big), async (c) => {
          stats.calls++;
          stats.byKind[c.kind] = (stats.byKind[c.kind] ?? 0) + 1;
          let raw: unknown;
          try {
            raw = await client.callTool({ name: tool.name, arguments: c.args }, { timeout: CALL_TIMEOUT_MS });
          } catch (err) {
            throw new Error(
              `${tool.name} ${c.kind}: the call rejected (protocol error, crash or hang) ` +
                `instead of returning a result: ${String(err).slice(0, 500)}`,
            );
          }
          if ((raw as CallToolResult).isError) stats.errors++;
          checkResult(tool.name, c, raw);
        }),
        { numRuns: runs, seed, endOnFailure: !SHRINK, includeErrorInReport: true },
      );
    } catch (err) {
      failures.push(`[${tool.name}] ${String(err instanceof Error ? err.message : err).slice(0, 3000)}`);
    }
  }
  return failures;
}

/** Fills `known` with identifiers that exist upstream. */
async function learnIdentifiers(client: Client): Promise<void> {
  const sc = async (name: string, args: Args = {}) =>
    ((await client.callTool({ name, arguments: args })) as CallToolResult).structuredContent as Args;
  const projects = ((await sc("build_list_projects", { limit: 100 })).projects as Array<{ projectId: string }>).map(
    (p) => p.projectId,
  );
  known.projectId = projects;
  const versions = (await sc("build_list_versions", { projectId: "acme-storefront", limit: 20 })).versions as Array<{
    _id: string;
  }>;
  known.versionId = versions.map((v) => v._id);
  const details = await sc("build_get_project", { projectId: "acme-storefront" });
  known.secretId = ((details.secrets as Array<{ _id: string }> | undefined) ?? []).map((s) => s._id);
  const schema = await sc("build_get_database_schema", { projectId: "acme-storefront" });
  const tables = JSON.stringify(schema).match(/"(?:name|label|tableName)":"([a-z_]+)"/g) ?? [];
  known.tableName = [...new Set(["customers", ...tables.map((t) => t.split(":")[1].replace(/"/g, ""))])];
  const drones = ((await sc("drones_list_drones", { limit: 500 })).drones as Array<{ _id: string }>).map((d) => d._id);
  const missions = ((await sc("drones_list_missions", { limit: 500 })).missions as Array<{ _id: string }>).map(
    (d) => d._id,
  );
  const alerts = ((await sc("drones_list_alerts", { limit: 500 })).alerts as Array<{ _id: string }>).map((d) => d._id);
  known.id = [...drones.slice(0, 10), ...missions.slice(0, 10), ...alerts.slice(0, 10)];
  known.droneId = drones.slice(0, 10);
  known.clothing_item_id = ((await sc("sizing_get_catalog", { limit: 50 })).items as Array<{ _id: string }>).map(
    (i) => i._id,
  );
  known.status = [
    "active",
    "idle",
    "charging",
    "maintenance",
    "offline",
    "open",
    "resolved",
    "in_progress",
    "completed",
  ];
  known.hostname = ["shop.example.org", "a.bc", "xn--bcher-kva.example"];
}

function fuzzEnv(sandbox: Sandbox): Record<string, string> {
  return sandboxEnv(sandbox, {
    BUILD_POLL_INTERVAL_MS: "5",
    UPSTREAM_TIMEOUT_MS: "2000",
    BUILD_CONFIRM_SPEND: "never",
    LOG_LEVEL: "info",
  });
}

async function fuzzSandbox(): Promise<Sandbox> {
  return testSandbox({
    timeScale: 200_000,
    build: { createsPerMinute: 100_000, maxProjects: 1_000_000, credits: { recurrentCredits: 1e9, oneTimeCredits: 0 } },
  });
}

const LEAK_WORDS = /uncaught|unhandled/i;

/** The server still answers a protocol request (2025: ping; 2026-07-28 has no ping: server/discover). */
async function expectAlive(client: Client): Promise<void> {
  if (MODERN) expect((await client.discover()).supportedVersions).toContain("2026-07-28");
  else expect(await client.ping()).toEqual({});
}

// ---------------------------------------------------------------------------------------------
// stdio
// ---------------------------------------------------------------------------------------------

describe("fuzzing every tool over stdio", () => {
  let sandbox: Sandbox;
  let conn: StdioConnection;
  let tools: Tool[];
  const stats: FuzzStats = { calls: 0, errors: 0, byKind: {} };
  let baseline: { drones: number; catalog: number };

  beforeAll(async () => {
    sandbox = await fuzzSandbox();
    conn = await retryStart(() => connectStdio(fuzzEnv(sandbox)));
    try {
      tools = (await conn.client.listTools()).tools;
      await learnIdentifiers(conn.client);
    } catch (err) {
      throw new Error(`setup failed: ${String(err)}\nserver stderr:\n${conn.stderr().slice(-4000)}`);
    }
  }, SETUP_TIMEOUT_MS);
  afterAll(async () => {
    await conn?.close();
    await sandbox?.close();
  });

  const counts = async () => {
    const drones = (await conn.client.callTool({ name: "drones_list_drones", arguments: {} })) as CallToolResult;
    const catalog = (await conn.client.callTool({ name: "sizing_get_catalog", arguments: {} })) as CallToolResult;
    const projects = (await conn.client.callTool({ name: "build_list_projects", arguments: {} })) as CallToolResult;
    for (const r of [drones, catalog, projects]) {
      expect(r.isError, JSON.stringify(r).slice(0, 300)).toBeFalsy();
      expect(findKey(r, "polluted"), JSON.stringify(r).slice(0, 300)).toBe(false);
      expect(JSON.stringify(r)).not.toMatch(/polluted/);
    }
    return {
      drones: (drones.structuredContent as { matched: number }).matched,
      catalog: (catalog.structuredContent as { total: number }).total,
      projects: (projects.structuredContent as { count: number }).count,
    };
  };

  it("lists tools with object input schemas", () => {
    expect(tools.length).toBeGreaterThanOrEqual(36);
    for (const t of tools) expect(t.inputSchema.type, t.name).toBe("object");
    // The identifiers the generators draw on were found.
    for (const k of ["projectId", "versionId", "id", "clothing_item_id"])
      expect(known[k]?.length, k).toBeGreaterThan(0);
  });

  it("answers a call without any arguments object", async () => {
    for (const tool of tools) {
      const raw = await conn.client.callTool({ name: tool.name }, { timeout: CALL_TIMEOUT_MS });
      checkResult(tool.name, new Case("no-arguments", {}), raw);
    }
  });

  it("refuses identifiers holding lone UTF-16 surrogates as a tool error, not an internal error", async () => {
    // Found by this fuzzer: an id that cannot be percent-encoded must be refused like any other
    // bad argument (or sent and answered 404), never end in "Internal error ... URI malformed".
    const cases: Array<[string, Args]> = [
      ["build_delete_secret", { projectId: "acme-storefront", secretId: "x\uD83Dy" }],
      ["build_recover_version", { projectId: "acme-storefront", versionId: "\uDFFF" }],
      ["drones_get_drone", { id: "\uD800" }],
      ["drones_get_mission", { id: "\uD800" }],
      ["drones_get_alert", { id: "\uD800" }],
      ["drones_update_alert", { id: "\uD800", changes: { status: "acknowledged" } }],
    ];
    const bad: string[] = [];
    for (const [name, args] of cases) {
      const raw = (await conn.client.callTool(
        { name, arguments: args },
        { timeout: CALL_TIMEOUT_MS },
      )) as CallToolResult;
      const t = raw.content.map((c) => (c.type === "text" ? c.text : "")).join("\n");
      if (!raw.isError || CRASH_TEXT.test(t))
        bad.push(`${name} ${JSON.stringify(args)} -> isError=${raw.isError} ${JSON.stringify(t)}`);
    }
    expect(bad, bad.join("\n")).toEqual([]);
  });

  it("lets no prototype-pollution payload reach the server", { timeout: 120_000 }, async () => {
    const before = await counts();
    baseline = { drones: before.drones, catalog: before.catalog };
    expect(before.drones).toBeGreaterThan(0);
    expect(before.projects).toBeGreaterThan(1);
    for (const [index, tool] of tools.entries()) {
      const schema = tool.inputSchema as JsonSchema;
      const props = schema.properties ?? {};
      const objectProps = Object.keys(props).filter((k) => props[k].type === "object");
      // Valid arguments, so the payload gets past validation wherever the schema lets it through.
      const bases = fc.sample(objectArb(schema, 0), { numRuns: 2, seed: SEED + index });
      for (const base of bases) {
        for (const payload of pollution()) {
          const top = copy(base);
          for (const k of Object.keys(payload)) setOwn(top, k, payload[k]);
          const nested = copy(base);
          for (const k of objectProps) {
            const inner = isPlainObject(nested[k]) ? copy(nested[k] as Args) : {};
            for (const pk of Object.keys(payload)) setOwn(inner, pk, payload[pk]);
            setOwn(nested, k, inner);
          }
          for (const args of objectProps.length ? [top, nested] : [top]) {
            capWait(tool, args, 1);
            const raw = await conn.client.callTool({ name: tool.name, arguments: args }, { timeout: CALL_TIMEOUT_MS });
            checkResult(tool.name, new Case("pollution", args), raw);
          }
        }
      }
    }
    // A polluted Object.prototype would show as an inherited `search`/`status`/`limit` on parsed
    // inputs (filtering everything out) or as a `polluted` field.
    const after = await counts();
    expect(after.drones).toBe(before.drones);
    expect(after.catalog).toBe(before.catalog);
    expect(after.projects).toBeGreaterThan(1);
    expect(({} as Args).polluted).toBeUndefined(); // nor in the sandbox's process
  });

  // The generated calls test each tool's input handling, which the era does not change, and the
  // seed is fixed: in the 2025 era they were the same calls again. They run in 2026-07-28 (the era
  // whose request path the server re-implements); the cases above and the HTTP run, whose hostile
  // envelopes and transports do differ by era, run in both.
  it.runIf(MODERN)(GENERATED, { timeout: 240_000 }, async () => {
    const started = performance.now();
    const failures = await fuzzTools(conn.client, tools, STDIO_RUNS, true, stats);
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    console.info(
      `fuzz over stdio: ${stats.calls} calls (${stats.errors} isError) on ${tools.length} tools in ${seconds}s, ` +
        `seed ${SEED}; by kind ${JSON.stringify(stats.byKind)}`,
    );
    expect(failures.length, failures.join("\n\n")).toBe(0);
    expect(stats.calls).toBeGreaterThanOrEqual(5000);
  });

  it("is still alive, answers ping (2026-07-28: server/discover) and tools/list; stdout, stderr clean", async () => {
    await expectAlive(conn.client);
    const again = (await conn.client.listTools()).tools;
    expect(again.map((t) => t.name)).toEqual(tools.map((t) => t.name));
    const after = await counts();
    expect(after.drones).toBe(baseline.drones);
    expect(after.catalog).toBe(baseline.catalog);
    expect(({} as Args).polluted).toBeUndefined();
    expect(conn.strayStdout()).toEqual([]);
    expect(conn.stderr()).not.toMatch(LEAK_WORDS);
  });
});

// ---------------------------------------------------------------------------------------------
// Streamable HTTP
// ---------------------------------------------------------------------------------------------

describe("fuzzing every tool over Streamable HTTP", () => {
  let sandbox: Sandbox;
  let http: HttpServerProcess;
  let client: Client;
  const stats: FuzzStats = { calls: 0, errors: 0, byKind: {} };

  beforeAll(async () => {
    sandbox = await fuzzSandbox();
    http = await retryStart(() => spawnHttpServer(fuzzEnv(sandbox)));
    client = await connectHttp(http.url);
  }, SETUP_TIMEOUT_MS);
  afterAll(async () => {
    await client?.close();
    await http?.stop();
    await sandbox?.close();
  });

  it(`answers ${HTTP_RUNS} generated calls per tool with well-formed results`, { timeout: 120_000 }, async () => {
    const tools = (await client.listTools()).tools;
    await learnIdentifiers(client);
    const failures = await fuzzTools(client, tools, HTTP_RUNS, false, stats);
    console.info(`fuzz over HTTP: ${stats.calls} calls (${stats.errors} isError), seed ${SEED}`);
    expect(failures.length, failures.join("\n\n")).toBe(0);
    expect(stats.calls).toBe(HTTP_RUNS * tools.length);

    await expectAlive(client);
    expect((await client.listTools()).tools.length).toBe(tools.length);
    expect(http.child.exitCode).toBeNull();
    const health = await fetch(new URL("/healthz", http.url));
    expect(health.status).toBe(200);
    expect(http.stderr()).not.toContain("[stdout]");
    expect(http.stderr()).not.toMatch(LEAK_WORDS);
  });
});
