// A stdio start answers its opening (2025 initialize, 2026-07-28 server/discover) before the
// services' tools load, and holds every later request until they are registered, without telling
// the client its lists changed (core/stdio/serve.ts). The fixture's service loads its tools only
// when the process gets SIGUSR2: an opening that waited for them would never be answered, and a
// tools/list served before them would list nothing.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { MODERN, sleep } from "../harness.js";

type Json = Record<string, any>;

const SERVE = fileURLToPath(new URL("../fixtures/held-start/serve.ts", import.meta.url));
const ENVELOPE = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1" },
  "io.modelcontextprotocol/clientCapabilities": {},
};

describe("a stdio start", () => {
  const child = spawn(process.execPath, ["--import", "tsx", SERVE], {
    env: { PATH: process.env.PATH ?? "", QUOTES_API_BASE_URL: "http://127.0.0.1:9", QUOTES_API_KEY: "held-start" },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
  child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
  afterAll(() => {
    child.kill();
  });

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

  it("answers its opening before the tools load, and lists them once they have", { timeout: 120_000 }, async () => {
    if (MODERN) request(0, "server/discover");
    else
      request(0, "initialize", {
        protocolVersion: "2025-11-25",
        capabilities: {},
        clientInfo: { name: "raw", version: "1" },
      });
    const opened = (await answer(0)).result;
    expect(opened.instructions).toContain("Quotes: quotes_get_quote");
    expect(opened.capabilities.tools).toEqual({ listChanged: true });
    if (!MODERN) child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })}\n`);
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
