// The shipped Prometheus alert rules (deploy/prometheus/alerts.yml) are what promtool accepts,
// and they name only metrics the server exports (docs/observability.md).
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const RULES = fileURLToPath(new URL("../../deploy/prometheus/alerts.yml", import.meta.url));
const OTEL = fileURLToPath(new URL("../../src/core/telemetry/otel.ts", import.meta.url));
const hasPromtool = spawnSync("promtool", ["--version"]).status === 0;

describe("alert rules", () => {
  it.runIf(hasPromtool)("pass promtool check rules", () => {
    const r = spawnSync("promtool", ["check", "rules", RULES], { encoding: "utf8" });
    expect(`${r.stdout}${r.stderr}`).toMatch(/SUCCESS: 6 rules found/);
    expect(r.status).toBe(0);
  });

  it("name only metrics the server declares", () => {
    const source = readFileSync(OTEL, "utf8");
    const declared = [...source.matchAll(/"((?:switchboard|mcp)\.[a-z_.]+)"/g)].map((m) => m[1].replace(/\./g, "_"));
    const used = [...readFileSync(RULES, "utf8").matchAll(/\b(switchboard_[a-z_]+)/g)].map((m) =>
      m[1].replace(/_(total|count|sum|bucket)$/, ""),
    );
    expect(used.length).toBeGreaterThan(5);
    for (const name of used) expect(declared, name).toContain(name);
  });
});
