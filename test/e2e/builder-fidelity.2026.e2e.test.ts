import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CallToolResult } from "@modelcontextprotocol/client";
import type { Sandbox } from "../../src/sandbox/index.js";
import {
  call,
  connectStdio,
  ok,
  retryStart,
  sandboxEnv,
  testSandbox,
  text,
  until,
  type StdioConnection,
} from "../harness.js";

/**
 * Issue 23: the build tools, waits and simulator against build-service-reference.md, end to end.
 * Each test names the defect the code before it had, and fails against that code.
 */

const API = "/api/v1/vcaas";
type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any

async function withProgress(conn: StdioConnection, name: string, args: Record<string, unknown>) {
  const progress: string[] = [];
  const result = (await conn.client.callTool(
    { name, arguments: args },
    { onprogress: (p: { message?: string }) => progress.push(p.message ?? ""), timeout: 90_000 },
  )) as CallToolResult;
  return { result, progress, data: result.structuredContent as Record<string, Any> };
}

describe("build fidelity: tools against the reference (fresh reads)", () => {
  let sandbox: Sandbox;
  let conn: StdioConnection;
  const hits = (key: string) => sandbox.build.router.count(key);

  beforeAll(async () => {
    sandbox = await testSandbox({
      build: { credits: { recurrentCredits: 200, oneTimeCredits: 5000 }, runBudgetMinutes: 30 },
    });
    conn = await retryStart(() => connectStdio(sandboxEnv(sandbox, { BUILD_CONFIRM_SPEND: "never" })));
  });
  afterAll(async () => {
    await conn?.close();
    await sandbox?.close();
  });

  // Item 6: the list showed _id only, and the diff tool asked for a commitSha "from build_list_versions".
  it("lists each version's _id and commitSha, and says which one a diff needs", async () => {
    const r = await call(conn.client, "build_list_versions", { projectId: "acme-storefront" });
    const { versions } = r.structuredContent as { versions: Array<{ _id: string; commitSha: string }> };
    expect(text(r)).toContain(`_id ${versions[0]._id} · commitSha ${versions[0].commitSha}`);
    expect(text(r)).toMatch(/_id is for build_recover_version, commitSha for build_get_version_diff/);
    const diff = await call(conn.client, "build_get_version_diff", {
      projectId: "acme-storefront",
      commitSha: versions[0]._id,
    });
    expect(diff.isError).toBe(true);
    expect(text(diff)).toMatch(/probably a version's _id: version-diff takes the version's commitSha/);
    expect(
      (
        await call(conn.client, "build_get_version_diff", {
          projectId: "acme-storefront",
          commitSha: versions[0].commitSha,
        })
      ).isError,
    ).toBeFalsy();
  });

  // Item 6: an answer without data.versions[] was "Internal error … This is a bug".
  it("reports a versions answer of another shape as the upstream's, not as a bug", async () => {
    sandbox.build.router.injectFault({
      method: "GET",
      path: `${API}/projects/acme-storefront/versions`,
      action: { kind: "respond", response: { status: 200, body: { errors: null, data: { items: [] } } } },
    });
    const r = await call(conn.client, "build_list_versions", { projectId: "acme-storefront" });
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(/without the documented data\.versions array/);
    expect(text(r)).not.toMatch(/This is a bug/);
  });

  // Item 7: the guard quoted 1 credit to deploy a sleeping project, which costs START_SERVER 3 first.
  it("counts START_SERVER in a deploy's price when the server is asleep, before sending anything", async () => {
    const deploys = hits(`POST ${API}/projects/:projectId/deployments/deploy`);
    const { credits } = sandbox.build.balance();
    sandbox.build.setCredits(0, 2);
    try {
      const r = await call(conn.client, "build_deploy", { projectId: "empty-sandbox" });
      expect(r.isError).toBe(true);
      expect(text(r)).toMatch(/costs 4 credits \(START_SERVER 3 \+ CREATE_DEPLOYMENT 1\)/);
      expect(hits(`POST ${API}/projects/:projectId/deployments/deploy`)).toBe(deploys);
    } finally {
      sandbox.build.setCredits(0, credits);
    }
  });

  // Items 7, 12, 13, 21, 22: descriptions that stated what the reference does not, or the opposite of it.
  it("describes only what the references state, and says assumed where it chose", async () => {
    const { tools } = await conn.client.listTools();
    const d = (name: string) => tools.find((t) => t.name === name)!.description ?? "";
    expect(d("build_deploy")).not.toMatch(/retry in a minute/);
    expect(d("build_deploy")).toMatch(/build_wait until "server".*never re-issue blindly/);
    expect(d("build_restart_server")).not.toMatch(/needed before deploying/);
    expect(d("build_restart_server")).toMatch(/Deploy and recover start a sleeping server themselves/);
    expect(d("build_list_versions")).not.toMatch(/newest first|one per finished prompt/);
    expect(d("build_set_secret")).not.toMatch(/Each call creates a new secret/);
    expect(d("build_set_secret")).toMatch(/assumed/);
    expect(d("sizing_get_catalog")).toMatch(/done here/);
    expect(d("drones_list_api_keys")).toMatch(/not shown/);
    expect(d("drones_fleet_summary")).toMatch(/assumed %/);
  });

  // Item 14: an apex hostname went upstream (and was charged by the simulator).
  it("refuses an apex hostname before any request", async () => {
    const puts = hits(`PUT ${API}/projects/:projectId/domain`);
    const r = await call(conn.client, "build_set_domain", { projectId: "acme-storefront", hostname: "example.com" });
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(/must be a subdomain such as www\.example\.com/);
    expect(hits(`PUT ${API}/projects/:projectId/domain`)).toBe(puts);
  });

  // Item 5: the simulator accepted and charged a domain on a never-deployed project.
  it("answers NO_DEPLOYMENT for a domain on a project never deployed, charging nothing", async () => {
    const before = sandbox.build.balance().credits;
    const r = await call(conn.client, "build_set_domain", {
      projectId: "spring-campaign",
      hostname: "www.spring-demo.com",
    });
    expect(text(r)).toMatch(/HTTP 404, NO_DEPLOYMENT/);
    expect(text(r)).toMatch(/deploy it first \(build_deploy\)/);
    expect(sandbox.build.balance().credits).toBe(before);
  });

  // Item 10: "Production: https://…" for a project never deployed, and "Preview:" was the screenshot.
  it("shows production only once deployed, and the live preview the details name", async () => {
    const never = text(await call(conn.client, "build_get_project", { projectId: "spring-campaign" }));
    expect(never).not.toMatch(/^Production: /m);
    expect(never).toMatch(
      /^Production address \(serves only after a successful deployment\): https:\/\/spring-campaign\./m,
    );
    expect(never).toMatch(/^Preview: https:\/\/spring-campaign\.dev\./m);
    expect(never).toMatch(/^Screenshot: https:\/\/previews\./m);
    const asleep = text(await call(conn.client, "build_get_project", { projectId: "empty-sandbox" }));
    expect(asleep).toMatch(/^Preview: https:\/\/previews\.sandbox-apps\.example\/empty-sandbox\/cached\//m);
    expect(text(await call(conn.client, "build_get_project", { projectId: "acme-storefront" }))).toMatch(
      /^Production: https:\/\/shop\.acme-demo\.com/m,
    );
  });

  // Item 20: a launch whose agent did not start relayed the service's raw HTTP path as the next step.
  it("steers a launch whose agent did not start to build_start_agent with the same prompt", async () => {
    const r = await call(conn.client, "build_launch_project", {
      projectId: "capped-start",
      prompt: "Build it [minutes=1]",
      creditLimits: { maxDevelopmentCreditsPerMonth: 5 },
    });
    expect(r.isError).toBeFalsy();
    expect(text(r)).toMatch(
      new RegExp(
        /Agent NOT started \(PROJECT_CREDIT_LIMIT_REACHED\)\. Next step: /.source +
          /.*build_start_agent \{ projectId: "capped-start" \} with the same prompt/.source,
      ),
    );
    expect(
      text(r)
        .split("\n")
        .find((l) => l.startsWith("Agent NOT started")),
    ).not.toMatch(/\/api\/v1/);
    expect(text(r)).toMatch(/Retry only this step with build_start_agent/);
  });

  // Item 4: isProvided is practically always false; the tools trusted it, so a set secret stayed "needed".
  it("compares the secrets a run asks for with the project's secrets", async () => {
    const secrets = [{ secretName: "STRIPE_API_KEY", secretValue: "sk_test_fidelity_canary" }];
    await ok(conn.client, "build_launch_project", {
      projectId: "keys-set",
      prompt: "Checkout [secrets] [minutes=5]",
      secrets,
      wait: true,
    });
    const set = await call(conn.client, "build_get_agent_status", { projectId: "keys-set" });
    expect(set.structuredContent).toMatchObject({ secretsMissing: [] });
    expect(text(set)).not.toMatch(/asked for secrets/);
    const waited = await ok<{ message: string }>(conn.client, "build_wait", { projectId: "keys-set", until: "agent" });
    expect(waited.message).not.toMatch(/asked for secrets/);

    await ok(conn.client, "build_launch_project", {
      projectId: "keys-unset",
      prompt: "Checkout [secrets] [minutes=5]",
      wait: true,
    });
    expect(text(await call(conn.client, "build_get_agent_status", { projectId: "keys-unset" }))).toMatch(
      /asked for secrets the project.s details do not list: STRIPE_API_KEY/,
    );
    expect(
      (await ok<{ message: string }>(conn.client, "build_wait", { projectId: "keys-unset", until: "agent" })).message,
    ).toMatch(/asked for secrets the project.s details do not list: STRIPE_API_KEY/);
  });

  // Item 15: stopping nothing was "correct the argument".
  it("says there is nothing to stop when no run is in flight", async () => {
    const r = await call(conn.client, "build_stop_agent", { projectId: "keys-set" });
    expect(text(r)).toMatch(/NO_PROCESS_RUNNING/);
    expect(text(r)).toMatch(/nothing to stop/);
    expect(text(r)).not.toMatch(/correct the argument/);
  });

  // Item 15: a run stopped at its time budget (billed flat 50/60) said "fix and try again".
  it("warns that a retry of a run stopped at its time budget is billed flat again", async () => {
    const r = await call(conn.client, "build_start_agent", {
      projectId: "keys-set",
      prompt: "Endless [minutes=1000]",
      wait: true,
    });
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(/billed a flat 50 or 60 credits; a retry is billed the same way/);
    expect(text(r)).not.toMatch(/fix and try again/);
  });

  // Item 15: AUTO_EXECUTION_ALREADY_ACTIVE had no hint; a deploy whose answer was lost did not say
  // to compare createdAt (T4).
  it("advises on a batch still in flight and on a deploy whose outcome is unknown", async () => {
    await ok(conn.client, "build_start_agent", {
      projectId: "booking-app",
      multiPrompt: { prompts: ["Long [minutes=100000]"] },
    });
    const busy = await call(conn.client, "build_start_agent", { projectId: "booking-app", prompt: "More" });
    expect(text(busy)).toMatch(/HTTP 409, AUTO_EXECUTION_ALREADY_ACTIVE/);
    expect(text(busy)).toMatch(
      /Next step: an earlier multi-prompt batch is still executing.*No cancel endpoint is documented/,
    );
    await ok(conn.client, "build_stop_agent", { projectId: "booking-app" });

    sandbox.build.router.injectFault({
      method: "POST",
      path: `${API}/projects/acme-storefront/deployments/deploy`,
      action: {
        kind: "respond",
        response: { status: 502, raw: "<html>Bad Gateway</html>", headers: { "content-type": "text/html" } },
      },
    });
    const lost = await call(conn.client, "build_deploy", { projectId: "acme-storefront" });
    expect(lost.isError).toBe(true);
    expect(text(lost)).toMatch(
      /call build_get_deployment_status for "acme-storefront" and compare its createdAt with the time of your call/,
    );
  });

  // Item 18: documented operators gave 0 rows in the simulator, and _count / _aggregate never reached the text.
  it("queries with operators, _count and _aggregate, and reads properties as a map", async () => {
    const paid = await call(conn.client, "build_query_database", {
      projectId: "acme-storefront",
      tableName: "orders",
      queryOptions: { _filter: { status: { in: ["paid", "shipped"] }, total: { gte: 0 } }, _count: true, _limit: 2 },
    });
    expect(paid.structuredContent).toMatchObject({ count: 2, _count: { _total: 12 } });
    expect(text(paid)).toMatch(/^12 record\(s\) match before paging\./);
    const sums = await call(conn.client, "build_query_database", {
      projectId: "acme-storefront",
      tableName: "orders",
      queryOptions: { _aggregate: { _count: true }, _groupBy: "status" },
    });
    expect(text(sums)).toMatch(/Also in the answer: \{"aggregations":\[/);
    expect(text(await call(conn.client, "build_get_database_schema", { projectId: "acme-storefront" }))).toMatch(
      /- orders \("Orders"\): customer, total, status/,
    );
  });

  // Item 11: PLAN_LIMIT_REACHED (a plan quota) was retried: 3 requests per call.
  it("sends a production-log request once when the plan's log limit answers 429", async () => {
    const path = `${API}/projects/acme-storefront/backend/prod/logs`;
    const body = { errors: { errorCode: "PLAN_LIMIT_REACHED", errorMessage: "Plan limit reached" }, data: null };
    sandbox.build.router.injectFault({
      method: "GET",
      path,
      times: 3,
      action: { kind: "respond", response: { status: 429, body } },
    });
    const before = sandbox.build.router.received.get(`GET ${path}`) ?? 0;
    const r = await call(conn.client, "build_get_production_logs", { projectId: "acme-storefront" });
    expect(text(r)).toMatch(/HTTP 429, PLAN_LIMIT_REACHED/);
    expect((sandbox.build.router.received.get(`GET ${path}`) ?? 0) - before).toBe(1);
    sandbox.build.router.clearFaults();
  });

  // Item 19: a suffixed launch id over 35 characters was never polled for subscribers.
  it("follows a suffixed project id over 35 characters", async () => {
    const requested = "subscribe-to-a-very-long-project-1";
    await ok(conn.client, "build_create_project", { projectId: requested });
    const { projectId } = await ok<{ projectId: string }>(conn.client, "build_launch_project", {
      projectId: requested,
      prompt: "Tiny [minutes=5]",
    });
    expect(projectId.length).toBeGreaterThan(35);
    await ok(conn.client, "build_wait", { projectId, until: "agent" });
    const updates: string[] = [];
    conn.client.setNotificationHandler("notifications/resources/updated", (n) => void updates.push(n.params.uri));
    const uri = `build://projects/${projectId}`;
    const details = `GET ${API}/projects/:projectId`;
    const unfollowed = hits(details);
    const subscription = await conn.client.listen({ resourceSubscriptions: [uri] });
    try {
      // The poller's first read is its baseline: the change must come after it.
      await until(
        async () => hits(details),
        (n) => n > unfollowed,
      );
      await ok(conn.client, "build_start_agent", { projectId, prompt: "More [minutes=5]" });
      await until(
        async () => updates.length,
        (n) => n >= 1,
        15_000,
      );
      expect(updates).toContain(uri);
    } finally {
      await subscription.close();
    }
    await ok(conn.client, "build_wait", { projectId, until: "agent" });
  });
});

describe("build fidelity: stale reads (details cached, the previous state shown after a call)", () => {
  let sandbox: Sandbox;
  let conn: StdioConnection;

  beforeAll(async () => {
    // 400×: a recovery takes 0.3 s and an import 0.6 s, both inside the 1 s start lag; a server boots in 0.15 s.
    sandbox = await testSandbox({
      timeScale: 400,
      build: { detailsCacheMs: 2500, startLagMs: 1000, credits: { recurrentCredits: 200, oneTimeCredits: 5000 } },
    });
    conn = await retryStart(() => connectStdio(sandboxEnv(sandbox, { BUILD_CONFIRM_SPEND: "never" })));
  });
  afterAll(async () => {
    await conn?.close();
    await sandbox?.close();
  });

  // Item 1: the tool re-read the cached details and rendered no records (or the old domain's).
  it("shows the DNS records the PUT answered, even with a cached details snapshot", async () => {
    await ok(conn.client, "build_get_project", { projectId: "acme-storefront" });
    const r = await call(conn.client, "build_set_domain", {
      projectId: "acme-storefront",
      hostname: "app.acme-new.com",
    });
    expect(r.isError, text(r)).toBeFalsy();
    expect(r.structuredContent).toMatchObject({
      hostname: "app.acme-new.com",
      status: "pending_validation",
      dnsRecordsToAdd: [
        { type: "CNAME", name: "app" },
        { type: "TXT", name: "_cf-custom-hostname.app" },
      ],
    });
    expect(text(r)).toMatch(/^- CNAME app -> acme-storefront\./m);
    expect(text(r)).toMatch(/^- TXT _cf-custom-hostname\.app -> [0-9a-f]{32}$/m);
  });

  // Item 2: after SERVER_NOT_READY (3 credits spent) the wait read the cached "Archived" and
  // steered to a second paid start.
  it("waits for the server a deploy's SERVER_NOT_READY is starting, through a cached Archived", async () => {
    expect(
      (await ok<{ agentServerStatus: string }>(conn.client, "build_get_project", { projectId: "empty-sandbox" }))
        .agentServerStatus,
    ).toBe("Archived");
    const before = sandbox.build.balance().credits;
    const deploy = await call(conn.client, "build_deploy", { projectId: "empty-sandbox" });
    expect(text(deploy)).toMatch(/SERVER_NOT_READY/);
    expect(sandbox.build.balance().credits).toBe(before - 3);
    const { result, data } = await withProgress(conn, "build_wait", { projectId: "empty-sandbox", until: "server" });
    expect(result.isError, text(result)).toBeFalsy();
    expect(data).toMatchObject({ outcome: "done", project: { agentServerStatus: "Active" } });
    expect(text(result)).not.toMatch(/build_restart_server/);
    expect(sandbox.build.balance().credits).toBe(before - 3);
  });

  // Item 16 (T2): a recovery that ended inside the read lag was "nothing to wait for".
  it("confirms a recovery that ended before its lock showed by its recoveredVersionId", {
    timeout: 90_000,
  }, async () => {
    const { versions } = await ok<{ versions: Array<{ _id: string }> }>(conn.client, "build_list_versions", {
      projectId: "acme-storefront",
    });
    const { result, data } = await withProgress(conn, "build_recover_version", {
      projectId: "acme-storefront",
      versionId: versions[1]._id,
      wait: true,
    });
    expect(result.isError, text(result)).toBeFalsy();
    expect(data.wait).toMatchObject({ outcome: "done", until: "versionRecovery" });
    expect(data.wait.message).toMatch(/has ended/);
    const after = await ok<{ versions: Array<{ recoveredVersionId?: string }> }>(conn.client, "build_list_versions", {
      projectId: "acme-storefront",
    });
    expect(after.versions.some((v) => v.recoveredVersionId === versions[1]._id)).toBe(true);
  });

  // Item 16 (T2, T3): an import that ended inside the read lag was "nothing to wait for".
  it("confirms an import that ended before its lock showed by a version, an Active server and a preview", {
    timeout: 90_000,
  }, async () => {
    const since = new Date().toISOString();
    sandbox.build.startImport("booking-app");
    const { result, data } = await withProgress(conn, "build_wait", {
      projectId: "booking-app",
      until: "import",
      since,
    });
    expect(result.isError, text(result)).toBeFalsy();
    expect(data).toMatchObject({ outcome: "done", project: { importInProgress: null, agentServerStatus: "Active" } });
  });
});

describe("build fidelity: the creation rate", () => {
  let sandbox: Sandbox;
  let conn: StdioConnection;

  beforeAll(async () => {
    sandbox = await testSandbox({ build: { createsPerMinute: 1 } });
    conn = await retryStart(() => connectStdio(sandboxEnv(sandbox, { BUILD_CONFIRM_SPEND: "never" })));
  });
  afterAll(async () => {
    await conn?.close();
    await sandbox?.close();
  });

  // Item 15: RATE_LIMIT_EXCEEDED said "wait a minute" though the Free plan allows 1 project per 5 minutes.
  it("says how long the plans' creation limits last", async () => {
    await ok(conn.client, "build_create_project", { projectId: "first-one" });
    const r = await call(conn.client, "build_create_project", { projectId: "second-one" });
    expect(text(r)).toMatch(/HTTP 429, RATE_LIMIT_EXCEEDED/);
    expect(text(r)).toMatch(/Free: 1 per 5 minutes.*wait up to 5 minutes on the Free plan/);
  });
});
