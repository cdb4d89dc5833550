// Issue 19: an SDK 1 client with its default settings gives up on a call after 60 s (progress
// notifications do not extend it) and the caller calls again. A paid build_launch_project with
// wait: true, retried that way, must launch once: the retry follows the first call's build.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Sandbox } from "../../src/sandbox/index.js";
import { CLI, sandboxEnv, testSandbox } from "../harness.js";

const LAUNCH = "POST /api/v1/vcaas/projects/launch";

describe("SDK 1, default settings, over stdio: a timed-out paid launch retried spends once", () => {
  let sandbox: Sandbox;
  let client: Client;
  let stderr = "";

  beforeAll(async () => {
    sandbox = await testSandbox();
    const env = sandboxEnv(sandbox, { BUILD_POLL_INTERVAL_MS: "200" });
    const args = [CLI, "--toolsets", "all"];
    const transport = new StdioClientTransport({ command: process.execPath, args, env, stderr: "pipe" });
    transport.stderr?.on("data", (c: Buffer) => void (stderr += c.toString()));
    client = new Client({ name: "sdk1-defaults", version: "1.0.0" });
    await client.connect(transport);
  });
  afterAll(async () => {
    await client?.close();
    await sandbox?.close();
  });

  it("times out at the client's own 60 s, the retry follows the same build to its end: one launch", async () => {
    // The caller asked to wait 120 s (past its client's patience); the build takes about 66 s (the
    // sandbox runs 3000 simulated ms per real ms), so the retry still finds it running.
    const args = { projectId: "retry-app", prompt: "Shop [minutes=3300]", wait: true, timeoutSeconds: 120 };
    const before = sandbox.build.router.count(LAUNCH);
    const started = Date.now();
    const first = await client.callTool({ name: "build_launch_project", arguments: args }).catch((err: unknown) => err);
    expect(String(first)).toMatch(/Request timed out/);
    expect(Date.now() - started).toBeGreaterThanOrEqual(59_000);

    const retried = await client.callTool({ name: "build_launch_project", arguments: args });
    expect(retried.isError).toBeFalsy();
    expect(retried.structuredContent).toMatchObject({ projectId: "retry-app", wait: { outcome: "done" } });
    expect(sandbox.build.router.count(LAUNCH) - before).toBe(1);
    const listing = await client.callTool({ name: "build_list_projects", arguments: {} });
    const listed = listing.structuredContent as { projects: Array<{ projectId: string }> };
    expect(listed.projects.map((p) => p.projectId).filter((id) => id.startsWith("retry-app"))).toEqual(["retry-app"]);
    expect(stderr).not.toMatch(/This is a bug/);
  }, 180_000);
});
