// The soak's short form: `npm run soak` (100,000 calls) is the evidence docs/security.md cites, so
// a broken soak must fail the suite. 1,000 calls over stdio and HTTP with a fault every 25 calls:
// every call ends explained (a result, an isError with a cause and a next step, or a refusal
// naming the argument), no server exits, both answer at the end.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

const SOAK = fileURLToPath(new URL("../../../scripts/soak.mjs", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "switchboard-soak-test-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function runSoak(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [SOAK], {
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (c: Buffer) => (output += c.toString()));
    child.stderr.on("data", (c: Buffer) => (output += c.toString()));
    child.once("exit", (code) => resolve({ code, output }));
  });
}

describe("npm run soak, short", () => {
  it("explains every one of 1,000 calls under injected faults, and both servers survive", async () => {
    const results = join(dir, "soak.json");
    const { code, output } = await runSoak({
      SOAK_CALLS: "1000",
      SOAK_HTTP_SESSIONS: "4",
      SOAK_CALLS_PER_SESSION: "125",
      SOAK_STDIO_CONCURRENCY: "8",
      SOAK_FAULT_EVERY: "25",
      SOAK_RESULTS: results,
    });
    expect(code, output).toBe(0);
    const report = JSON.parse(readFileSync(results, "utf8"));
    expect(report.totalCalls).toBe(1000);
    expect(report.faults.injected).toBeGreaterThanOrEqual(30);
    expect(report.results.crashes).toBe(0);
    expect(report.unexplainedCount, JSON.stringify(report.unexplained.slice(0, 5))).toBe(0);
    expect(report.servers.stdio.finalCheck).toBe("ok");
    expect(report.servers.http.finalCheck).toBe("ok");
    const refused = report.results.invalidCallsRefused;
    expect(refused.isError + refused.protocolError).toBeGreaterThan(0);
  });
});
