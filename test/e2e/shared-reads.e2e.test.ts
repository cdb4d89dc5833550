// A balance read shared by two paid calls lives on its own: one caller cancelling must not fail the other.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Sandbox } from "../../src/sandbox/index.js";
import { connectStdio, sandboxEnv, sleep, testSandbox, text, type StdioConnection } from "../harness.js";

const API = "/api/v1/vcaas";

describe("shared reads of the credit guard", () => {
  let sandbox: Sandbox;
  let conn: StdioConnection;

  beforeAll(async () => {
    sandbox = await testSandbox();
    // No question asked: a guard about to ask reads the balance once more, fresh (issue 28), and
    // this test is about the one read the two calls share.
    conn = await connectStdio(sandboxEnv(sandbox, { BUILD_CONFIRM_SPEND: "never" }));
  });
  afterAll(async () => {
    await conn?.close();
    await sandbox?.close();
  });

  it("one caller's cancel does not fail another call waiting on the same balance read", async () => {
    sandbox.build.router.injectFault({
      method: "GET",
      path: `${API}/account`,
      times: 1,
      action: { kind: "delay", ms: 600 },
    });
    const controller = new AbortController();
    const first = conn.client.callTool(
      { name: "build_create_project", arguments: { projectId: "shared-read-a" } },
      { signal: controller.signal },
    );
    await sleep(100);
    const second = conn.client.callTool({ name: "build_create_project", arguments: { projectId: "shared-read-b" } });
    await sleep(100);
    controller.abort("the user clicked stop");
    await expect(first).rejects.toThrow();
    const result = await second;
    expect(result.isError, text(result)).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ projectId: "shared-read-b" });
    expect(sandbox.build.router.count(`GET ${API}/account`)).toBe(1);
  });
});
