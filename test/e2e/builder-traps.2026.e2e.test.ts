import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CallToolResult } from "@modelcontextprotocol/client";
import type { Sandbox } from "../../src/sandbox/index.js";
import { call, connectStdio, ok, retryStart, sandboxEnv, testSandbox, text, type StdioConnection } from "../harness.js";

/**
 * The build service's defects and traps (reference §19 T1-T6 and the fields the service really
 * takes), end to end through the real server against a simulator that reproduces them. Every test
 * says what the code before commit 7e1c8c5 (and this work) did, and would fail against it.
 */

const API = "/api/v1/vcaas";

type Progress = { progress: number; message?: string };

async function withProgress(conn: StdioConnection, name: string, args: Record<string, unknown>) {
  const progress: string[] = [];
  const result = (await conn.client.callTool(
    { name, arguments: args },
    { onprogress: (p: Progress) => progress.push(p.message ?? ""), timeout: 60_000 },
  )) as CallToolResult;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  return { result, progress, data: result.structuredContent as Record<string, any> };
}

describe("build traps: ids, fields and errors (fresh reads)", () => {
  let sandbox: Sandbox;
  let conn: StdioConnection;
  const hits = (key: string) => sandbox.build.router.count(key);

  beforeAll(async () => {
    sandbox = await testSandbox({ build: { credits: { recurrentCredits: 200, oneTimeCredits: 5000 } } });
    conn = await retryStart(() => connectStdio(sandboxEnv(sandbox, { BUILD_CONFIRM_SPEND: "never" })));
  });
  afterAll(async () => {
    await conn?.close();
    await sandbox?.close();
  });

  // Old: idle counted as done ("No agent process... done"), so a wait on a project that never ran ended "done".
  it("answers outcome idle for an agent wait on a project that never ran", async () => {
    await ok(conn.client, "build_create_project", { projectId: "never-ran" });
    const r = await ok<{ outcome: string; message: string }>(conn.client, "build_wait", {
      projectId: "never-ran",
      until: "agent",
    });
    expect(r.outcome).toBe("idle");
    expect(r.message).toMatch(/never happened|nothing to wait for/);
  });

  // Old: every projectId was held to the new-id rule (max 35), so the suffixed id launch returned
  // could not be looked up.
  it("looks up a 38+ character id the service suffixed", async () => {
    const requested = "a-very-long-project-name-for-tests1";
    expect(requested).toHaveLength(35);
    // wait: true so both runs are billed before the next test reads the balance.
    await ok(conn.client, "build_launch_project", { projectId: requested, prompt: "First [minutes=1]", wait: true });
    const second = await ok<{ projectId: string; requestedProjectId: string }>(conn.client, "build_launch_project", {
      projectId: requested,
      prompt: "Second [minutes=1]",
      wait: true,
    });
    expect(second.requestedProjectId).toBe(requested);
    expect(second.projectId.length).toBeGreaterThanOrEqual(38);
    expect(await ok(conn.client, "build_get_project", { projectId: second.projectId })).toMatchObject({
      projectId: second.projectId,
    });
    expect(await ok(conn.client, "build_get_agent_status", { projectId: second.projectId })).toMatchObject({
      projectId: second.projectId,
    });
  });

  // Old: the hint said "wait a minute, then deploy again" and nothing about the 3 credits already spent.
  it("explains SERVER_NOT_READY on a sleeping server: 3 credits already spent, wait for Active", async () => {
    const before = sandbox.build.balance().credits;
    const r = await call(conn.client, "build_deploy", { projectId: "empty-sandbox" });
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(/HTTP 409, SERVER_NOT_READY/);
    expect(text(r)).toMatch(/START_SERVER \(3 credits\) is already spent/);
    expect(text(r)).toMatch(/agentServerStatus Active/);
    expect(sandbox.build.balance().credits).toBe(before - 3);
    expect(sandbox.build.project("empty-sandbox")!.deployment).toBeNull();
  });

  // Old: errorDetails were dropped; the SANDBOX_NOT_REACHABLE reason never reached the caller.
  it("shows SANDBOX_NOT_REACHABLE's errorDetails and the advice for its reason", async () => {
    await ok(conn.client, "build_start_agent", {
      projectId: "spring-campaign",
      prompt: "Break it [app-error] [minutes=1]",
      wait: true,
    });
    const r = await call(conn.client, "build_deploy", { projectId: "spring-campaign" });
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(/SANDBOX_NOT_REACHABLE/);
    expect(text(r)).toMatch(/Details: reason "app_error", httpStatus 500/);
    expect(text(r)).toMatch(/waiting will not help/);
  });

  // Old: the tool sent `design`, so the service never saw the Figma token.
  it("sends figma.token as `figma`, registers the token as a secret and never echoes it", async () => {
    const token = "figd_e2e_personal_token_canary_4711";
    const r = await call(conn.client, "build_launch_project", {
      projectId: "figma-launch",
      prompt: "From my Figma file [minutes=1]",
      figma: { token },
    });
    expect(r.isError).toBeFalsy();
    expect(r.structuredContent).toMatchObject({ figma: { connected: true } });
    expect(sandbox.build.project("figma-launch")!.figma).toMatchObject({ handle: expect.any(String) });
    expect(JSON.stringify(r)).not.toContain(token);
    expect(conn.stderr()).not.toContain(token);
  });

  // Old: model and effort were zod enums, so an unknown value was refused instead of reaching the service.
  it("passes an unknown model and effort on; the service answers with agent.warnings", async () => {
    const r = await call(conn.client, "build_launch_project", {
      projectId: "odd-options",
      prompt: "Tiny [minutes=1]",
      model: "gpt-9",
      effort: "ultra",
    });
    expect(r.isError).toBeFalsy();
    const data = r.structuredContent as { agent: { started: boolean; warnings: string[] } };
    expect(data.agent.started).toBe(true);
    expect(data.agent.warnings).toHaveLength(2);
    expect(text(r)).toMatch(/Agent warning: model "gpt-9"/);
    expect(text(r)).toMatch(/Agent warning: effort "ultra"/);
  });

  // Old: the prompt schema trimmed, so leading and trailing whitespace never reached the agent.
  it("sends prompts exactly as written", async () => {
    const first = "  Build a quiz app [minutes=1]\n\n";
    await ok(conn.client, "build_launch_project", { projectId: "untrimmed", prompt: first, wait: true });
    const next = "\tAdd a leaderboard [minutes=1] ";
    await ok(conn.client, "build_start_agent", { projectId: "untrimmed", prompt: next });
    const prompts = sandbox.build
      .project("untrimmed")!
      .conversation.filter((m) => m.author === "user")
      .map((m) => m.message);
    expect(prompts).toEqual([first, next]);
  });

  // Old: the simulator replaced a secret by name (and the tool said "create or replace"); the service only creates.
  it("creates a second secret when build_set_secret is called twice with one name", async () => {
    await ok(conn.client, "build_set_secret", {
      projectId: "acme-storefront",
      secretName: "TWICE_SET",
      secretValue: "first-value-canary-1",
    });
    const again = await call(conn.client, "build_set_secret", {
      projectId: "acme-storefront",
      secretName: "TWICE_SET",
      secretValue: "second-value-canary-2",
    });
    expect(again.isError).toBeFalsy();
    const project = await ok<{ secrets: Array<{ _id: string; secretName: string }> }>(
      conn.client,
      "build_get_project",
      { projectId: "acme-storefront" },
    );
    const twice = project.secrets.filter((s) => s.secretName === "TWICE_SET");
    expect(twice).toHaveLength(2);
    expect(new Set(twice.map((s) => s._id)).size).toBe(2);
    expect(JSON.stringify(again)).not.toContain("second-value-canary-2");
  });

  // Old: _limit was capped at 100 and _sort took 1/-1, so the documented {field: "desc"} and _limit 1000 were refused.
  it("queries with _sort desc and _limit 1000", async () => {
    const rows = await ok<{ results: Array<{ name: string }>; count: number }>(conn.client, "build_query_database", {
      projectId: "acme-storefront",
      tableName: "customers",
      queryOptions: { _sort: { name: "desc" }, _limit: 1000 },
    });
    expect(rows.count).toBe(30);
    const names = rows.results.map((r) => r.name);
    expect(names).toEqual([...names].sort((a, b) => b.localeCompare(a)));
    const bad = await call(conn.client, "build_query_database", {
      projectId: "acme-storefront",
      tableName: "customers",
      queryOptions: { _limit: 1001 },
    });
    expect(text(bad)).toMatch(/_limit must be 1-1000/);
  });

  // Old: paging guessed "this page is full"; the total and X-Has-More were never read.
  it("pages the project list from X-Total-Count and X-Has-More", async () => {
    const total = sandbox.build.projectIds().length;
    const first = await call(conn.client, "build_list_projects", { limit: 2 });
    expect(first.structuredContent).toMatchObject({ count: 2, skip: 0, limit: 2, total, hasMore: true });
    expect(text(first)).toMatch(new RegExp(`^2 of ${total} project\\(s\\)`));
    expect(text(first)).toMatch(/More: call again with skip 2\./);
    const last = await ok(conn.client, "build_list_projects", { limit: 2, skip: total - 1 });
    expect(last).toMatchObject({ count: 1, total, hasMore: false });
  });

  // Old: list_versions said "Default 50" and refused a limit over 100; the service pages 20 by
  // default and states no maximum.
  it("lists 20 versions by default and takes a limit over 100", async () => {
    for (let i = 0; i < 20; i++)
      await ok(conn.client, "build_start_agent", {
        projectId: "untrimmed",
        prompt: `More ${i} [minutes=1]`,
        wait: true,
      });
    const page = await ok<{ versions: unknown[]; totalCount: number }>(conn.client, "build_list_versions", {
      projectId: "untrimmed",
    });
    expect(page.totalCount).toBeGreaterThan(20);
    expect(page.versions).toHaveLength(20);
    const all = await ok<{ versions: unknown[]; totalCount: number }>(conn.client, "build_list_versions", {
      projectId: "untrimmed",
      limit: 150,
    });
    expect(all.versions).toHaveLength(all.totalCount);
    expect(hits(`GET ${API}/projects/:projectId/versions`)).toBe(2);
  });
});

describe("build traps: stale reads (details cached, the previous state shown after a call)", () => {
  let sandbox: Sandbox;
  let conn: StdioConnection;
  const LAG_MS = 400;

  beforeAll(async () => {
    // 90×: a deployment takes 2 s, a recovery 1.3 s, an import 2.7 s, a server start 0.7 s (after the lag).
    sandbox = await testSandbox({ timeScale: 90, build: { detailsCacheMs: 150, startLagMs: LAG_MS } });
    conn = await retryStart(() => connectStdio(sandboxEnv(sandbox, { BUILD_CONFIRM_SPEND: "never" })));
  });
  afterAll(async () => {
    await conn?.close();
    await sandbox?.close();
  });

  // Old (T4): the wait ended at once on the previous deployment's `success`.
  it("does not end a deploy wait on the previous deployment's success", async () => {
    const previous = sandbox.build.project("acme-storefront")!.deployment!;
    expect(previous.status).toBe("success");
    const { result, progress, data } = await withProgress(conn, "build_deploy", {
      projectId: "acme-storefront",
      wait: true,
    });
    expect(result.isError, text(result)).toBeFalsy();
    expect(data.wait.outcome).toBe("done");
    expect(Date.parse(data.wait.project.deployment.createdAt)).toBeGreaterThan(previous.createdAt);
    expect(progress.some((m) => /Waiting for the new deployment to show/.test(m))).toBe(true);
    expect(data.wait.elapsedSeconds).toBeGreaterThanOrEqual(LAG_MS / 1000);
  });

  // Old (T2): versionRecovery null on the first read ended the wait while the recovery was still running.
  it("does not end a recovery wait on the null read before the lock shows", async () => {
    const { versions, totalCount } = await ok<{ versions: Array<{ _id: string }>; totalCount: number }>(
      conn.client,
      "build_list_versions",
      { projectId: "acme-storefront" },
    );
    const { result, progress, data } = await withProgress(conn, "build_recover_version", {
      projectId: "acme-storefront",
      versionId: versions[1]._id,
      wait: true,
    });
    expect(result.isError, text(result)).toBeFalsy();
    expect(data.wait).toMatchObject({ outcome: "done", project: { versionRecovery: null } });
    expect(progress.some((m) => /Waiting for the recovery to show/.test(m))).toBe(true);
    expect(progress.some((m) => /Recovering version \S+ · \d+s/.test(m))).toBe(true); // a poll saw the lock
    // The recovery really ended: its new version is there as soon as the wait returns.
    expect(sandbox.build.project("acme-storefront")!.recovery).toBeNull();
    expect(
      (await ok<{ totalCount: number }>(conn.client, "build_list_versions", { projectId: "acme-storefront" }))
        .totalCount,
    ).toBe(totalCount + 1);
  });

  // Old (T2, T3): importInProgress null on the first read ended the wait at once, "done".
  it("does not end an import wait on the null read before the lock shows", async () => {
    const since = new Date().toISOString();
    sandbox.build.startImport("spring-campaign");
    const { result, progress, data } = await withProgress(conn, "build_wait", {
      projectId: "spring-campaign",
      until: "import",
      since,
    });
    expect(result.isError, text(result)).toBeFalsy();
    expect(data).toMatchObject({ outcome: "done", project: { importInProgress: null, agentServerStatus: "Active" } });
    expect(progress.some((m) => /Importing and rebuilding/.test(m))).toBe(true);
    expect(sandbox.build.project("spring-campaign")!.importLock).toBeNull();
  });

  // Old (T5): build_restart_server had no wait and build_wait no `until: "server"`; the details still read Active.
  // The asleep case below waits 20 s for a start to show (a cached Archived after SERVER_NOT_READY, issue 23 item 2).
  it("waits for a restarted server through the reads that still say Active", { timeout: 90_000 }, async () => {
    const before = sandbox.build.balance().credits;
    const { result, progress, data } = await withProgress(conn, "build_restart_server", {
      projectId: "acme-storefront",
      wait: true,
    });
    expect(result.isError, text(result)).toBeFalsy();
    expect(data.startedAt).toEqual(expect.any(String));
    expect(data.wait).toMatchObject({ outcome: "done", until: "server", project: { agentServerStatus: "Active" } });
    expect(progress.some((m) => /Waiting for the restart to show \(the server still reads Active\)/.test(m))).toBe(
      true,
    );
    expect(progress.some((m) => /Server Starting/.test(m))).toBe(true);
    expect(sandbox.build.balance().credits).toBe(before - 3);

    // Without a since, an Active server is simply done; a sleeping one nobody starts is idle.
    expect(await ok(conn.client, "build_wait", { projectId: "acme-storefront", until: "server" })).toMatchObject({
      outcome: "done",
    });
    sandbox.build.project("empty-sandbox")!.server.status = "Archived";
    const asleep = await ok<{ outcome: string; message: string }>(conn.client, "build_wait", {
      projectId: "empty-sandbox",
      until: "server",
    });
    expect(asleep.outcome).toBe("idle");
    expect(asleep.message).toMatch(
      /If a deploy or recovery answered SERVER_NOT_READY, its start \(3 credits\) is already paid: wait again/,
    );
  });
});

describe("build traps: work that ends inside the read lag", () => {
  let sandbox: Sandbox;
  let conn: StdioConnection;

  beforeAll(async () => {
    // 3000×: a deployment takes 60 ms, so it has ended before the 300 ms lag lets a read show it.
    sandbox = await testSandbox({ build: { startLagMs: 300 } });
    conn = await retryStart(() => connectStdio(sandboxEnv(sandbox, { BUILD_CONFIRM_SPEND: "never" })));
  });
  afterAll(async () => {
    await conn?.close();
    await sandbox?.close();
  });

  // Old: no poll ever read `deploying`, so no "Deploying" line was sent (the flake of build.e2e under load).
  it("says it is deploying from the deploy's own answer, however fast the deploy ends", async () => {
    const { result, progress, data } = await withProgress(conn, "build_deploy", {
      projectId: "acme-storefront",
      wait: true,
    });
    expect(result.isError, text(result)).toBeFalsy();
    expect(data).toMatchObject({ status: "deploying", wait: { outcome: "done" } });
    expect(progress[0]).toBe("Deploying · started");
    // The case this test is about: no read showed the deployment running.
    expect(progress.filter((m) => m.startsWith("Deploying"))).toEqual(["Deploying · started"]);
    expect(progress.at(-1)).toMatch(/^Deployed to /);
  });
});

describe("build traps: agent runs, batches and their price", () => {
  let sandbox: Sandbox;
  let conn: StdioConnection;

  beforeAll(async () => {
    // 600×: a 2-minute prompt takes 200 ms, the pause between batch prompts 100 ms; runs stop at 5 minutes.
    sandbox = await testSandbox({ timeScale: 600, build: { runBudgetMinutes: 5 } });
    conn = await retryStart(() => connectStdio(sandboxEnv(sandbox, { BUILD_CONFIRM_SPEND: "never" })));
  });
  afterAll(async () => {
    await conn?.close();
    await sandbox?.close();
  });

  // Old (T6): there was no multiPrompt; and agent/status flipping to `done` after the first prompt ended the wait.
  it("waits for a whole multi-prompt batch, reporting which prompt runs", async () => {
    // 4 minutes each (400 ms at 600x, under the 5-minute budget): under load a 40 ms poll can still miss
    // one prompt's window, so the progress check asks for some running prompt, not prompt 1 in particular.
    const prompts = ["One [minutes=4]", "Two [minutes=4]", "Three [minutes=4]"];
    const { result, progress, data } = await withProgress(conn, "build_start_agent", {
      projectId: "booking-app",
      multiPrompt: { prompts },
      wait: true,
    });
    expect(result.isError, text(result)).toBeFalsy();
    expect(data.multiPrompt).toMatchObject({ totalPrompts: 3 });
    expect(data.wait.outcome).toBe("done");
    expect(data.wait.project.multiPrompt).toMatchObject({ status: "done", totalPrompts: 3 });
    expect(data.wait.project.multiPrompt.prompts.map((p: { status: string }) => p.status)).toEqual([
      "done",
      "done",
      "done",
    ]);
    expect(
      progress.some((m) => /prompt [123] of 3 running/.test(m)),
      progress.join("\n"),
    ).toBe(true);
    expect(progress.some((m) => /prompt 3 of 3/.test(m))).toBe(true);
    expect(
      sandbox.build
        .project("booking-app")!
        .conversation.filter((m) => m.author === "user")
        .slice(-3)
        .map((m) => m.message),
    ).toEqual(prompts);
    expect(text(result)).toMatch(/Multi-prompt batch: done, at prompt 3 of 3 \(3 done of 3\)/);
    expect(text(await call(conn.client, "build_get_agent_status", { projectId: "booking-app" }))).toMatch(
      /Multi-prompt batch: done/,
    );
  });

  it("refuses a malformed multiPrompt before any upstream request", async () => {
    const starts = sandbox.build.router.count(`POST ${API}/projects/:projectId/agent/start`);
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ multiPrompt: { prompts: [] } }, /multiPrompt.prompts needs 1-50 prompts/],
      [
        { multiPrompt: { prompts: Array.from({ length: 51 }, (_, i) => `p${i}`) } },
        /multiPrompt.prompts needs 1-50 prompts/,
      ],
      [{ multiPrompt: { prompts: ["ok", "   "] } }, /multiPrompt\.prompts\.1: prompt must not be empty/],
      [
        { prompt: "goal", multiPrompt: { prompts: ["a"], letTotalumDecide: true } },
        /exactly one of prompts or letTotalumDecide/,
      ],
      [{ multiPrompt: { letTotalumDecide: true } }, /prompt: required unless multiPrompt.prompts/],
      [{}, /prompt: required unless multiPrompt.prompts/],
    ];
    for (const [args, message] of cases) {
      const r = await call(conn.client, "build_start_agent", { projectId: "booking-app", ...args });
      expect(r.isError, JSON.stringify(args).slice(0, 80)).toBe(true);
      expect(text(r)).toMatch(message);
    }
    expect(sandbox.build.router.count(`POST ${API}/projects/:projectId/agent/start`)).toBe(starts);
  });

  // Old: the simulator charged a run's price as it went and never billed the time budget's flat 60.
  it("bills a run that uses its whole time budget the 60 credits the guard counts", async () => {
    const before = sandbox.build.balance().credits;
    const r = await call(conn.client, "build_start_agent", {
      projectId: "internal-dashboard",
      prompt: "Endless [minutes=1000]",
      wait: true,
    });
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(/time limit \(5 minutes\).*billed 60 credits/);
    expect(r.structuredContent).toMatchObject({ outcome: "failed", creditsSpent: 60 });
    expect(sandbox.build.balance().credits).toBe(before - 60);
  });
});

describe("build traps: the credit guard and plan limits", () => {
  let sandbox: Sandbox;
  let conn: StdioConnection;
  const asked: string[] = [];

  beforeAll(async () => {
    sandbox = await testSandbox({ build: { maxProjects: 2 } });
    // Ask above 50 credits, and decline: nothing may be sent.
    conn = await retryStart(() =>
      connectStdio(sandboxEnv(sandbox, { BUILD_CONFIRM_SPEND: "50" }), [], { capabilities: { elicitation: {} } }),
    );
    conn.client.setRequestHandler("elicitation/create", async (req) => {
      asked.push(req.params.message);
      return { action: "decline" };
    });
  });
  afterAll(async () => {
    await conn?.close();
    await sandbox?.close();
  });

  // Old: a run was counted as up to 40, under a 50-credit threshold, so the user was never asked.
  it("counts an agent run as up to 60 credits, and a batch as 60 per prompt", async () => {
    const starts = sandbox.build.router.count(`POST ${API}/projects/:projectId/agent/start`);
    const single = await call(conn.client, "build_start_agent", { projectId: "booking-app", prompt: "More pages" });
    expect(single.isError).toBe(true);
    expect(text(single)).toMatch(/did not approve/);
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatch(
      /Start an agent run on booking-app: has no fixed price: the agent run \(typically 10-40 credits.*at most 60/,
    );

    const batch = await call(conn.client, "build_start_agent", {
      projectId: "booking-app",
      multiPrompt: { prompts: ["a", "b", "c"] },
    });
    expect(batch.isError).toBe(true);
    expect(asked).toHaveLength(2);
    expect(asked[1]).toMatch(
      /Start a multi-prompt batch on booking-app: .*a batch of 3 prompts, each billed as an agent run/,
    );
    expect(sandbox.build.router.count(`POST ${API}/projects/:projectId/agent/start`)).toBe(starts);
  });

  // Old: errorDetails of MAX_PROJECTS_REACHED were dropped (and the simulator sent none).
  it("shows MAX_PROJECTS_REACHED's errorDetails", async () => {
    const r = await call(conn.client, "build_create_project", { projectId: "one-too-many" });
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(/HTTP 403, MAX_PROJECTS_REACHED/);
    expect(text(r)).toMatch(/Details: maxProjects 2, projectsUsed 5, plan "free", upgradePlan "starter"/);
    expect(text(r)).toMatch(/delete a project .* or upgrade/);
  });
});
