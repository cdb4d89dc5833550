/**
 * Keeps one tool result well under a model's context budget (about 25,000 tokens): the structured
 * content is held to ~48,000 characters and the text to ~16,000. Tools page their own lists; this
 * is the safety net for answers that are large anyway (long messages, logs, records). What was cut
 * is recorded in `_trimmed`, so the caller knows and can page for the rest.
 */
export const MAX_STRUCTURED_CHARS = 48_000;
const MAX_TEXT_CHARS = 16_000;
const MAX_STRING_CHARS = 4_000;

interface Trim {
  path: string;
  kept: number;
  total: number;
  unit: "items" | "characters";
}

export function fitStructured(output: Record<string, unknown>): { output: Record<string, unknown>; trims: Trim[] } {
  if (surelyFits(output) || JSON.stringify(output).length <= MAX_STRUCTURED_CHARS) return { output, trims: [] };
  const trims: Trim[] = [];
  let current = cutStrings(output, "", trims) as Record<string, unknown>;
  for (let round = 0; round < 40 && JSON.stringify(current).length > MAX_STRUCTURED_CHARS; round++) {
    const largest = largestArray(current, "");
    if (!largest || largest.array.length <= 1) break;
    const keep = Math.max(1, Math.floor(largest.array.length / 2));
    const previous = trims.find((t) => t.path === largest.path && t.unit === "items");
    if (previous) previous.kept = keep;
    else trims.push({ path: largest.path, kept: keep, total: largest.array.length, unit: "items" });
    current = replaceAt(current, largest.keys, largest.array.slice(0, keep)) as Record<string, unknown>;
  }
  return {
    output: {
      ...current,
      _trimmed: { note: "Result trimmed to fit a model's context; page or filter to read the rest.", trims },
    },
    trims,
  };
}

/**
 * Whether the JSON of `value` is surely within MAX_STRUCTURED_CHARS, decided without writing it
 * (most results are a few KB; writing them only to measure them was a call's largest allocation):
 * every character counted as if escaped (`\uXXXX`), every number as the longest a number prints.
 * False means "not sure": anything but plain data, or a bound that is too loose, is measured.
 */
function surelyFits(value: unknown): boolean {
  return room(value, MAX_STRUCTURED_CHARS, 0) >= 0;
}

function room(value: unknown, left: number, depth: number): number {
  if (typeof value === "string") return left - (6 * value.length + 2);
  if (typeof value === "number") return left - 24;
  if (typeof value === "boolean" || value === null || value === undefined) return left - 5;
  if (typeof value !== "object" || depth > 64 || typeof (value as { toJSON?: unknown }).toJSON === "function")
    return -1;
  let rest = left - 2;
  if (Array.isArray(value)) {
    for (const item of value) if ((rest = room(item, rest - 1, depth + 1)) < 0) return rest;
    return rest;
  }
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return -1;
  for (const key of Object.keys(value)) {
    rest = room((value as Record<string, unknown>)[key], rest - (6 * key.length + 4), depth + 1);
    if (rest < 0) return rest;
  }
  return rest;
}

export function fitText(text: string, trims: Trim[]): string {
  let out =
    text.length > MAX_TEXT_CHARS
      ? `${text.slice(0, MAX_TEXT_CHARS)}\n… (${text.length - MAX_TEXT_CHARS} more characters not shown)`
      : text;
  if (trims.length) {
    const what = trims.map((t) => `${t.path || "(root)"}: ${t.kept} of ${t.total} ${t.unit}`).join("; ");
    out += `\n(Trimmed to fit the context: ${what}. Use the tool's paging or filter arguments for the rest.)`;
  }
  return out;
}

function cutStrings(value: unknown, path: string, trims: Trim[]): unknown {
  if (typeof value === "string") {
    if (value.length <= MAX_STRING_CHARS) return value;
    trims.push({ path, kept: MAX_STRING_CHARS, total: value.length, unit: "characters" });
    return `${value.slice(0, MAX_STRING_CHARS)}…`;
  }
  if (Array.isArray(value)) return value.map((v, i) => cutStrings(v, `${path}[${i}]`, trims));
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, cutStrings(v, path ? `${path}.${k}` : k, trims)]),
    );
  }
  return value;
}

interface Found {
  path: string;
  keys: Array<string | number>;
  array: unknown[];
  size: number;
}

function largestArray(value: unknown, path: string, keys: Array<string | number> = []): Found | undefined {
  let best: Found | undefined;
  const consider = (f: Found | undefined) => {
    if (f && (!best || f.size > best.size)) best = f;
  };
  if (Array.isArray(value)) {
    consider({ path, keys, array: value, size: JSON.stringify(value).length });
    value.forEach((v, i) => consider(largestArray(v, `${path}[${i}]`, [...keys, i])));
  } else if (value && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) consider(largestArray(v, path ? `${path}.${k}` : k, [...keys, k]));
  }
  return best;
}

function replaceAt(value: unknown, keys: Array<string | number>, replacement: unknown): unknown {
  if (keys.length === 0) return replacement;
  const [head, ...rest] = keys;
  if (Array.isArray(value)) return value.map((v, i) => (i === head ? replaceAt(v, rest, replacement) : v));
  const obj = value as Record<string, unknown>;
  return { ...obj, [head]: replaceAt(obj[head as string], rest, replacement) };
}
