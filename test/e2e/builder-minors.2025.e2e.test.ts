import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Sandbox } from "../../src/sandbox/index.js";
import { call, connectStdio, ok, retryStart, sandboxEnv, testSandbox, text, type StdioConnection } from "../harness.js";

/**
 * Issue 29, minors 3-11: what a caller sees of the build tools, against build-service-reference.md.
 * Each test names its item and failed on the code before the fix.
 */

const API = "/api/v1/vcaas";

describe("build minors (issue 29): advice, warnings, hints, descriptions, retries", () => {
  let sandbox: Sandbox;
  let conn: StdioConnection;
  /** Requests received on one actual path, faulted ones included. */
  const received = (key: string) => sandbox.build.router.received.get(key) ?? 0;
  /** The service's answer to the next `method path` request, whatever the simulator would say. */
  const answerNext = (method: string, path: string, status: number, body: unknown, times = 1) =>
    sandbox.build.router.injectFault({ method, path, times, action: { kind: "respond", response: { status, body } } });

  beforeAll(async () => {
    // Details cached 5 s, as the service caches them "a few seconds" (§1.4).
    sandbox = await testSandbox({ build: { detailsCacheMs: 5000 } });
    conn = await retryStart(() => connectStdio(sandboxEnv(sandbox, { BUILD_CONFIRM_SPEND: "never" })));
  });
  afterAll(async () => {
    await conn?.close();
    await sandbox?.close();
  });

  // Item 3: right after build_set_secret the cached details still lacked the name, and the status
  // said it was not set and to set it: a second STRIPE_API_KEY.
  it("does not call a secret just set missing, and never advises a plain second set", async () => {
    await ok(conn.client, "build_launch_project", {
      projectId: "keys-later",
      prompt: "Checkout [secrets] [minutes=2]",
      wait: true,
    });
    const before = await call(conn.client, "build_get_agent_status", { projectId: "keys-later" });
    expect(before.structuredContent).toMatchObject({ secretsMissing: [{ name: "STRIPE_API_KEY" }] });
    expect(text(before)).toMatch(/If one was set in the last few seconds .* do not set it again/);
    expect(text(before)).not.toMatch(/Set them with build_set_secret/);

    await ok(conn.client, "build_set_secret", {
      projectId: "keys-later",
      secretName: "STRIPE_API_KEY",
      secretValue: "sk_test_minors_canary_1",
    });
    // The details snapshot read above is still cached: it does not list the secret yet.
    expect(text(await call(conn.client, "build_get_project", { projectId: "keys-later" }))).not.toMatch(
      /STRIPE_API_KEY/,
    );
    const after = await call(conn.client, "build_get_agent_status", { projectId: "keys-later" });
    expect(after.structuredContent).toMatchObject({ secretsMissing: [] });
    expect(text(after)).not.toMatch(/STRIPE_API_KEY/);
    const waited = await ok<{ message: string }>(conn.client, "build_wait", {
      projectId: "keys-later",
      until: "agent",
    });
    expect(waited.message).not.toMatch(/STRIPE_API_KEY/);
    expect(sandbox.build.project("keys-later")!.secrets.filter((s) => s.secretName === "STRIPE_API_KEY")).toHaveLength(
      1,
    );
  });

  // Item 4: [RC]-shaped warnings ({step?, message?, endpoint?}) read `did not happen (undefined): ""`.
  it("reads [RC]-shaped launch warnings without losing the reason", async () => {
    answerNext("POST", `${API}/projects/launch`, 200, {
      errors: null,
      data: {
        projectId: "rc-shaped",
        plan: "api",
        agent: { started: false, message: "Not started" },
        warnings: [
          { step: "agent", message: "An agent process is already running." },
          { message: "Attachment storage is slow", endpoint: "POST /api/v1/vcaas/projects/rc-shaped/files/upload" },
        ],
      },
    });
    const r = await call(conn.client, "build_launch_project", { projectId: "rc-shaped", prompt: "Shop" });
    expect(r.isError).toBeFalsy();
    const t = text(r);
    expect(t).not.toMatch(/undefined|: ""/);
    expect(t).toMatch(/Agent NOT started \(An agent process is already running\.\)/);
    expect(t).toMatch(/Step agent did not happen: "An agent process is already running\."/);
    expect(t).toContain(
      'Step (not named) did not happen: "Attachment storage is slow" ' +
        `(the service names POST ${API}/projects/rc-shaped/files/upload).`,
    );
  });

  // Item 5: "Retry only this step with build_set_secret" with the run already started, no caveat.
  it("says what a step retried after the run started cannot fix (§3)", async () => {
    const warning = (step: string) => ({ step, errorCode: "STEP_FAILED", errorMessage: `${step} failed` });
    answerNext("POST", `${API}/projects/launch`, 200, {
      errors: null,
      data: {
        projectId: "late-steps",
        agent: { started: true, status: "init" },
        warnings: ["secrets", "figma", "creditLimits", "files"].map(warning),
      },
    });
    const t = text(await call(conn.client, "build_launch_project", { projectId: "late-steps", prompt: "Shop" }));
    expect(t).toContain(
      "Retry only this step with build_set_secret. Note: a secret added now is not in the .env of the " +
        "run already started",
    );
    expect(t).toMatch(/build_connect_figma\. Note: Figma must be connected before a run/);
    expect(t).toMatch(/build_set_credit_limits\. Note: caps set now do not cover the run already started/);
    expect(t).toMatch(/inputFiles\. Note: the run already started has no attachments/);

    answerNext("POST", `${API}/projects/launch`, 200, {
      errors: null,
      data: { projectId: "early-steps", agent: { started: false }, warnings: [warning("secrets"), warning("agent")] },
    });
    const early = text(await call(conn.client, "build_launch_project", { projectId: "early-steps", prompt: "Shop" }));
    expect(early).toMatch(/Fix it with build_set_secret before build_start_agent, so the run gets it\./);
    expect(early).not.toMatch(/Note:/);
  });

  // Item 6: "START_SERVER (3 credits) is already spent" on every tool; §1.6 states no charge for GitHub.
  it("says the START_SERVER charge is unknown where §1.6 does not state it", async () => {
    const notReady = {
      errors: { errorCode: "SERVER_NOT_READY", errorMessage: "Server is starting" },
      data: null,
    };
    answerNext("POST", `${API}/projects/acme-storefront/github/pull`, 409, notReady);
    const pull = text(await call(conn.client, "build_pull_github", { projectId: "acme-storefront" }));
    expect(pull).toMatch(/SERVER_NOT_READY/);
    expect(pull).toMatch(/whether this answer charged START_SERVER \(3 credits\) is not stated for this endpoint/);
    expect(pull).not.toMatch(/already spent/);

    answerNext("POST", `${API}/projects/acme-storefront/deployments/deploy`, 409, notReady);
    expect(text(await call(conn.client, "build_deploy", { projectId: "acme-storefront" }))).toMatch(
      /START_SERVER \(3 credits\) is already spent/,
    );
  });

  // Items 7, 11: the costs description left out the flat 50/60; credit caps were not idempotent.
  it("describes the flat price of a run at its budget, and marks credit caps idempotent", async () => {
    const { tools } = await conn.client.listTools();
    const tool = (name: string) => tools.find((t) => t.name === name)!;
    const costs = tool("build_get_credit_costs").description;
    expect(costs).toMatch(/time budget costs a flat 50 \(60 on a healthy balance\)/);
    expect(tool("build_set_credit_limits").annotations).toMatchObject({
      idempotentHint: true,
      destructiveHint: false,
      readOnlyHint: false,
    });
  });

  // Item 10: the guard counted IMPORT_PROJECT (6) alone for an asleep target, which the service
  // starts first (409 SERVER_NOT_READY, §15 [RC]; the charge is assumed to be START_SERVER's 3).
  it("counts a server start in an import's price when the target is asleep, before sending it", async () => {
    await ok(conn.client, "build_create_project", { projectId: "asleep-target" });
    sandbox.build.project("asleep-target")!.server = { status: "Archived", readyAt: 0 };
    const imports = received(`POST ${API}/projects/asleep-target/import`);
    const { recurrentCredits, oneTimeCredits } = sandbox.build.balance();
    sandbox.build.setCredits(0, 7);
    try {
      const r = await call(conn.client, "build_import_project", {
        projectId: "asleep-target",
        importCode: "acme-storefront-export-project-0123456789abcdef0123456789abcdef.zip",
      });
      expect(r.isError).toBe(true);
      expect(text(r)).toMatch(/costs 9 credits \(START_SERVER 3 \+ IMPORT_PROJECT 6\) and the balance is 7/);
      expect(text(r)).toMatch(/that start's charge is not stated/);
      expect(received(`POST ${API}/projects/asleep-target/import`)).toBe(imports);
    } finally {
      sandbox.build.setCredits(recurrentCredits, oneTimeCredits);
    }
  });

  // Item 9: the transferId lived in one process's memory: lost on restart and on another replica.
  it("imports with a transferId after the server that exported it is gone", async () => {
    const exported = await ok<{ transferId: string }>(conn.client, "build_export_project", {
      projectId: "acme-storefront",
    });
    await ok(conn.client, "build_create_project", { projectId: "moved-copy" });
    await conn.close();
    conn = await retryStart(() => connectStdio(sandboxEnv(sandbox, { BUILD_CONFIRM_SPEND: "never" })));
    const imported = await call(conn.client, "build_import_project", {
      projectId: "moved-copy",
      transferId: exported.transferId,
    });
    // The service took the code (a code it never issued answers 400 INVALID_IMPORT_CODE).
    expect(text(imported)).toMatch(/Import into moved-copy started \(importing\)/);
    const { tools } = await conn.client.listTools();
    expect(tools.find((t) => t.name === "build_export_project")!.description).toMatch(
      /import code is a bearer credential and is never shown; for a target account on no such server/,
    );
  });

  // Item 8: verify=true was retried on a 5xx: three live Figma checks for one call.
  it("sends a verifying Figma status check once, even on a 5xx", async () => {
    const key = `GET ${API}/projects/acme-storefront/figma/status`;
    const error = { errors: { errorCode: "FIGMA_STATUS_ERROR", errorMessage: "upstream hiccup" }, data: null };
    answerNext("GET", `${API}/projects/acme-storefront/figma/status`, 502, error, 3);
    const before = received(key);
    const r = await call(conn.client, "build_get_figma_status", { projectId: "acme-storefront", verify: true });
    expect(r.isError).toBe(true);
    expect(received(key) - before).toBe(1);
    sandbox.build.router.clearFaults();

    // A plain status read is still retried.
    answerNext("GET", `${API}/projects/acme-storefront/figma/status`, 502, error, 1);
    const plain = received(key);
    expect((await call(conn.client, "build_get_figma_status", { projectId: "acme-storefront" })).isError).toBeFalsy();
    expect(received(key) - plain).toBe(2);
  });
});
