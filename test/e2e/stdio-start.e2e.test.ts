// A stdio start answers its opening (2025 initialize, 2026-07-28 server/discover) before the
// services' tools load, and holds every later request until they are registered, without telling
// the client its lists changed (core/stdio/serve.ts). The fixture's service loads its tools only
// when the process gets SIGUSR2: an opening that waited for them would never be answered, and a
// tools/list served before them would list nothing. Under --sandbox the simulators and their
// listener start after that answer too, and a tool call sent right after it waits for them.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { CLI, MODERN, sleep } from "../harness.js";

type Json = Record<string, any>;

const SERVE = fileURLToPath(new URL("../fixtures/held-start/serve.ts", import.meta.url));
const START_ORDER = fileURLToPath(new URL("../fixtures/start-order.cjs", import.meta.url));
const ENVELOPE = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1" },
  "io.modelcontextprotocol/clientCapabilities": {},
};

/** A child process spoken to in raw JSON-RPC lines, in the suite's era. */
function rawChild(args: string[], env: Record<string, string>) {
  const child = spawn(process.execPath, args, { env: { PATH: process.env.PATH ?? "", ...env }, stdio: "pipe" });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
  child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));

  const lines = () =>
    stdout
      .split("\n")
      .filter((l) => l.trim())
      .map((l) => JSON.parse(l) as Json);
  const request = (id: number, method: string, params: Json = {}) =>
    child.stdin.write(
      `${JSON.stringify({ jsonrpc: "2.0", id, method, params: MODERN ? { ...params, _meta: ENVELOPE } : params })}\n`,
    );
  async function answer(id: number): Promise<Json> {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const found = lines().find((l) => l.id === id);
      if (found) return found;
      if (Date.now() > deadline) throw new Error(`no answer to ${id}: ${stdout.slice(-500)} ${stderr.slice(-1000)}`);
      await sleep(25);
    }
  }
  const open = () => {
    if (MODERN) request(0, "server/discover");
    else
      request(0, "initialize", {
        protocolVersion: "2025-11-25",
        capabilities: {},
        clientInfo: { name: "raw", version: "1" },
      });
  };
  const initialized = () => {
    if (!MODERN) child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })}\n`);
  };
  return { child, lines, request, answer, open, initialized };
}

describe("a stdio start", () => {
  const held = ["--import", "tsx", SERVE, "--toolsets", "quotes"];
  const { child, lines, request, answer, open, initialized } = rawChild(held, {
    QUOTES_API_BASE_URL: "http://127.0.0.1:9",
    QUOTES_API_KEY: "held-start",
  });
  afterAll(() => {
    child.kill();
  });

  it("answers its opening before the tools load, and lists them once they have", { timeout: 120_000 }, async () => {
    open();
    const opened = (await answer(0)).result;
    expect(opened.instructions).toContain("Quotes: quotes_get_quote");
    expect(opened.capabilities.tools).toEqual({ listChanged: true });
    initialized();
    request(1, "tools/list");
    request(2, "prompts/list");
    child.kill("SIGUSR2");
    const listed = (await answer(1)).result;
    expect(listed.tools.map((t: Json) => t.name)).toEqual(["quotes_get_quote"]);
    expect((await answer(2)).result.prompts).toEqual([]);
    // Held requests are answered in order, and the late registration announced nothing.
    expect(lines().map((l) => l.id ?? l.method)).toEqual([0, 1, 2]);
  });
});

describe("a --sandbox stdio start", () => {
  const dir = mkdtempSync(join(tmpdir(), "switchboard-start-order-"));
  const log = join(dir, "order.log");
  const { child, request, answer, open, initialized } = rawChild(["--require", START_ORDER, CLI, "--sandbox"], {
    START_ORDER_LOG: log,
    SANDBOX_TIME_SCALE: "3000",
  });
  afterAll(() => {
    child.kill();
    rmSync(dir, { recursive: true, force: true });
  });

  it("answers before the simulators listen, and a call sent right after the answer works", {
    timeout: 120_000,
  }, async () => {
    open();
    const opened = (await answer(0)).result;
    // Configured from the simulators' declarations: every service's instructions, completions.
    for (const service of ["Build service:", "Sizing:", "Drones:"]) expect(opened.instructions).toContain(service);
    expect(opened.capabilities.completions).toEqual({});
    initialized();
    request(1, "tools/call", { name: "drones_list_drones", arguments: {} });
    const called = (await answer(1)).result;
    expect(called.isError, JSON.stringify(called)).toBeFalsy();
    expect(called.structuredContent.drones.length).toBeGreaterThan(0);
    // In this process: the opening's answer went out before the sandbox's one listen() (the dist
    // bundle, preloaded with test/fixtures/start-order.cjs).
    const order = readFileSync(log, "utf8").trim().split("\n");
    expect(order).toEqual(["answer 0", "listen", "answer 1"]);
  });
});

describe("a start where the compile cache cannot be written", () => {
  // dist/cli.js turns on Node's compile cache (22.1+) in the OS temp directory or NODE_COMPILE_CACHE;
  // a user whose temp directory cannot hold it (here: a path under a file) still gets a server.
  const { child, answer, open } = rawChild([CLI], {
    NODE_COMPILE_CACHE: "/dev/null/compile-cache",
    TMPDIR: "/dev/null/tmp",
    DRONES_API_BASE_URL: "http://127.0.0.1:9",
    DRONES_API_KEY: "unused",
  });
  afterAll(() => {
    child.kill();
  });

  it("answers its opening", { timeout: 60_000 }, async () => {
    open();
    expect((await answer(0)).result.instructions).toContain("Drones:");
  });
});
