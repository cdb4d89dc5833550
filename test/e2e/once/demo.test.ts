// `npm run demo`, the README's second thing to try, run as a child the way a person runs it: it must
// exit 0 having played the whole conversation. Its fast form is run here with the server's blocking
// cap (MCP_MAX_BLOCKING_WAIT_SECONDS) at 1 s, so that the build and the deployment outlast it as a
// build at the default pace outlasts the default 45 s: the demo must then follow the build_wait call
// the answer names, as a model would, until the work ends. .ci/run also runs it once at the default
// pace, after the suite. Needs dist/ built (the e2e projects' global setup builds it).
import { execFile } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../../..", import.meta.url));
const DEMO = join(ROOT, "demo", "demo.mjs");
/** The demo has no deadline of its own; on two loaded cores its fast form took up to a minute. */
const DEADLINE_MS = 240_000;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function demo(args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [DEMO, ...args],
      { cwd: ROOT, env: { ...process.env, NO_COLOR: "1", ...env }, timeout: DEADLINE_MS, maxBuffer: 4 << 20 },
      (err, stdout, stderr) =>
        resolve({ code: err ? (typeof err.code === "number" ? err.code : null) : 0, stdout, stderr }),
    );
  });
}

describe("npm run demo", () => {
  it("--fast, with waits capped at 1 s: follows build_wait to the end of the build, deploys, exits 0", {
    timeout: DEADLINE_MS + 10_000,
  }, async () => {
    const run = await demo(["--fast"], { MCP_MAX_BLOCKING_WAIT_SECONDS: "1" });
    const context = `exit ${run.code}\nstdout:\n${run.stdout}\nstderr:\n${run.stderr}`;
    expect(run.code, context).toBe(0);
    expect(run.stderr, context).not.toMatch(/demo failed/);
    const milestones = [
      /connected to switchboard-mcp [\d.]+: \d+ tools/,
      /\d+ credits \(\d+ monthly \+ \d+ purchased\)/,
      /→ build_launch_project \{"projectId":"salon-booking"/,
      /→ build_wait \{"projectId":"salon-booking","until":"agent","since":"[^"]+"\}/,
      /\[build done\] The agent run has ended\./,
      /→ build_deploy \{"projectId":"salon-booking","wait":true\}/,
      /\[deploy done\] The deployment has ended\./,
      /live at https:\/\/\S+/,
      /\d+ drones, average battery/,
      /1 {2}\S+ +[\d.]+ km/,
      /size [A-Z]+ \(\d+% confidence\)/,
      /done in \d+s/,
    ];
    let from = 0;
    for (const milestone of milestones) {
      const at = run.stdout.slice(from).search(milestone);
      expect(at, `after the previous milestone, the demo printed ${milestone}\n${context}`).toBeGreaterThanOrEqual(0);
      from += at;
    }
  });
});
