// The layering rules of docs/architecture.md, checked on every import in src/:
// core/ knows no service (it imports only core/, the SDK and libraries, and its code names no
// service's tools or keys); no service imports another service or the sandbox; the sandbox
// imports no service.
import { relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { SERVICES } from "../../src/services/registry.js";
import { codeOf, relativeImports, sourceFiles } from "../layering.js";

const SRC = fileURLToPath(new URL("../../src", import.meta.url));

const area = (path: string) => {
  const [top, second] = path.split("/");
  return top === "services" && second && second !== "registry.ts" ? `services/${second}` : top;
};

const all = sourceFiles(SRC).map((f) => ({
  path: f,
  file: relative(SRC, f),
  imports: relativeImports(f).map((i) => relative(SRC, i)),
}));

/** What only a service may say: its tools' prefix (`<service>_`) and the start of its keys. */
const SERVICE_WORDS = SERVICES.flatMap((s) => [`${s.name}_`, ...(s.bearerKeyPrefix ? [s.bearerKeyPrefix] : [])]);

/**
 * core/'s folders, lowest first: a folder may import its own layer and those below, never above.
 * Every file of core/ sits in one of them (nothing loose in core/'s root).
 */
const CORE_LAYERS = [
  ["base"], // json, text, logger, egress, seal, telemetry's interface: used by everything, using nothing
  ["telemetry"], // the OpenTelemetry SDK behind base/telemetry.ts, loaded only when turned on (launch.ts)
  ["upstream"], // the upstream HTTP client, pollers, waits
  ["tools"], // defining and running one tool call: errors, fitting, confirmations, spend-once
  ["service"], // what a service module declares: the module, settings, resources, prompts, views
  ["tasks", "state", "vault", "tenancy", "auth"], // what the server keeps across calls and callers
  ["mcp"], // McpServer instances over the runtime
  ["http", "stdio"], // the transports
];

describe("layering", () => {
  it("reads every source file", () => {
    expect(all.length).toBeGreaterThan(40);
  });

  it("core imports only core", () => {
    const bad = all
      .filter((f) => f.file.startsWith("core/"))
      .flatMap((f) => f.imports.filter((i) => !i.startsWith("core/")).map((i) => `${f.file} -> ${i}`));
    expect(bad).toEqual([]);
  });

  it("inside core, a layer imports only its own and lower layers (docs/architecture.md's tree)", () => {
    const rank = (file: string) => CORE_LAYERS.findIndex((layer) => layer.includes(file.split("/")[1]));
    const core = all.filter((f) => f.file.startsWith("core/"));
    expect(core.filter((f) => rank(f.file) < 0).map((f) => f.file)).toEqual([]);
    const bad = core.flatMap((f) =>
      f.imports.filter((i) => i.startsWith("core/") && rank(i) > rank(f.file)).map((i) => `${f.file} -> ${i}`),
    );
    expect(bad).toEqual([]);
  });

  it("one module registers tools with the SDK (every tool call passes its wrapper)", () => {
    const callers = all.filter((f) => /\.registerTool\(/.test(codeOf(f.path))).map((f) => f.file);
    expect(callers).toEqual(["core/mcp/tool-call.ts"]);
  });

  it("core's code names no service's tools or keys (its messages come from the services' declarations)", () => {
    expect(SERVICE_WORDS).toEqual(expect.arrayContaining(["build_", "sizing_", "drones_", "tlm_sk_"]));
    const word = new RegExp(`\\b(${SERVICE_WORDS.join("|")})`, "g");
    const bad = all
      .filter((f) => f.file.startsWith("core/"))
      .flatMap((f) => [...codeOf(f.path).matchAll(word)].map((m) => `${f.file}: ${m[0]}`));
    expect(bad).toEqual([]);
  });

  it("no service imports another service or the sandbox", () => {
    const bad = all
      .filter((f) => area(f.file).startsWith("services/"))
      .flatMap((f) =>
        f.imports
          .filter(
            (i) =>
              (area(i).startsWith("services/") && area(i) !== area(f.file)) ||
              i.startsWith("sandbox/") ||
              i === "services/registry.ts",
          )
          .map((i) => `${f.file} -> ${i}`),
      );
    expect(bad).toEqual([]);
  });

  it("the sandbox imports no service and nothing of the server", () => {
    const bad = all
      .filter((f) => f.file.startsWith("sandbox/"))
      .flatMap((f) => f.imports.filter((i) => !i.startsWith("sandbox/")).map((i) => `${f.file} -> ${i}`));
    expect(bad).toEqual([]);
  });
});
