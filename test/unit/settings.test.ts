// Every server setting is declared once, in src/core/base/settings.ts: its variable, field, type,
// default, help and section. Parsing, --help, the README table and every module's fallback derive
// from there, so a variable's name or its default written anywhere else in src/ is a second
// declaration that will drift. This test finds both.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { type SettingDecl, SETTINGS, settingDefault } from "../../src/core/base/settings.js";
import { helpText, parseCommand, serverDefaults } from "../../src/config.js";
import { codeOf, sourceFiles } from "../layering.js";

const SRC = fileURLToPath(new URL("../../src", import.meta.url));
const DECLARATION = fileURLToPath(new URL("../../src/core/base/settings.ts", import.meta.url));
const decls = Object.entries(SETTINGS) as Array<[string, SettingDecl]>;
const others = sourceFiles(SRC).filter((f) => f !== DECLARATION);
/**
 * The simulators are a program of their own that imports nothing of the server (layering.test.ts):
 * their library defaults (a time scale, one account) are what the sandbox settings document, so
 * the defaults check skips them; the names check covers them.
 */
const server = others.filter((f) => !f.startsWith(`${SRC}/sandbox/`));

/** Words of an identifier or a variable, without those that say nothing of which setting it is. */
const STOP = new Set(["default", "max", "min", "ms", "seconds", "bytes", "mcp", "per", "the"]);
function words(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .toLowerCase()
    .split(/_+/)
    .filter((w) => w && !STOP.has(w))
    .map((w) => w.replace(/s$/, ""));
}

/** The value of a number literal or a product of them (`45_000`, `64 * 1024 * 1024`), or a quoted string. */
function literalValue(literal: string): string {
  if (/^["'`]/.test(literal)) return literal.slice(1, -1);
  return String(literal.split("*").reduce((n, f) => n * Number(f.trim().replace(/_/g, "")), 1));
}

/**
 * Second defaults in a text: a literal equal to a setting's default (in its unit, or in ms for a
 * setting in seconds) given as the fallback or initial value of a name made of that setting's words
 * (`config.maxTenants ?? 10_000`, `DEFAULT_BLOCKING_WAIT_MS = 45_000`, `idleSessionMs ?? 30 * 60_000`).
 */
function secondDefaults(text: string): string[] {
  const found: string[] = [];
  const site = /([A-Za-z_][\w]*)\)?\s*(?:\?\?|\|\||=|:)\s*(\d[\d_]*(?:\s*\*\s*\d[\d_]*)*|"[^"\n]*"|'[^'\n]*')/g;
  for (const m of text.matchAll(site)) {
    const subject = words(m[1]);
    if (subject.length === 0) continue;
    // A string is a second default only as a fallback: `level: "info"` names a level, not its default.
    if (/^["']/.test(m[2]) && !/\?\?|\|\|/.test(m[0])) continue;
    const value = literalValue(m[2]);
    for (const [, d] of decls) {
      if (typeof d.default !== "string") continue;
      const values = [d.default, ...(/_SECONDS$/.test(d.env) ? [String(Number(d.default) * 1000)] : [])];
      const own = words(d.env);
      if (values.includes(value) && subject.every((w) => own.includes(w))) found.push(`${m[0]} (${d.env})`);
    }
  }
  return found;
}

describe("server settings", () => {
  it("each variable's name appears in src/ only in its declaration", () => {
    const names = decls.map(([, d]) => d.env);
    const found = others.flatMap((file) => {
      const text = readFileSync(file, "utf8");
      return names
        .filter((n) => new RegExp(`(?<![A-Za-z0-9_])${n}(?![A-Za-z0-9_])`).test(text))
        .map((n) => `${file.slice(SRC.length + 1)}: ${n} (write ENV.field instead)`);
    });
    expect(found).toEqual([]);
  });

  it("no module of src/ keeps a second default of a setting", () => {
    const found = server.flatMap((file) =>
      secondDefaults(codeOf(file)).map((s) => `${file.slice(SRC.length + 1)}: ${s}`),
    );
    expect(found).toEqual([]);
  });

  it("the second-default finder catches the forms it is for", () => {
    expect(secondDefaults("{ max: config.maxTenants ?? 10_000, sealer }")).toHaveLength(1);
    expect(secondDefaults("return (this.shared.config.maxBlockingWaitSeconds ?? 45) * 1000;")).toHaveLength(1);
    expect(secondDefaults("export const DEFAULT_BLOCKING_WAIT_MS = 45_000;")).toHaveLength(1);
    expect(secondDefaults("const idleMs = options.idleSessionMs ?? 30 * 60_000;")).toHaveLength(1);
    expect(secondDefaults("  maxConnections: 2000,")).toHaveLength(1);
    // Another fact that happens to share the number is no second default.
    expect(secondDefaults("this.maxProjects = options.maxProjects ?? 100;")).toEqual([]);
    expect(secondDefaults("const DEFAULT_BUDGET_WAIT_MS = 2000;")).toEqual([]);
    expect(secondDefaults('{ level: "info" }')).toEqual([]);
    expect(secondDefaults('const level = options.logLevel ?? "info";')).toHaveLength(1);
  });

  it("parsing, --help and the defaults come from the declarations", () => {
    const help = helpText();
    const cmd = parseCommand([], {});
    if (cmd.kind !== "serve") throw new Error(cmd.kind);
    const defaults = serverDefaults() as Record<string, unknown>;
    for (const [field, d] of decls) {
      expect(help, d.env).toContain(d.env);
      if (d.sandboxOnly) continue;
      expect((cmd.config as unknown as Record<string, unknown>)[field], field).toEqual(defaults[field]);
      if (typeof d.default === "string") {
        expect(settingDefault(field as keyof typeof SETTINGS), field).toEqual(defaults[field]);
        expect(help, d.env).toMatch(
          new RegExp(`${d.env} .*\\(default: ${(d.shown ?? d.default).replace(/[()]/g, "\\$&")}\\)`),
        );
      }
    }
  });

  it("a variable set is read into its field, and a bad one names the variable", () => {
    const cmd = parseCommand([], { MCP_MAX_TENANTS: "7", MCP_MAX_BLOCKING_WAIT_SECONDS: "30" });
    if (cmd.kind !== "serve") throw new Error(cmd.kind);
    expect(cmd.config).toMatchObject({ maxTenants: 7, maxBlockingWaitSeconds: 30 });
    expect(() => parseCommand([], { MCP_MAX_TENANTS: "0" })).toThrow(/^MCP_MAX_TENANTS: must be positive$/);
  });
});
