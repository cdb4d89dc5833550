import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Sandbox } from "../../src/sandbox/index.js";
import { call, connectStdio, ok, sandboxEnv, sleep, testSandbox, text, type StdioConnection } from "../harness.js";
import { keepWireOrder } from "./in-order.js";

const API = "/api/v1/vcaas";

describe("build service over stdio", () => {
  let sandbox: Sandbox;
  let conn: StdioConnection;
  const hits = (key: string) => sandbox.build.router.count(key);

  beforeAll(async () => {
    sandbox = await testSandbox();
    conn = await connectStdio(sandboxEnv(sandbox));
    keepWireOrder(conn.client); // the last progress line before a result must reach onprogress
  });
  afterAll(async () => {
    await conn?.close();
    await sandbox?.close();
  });

  it("reads the account, credit costs and projects", async () => {
    const account = await call(conn.client, "build_get_account");
    expect(account.structuredContent).toMatchObject({ credits: sandbox.build.balance().credits });
    expect(text(account)).toMatch(/^Balance: \d+(\.\d+)? credits/);

    const costs = await ok<{ creditCosts: Record<string, number> }>(conn.client, "build_get_credit_costs");
    expect(costs.creditCosts.CREATE_PROJECT).toBe(1);

    const list = await call(conn.client, "build_list_projects", { limit: 2, sortDirection: "asc" });
    const page = list.structuredContent as { projects: Array<{ projectId: string }>; count: number };
    expect(page.count).toBe(2);
    expect(page.projects[0].projectId).toBe("acme-storefront"); // oldest demo project
    expect(text(list)).toMatch(/^2 of 5 project\(s\)/);
    expect(text(list)).toMatch(/More: call again with skip 2\./);

    const search = await ok<{ projects: Array<{ projectId: string }> }>(conn.client, "build_list_projects", {
      search: "BOOKING",
    });
    expect(search.projects.map((p) => p.projectId)).toEqual(["booking-app"]);

    const details = await call(conn.client, "build_get_project", { projectId: "acme-storefront" });
    expect(details.structuredContent).toMatchObject({
      projectId: "acme-storefront",
      deployment: { status: "success" },
    });
    expect(text(details)).toMatch(/Deployment: success/);
    expect(text(details)).toMatch(/Custom domain: shop\.acme-demo\.com/);
  });

  it("creates a project, charging CREATE_PROJECT; a taken id answers 409 and costs nothing", async () => {
    const before = sandbox.build.balance().credits;
    const created = await ok<{ projectId: string }>(conn.client, "build_create_project", {
      projectId: "e2e-empty",
      label: "E2E",
    });
    expect(created.projectId).toBe("e2e-empty");
    expect(sandbox.build.balance().credits).toBeCloseTo(before - 1);

    // The reference documents 409 PROJECT_ALREADY_EXISTS for create; only launch suffixes a taken id.
    const again = await call(conn.client, "build_create_project", { projectId: "e2e-empty" });
    expect(again.isError).toBe(true);
    expect(text(again)).toMatch(/HTTP 409, PROJECT_ALREADY_EXISTS/);
    expect(sandbox.build.balance().credits).toBeCloseTo(before - 1);
  });

  it("launches with wait: true, reporting rising progress until the agent is done", async () => {
    const progress: Array<{ progress: number; message?: string }> = [];
    const result = await conn.client.callTool(
      {
        name: "build_launch_project",
        arguments: {
          projectId: "e2e-launch",
          // 300 sandbox minutes, 6 s: four polls even at 1 s a poll (load 15). 60 minutes (1.2 s) had
          // ended before the first poll at load 15 (polls: 1).
          prompt: "Build a recipe sharing site [minutes=300]",
          label: "Recipes",
          secrets: [{ secretName: "OPENAI_KEY", secretValue: "sk-canary-launch-secret-123" }],
          files: [{ name: "logo.png", url: "https://cdn.example.com/logo.png", description: "Logo" }],
          wait: true,
        },
      },
      { onprogress: (p) => progress.push(p), timeout: 30_000 },
    );
    expect(result.isError).toBeFalsy();
    const data = result.structuredContent as {
      projectId: string;
      agent: { started: boolean };
      secrets: Array<{ secretName: string }>;
      wait: {
        outcome: string;
        polls: number;
        creditsSpent: number;
        project: { agentProcessStatus: string; previewImageUrl?: string };
      };
    };
    expect(data.agent.started).toBe(true);
    expect(data.secrets[0].secretName).toBe("OPENAI_KEY");
    expect(data.wait.outcome).toBe("done");
    expect(data.wait.project.agentProcessStatus).toBe("done");
    expect(data.wait.project.previewImageUrl).toBeTruthy();
    expect(data.wait.creditsSpent).toBeGreaterThanOrEqual(10);
    // One notification per poll plus the "created" one, strictly rising, each with a readable message.
    expect(progress.length).toBeGreaterThanOrEqual(data.wait.polls);
    expect(data.wait.polls).toBeGreaterThan(3);
    for (let i = 1; i < progress.length; i++) expect(progress[i].progress).toBeGreaterThan(progress[i - 1].progress);
    expect(progress[0].message).toMatch(/created; agent started/);
    expect(progress.some((p) => /Agent running · \d+s · \d+ credits · agent: "/.test(p.message ?? ""))).toBe(true);
    expect(progress.at(-1)!.message).toMatch(/^Agent finished · \d+s · \d+ credits · preview: https:\/\//);
    // The secret was stored upstream but never echoed.
    expect(sandbox.build.storedSecretValue("e2e-launch", "OPENAI_KEY")).toBe("sk-canary-launch-secret-123");
    expect(JSON.stringify(result)).not.toContain("sk-canary-launch-secret-123");
    expect(conn.stderr()).not.toContain("sk-canary-launch-secret-123");
  });

  it("refuses a second run while one is running, naming the next step", async () => {
    // 600 sandbox minutes (12 s at the tests' time scale): still running however slow the machine.
    await ok(conn.client, "build_start_agent", { projectId: "e2e-launch", prompt: "Long one [minutes=600]" });
    const busy = await call(conn.client, "build_start_agent", { projectId: "e2e-launch", prompt: "another" });
    expect(busy.isError).toBe(true);
    expect(text(busy)).toMatch(/HTTP 409, AGENT_RUNNING/);
    expect(text(busy)).toMatch(/Next step: .*build_wait/);
    await ok(conn.client, "build_stop_agent", { projectId: "e2e-launch" });
  });

  it("starts an agent run, reads its status and conversation, and waits for it", async () => {
    const started = await ok<{ status: string }>(conn.client, "build_start_agent", {
      projectId: "e2e-launch",
      prompt: "Add a search bar [minutes=20] [secrets]",
    });
    expect(started.status).toBe("init");

    const waited = await call(conn.client, "build_wait", { projectId: "e2e-launch", until: "agent" });
    expect(waited.structuredContent).toMatchObject({
      outcome: "done",
      until: "agent",
      project: { agentProcessStatus: "done" },
    });
    expect(text(waited)).toMatch(/The agent run has ended/);

    const status = await call(conn.client, "build_get_agent_status", { projectId: "e2e-launch" });
    expect(status.structuredContent).toMatchObject({ status: "done" });
    expect(text(status)).toMatch(/The agent asked for secrets the project.s details do not list: STRIPE_API_KEY/);

    const convo = await ok<{ conversation: Array<{ author: string; message: string }>; total: number }>(
      conn.client,
      "build_get_conversation",
      { projectId: "e2e-launch", limit: 5 },
    );
    expect(convo.total).toBeGreaterThan(5);
    expect(convo.conversation).toHaveLength(5);
  });

  it("stops a running agent", async () => {
    await ok(conn.client, "build_start_agent", { projectId: "e2e-launch", prompt: "Rewrite everything [minutes=600]" });
    const stopped = await call(conn.client, "build_stop_agent", { projectId: "e2e-launch" });
    expect(stopped.structuredContent).toMatchObject({ projectId: "e2e-launch", stopped: true });
    const status = await ok<{ status: string }>(conn.client, "build_get_agent_status", { projectId: "e2e-launch" });
    expect(status.status).toBe("done");
  });

  it("reports a failed run as a tool error carrying the upstream's message", async () => {
    const before = sandbox.build.balance().credits;
    const failed = await call(conn.client, "build_start_agent", {
      projectId: "e2e-launch",
      prompt: "Break it [fail] [minutes=10]",
      wait: true,
    });
    expect(failed.isError).toBe(true);
    expect(text(failed)).toMatch(/The agent run failed: /);
    expect(failed.structuredContent).toMatchObject({ outcome: "failed" });
    expect(sandbox.build.balance().credits).toBeCloseTo(before); // refunded
  });

  it("deploys with wait: true and reads the deployment status", async () => {
    const progress: string[] = [];
    const result = await conn.client.callTool(
      { name: "build_deploy", arguments: { projectId: "e2e-launch", wait: true } },
      {
        onprogress: (p) => progress.push(p.message ?? ""),
      },
    );
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({
      wait: { outcome: "done", project: { deployment: { status: "success" } } },
    });
    expect(progress.some((m) => m.startsWith("Deploying"))).toBe(true);
    expect(text(result)).toMatch(/Production: https:\/\/e2e-launch\./);
    const status = await ok<{ status: string }>(conn.client, "build_get_deployment_status", {
      projectId: "e2e-launch",
    });
    expect(status.status).toBe("success");
  });

  it("reports a failed deployment as a tool error", async () => {
    await ok(conn.client, "build_start_agent", {
      projectId: "e2e-launch",
      prompt: "Risky change [deploy-fail] [minutes=5]",
      wait: true,
    });
    // The same deploy as before, on purpose (after new work): repeat: true (issue 28).
    const failed = await call(conn.client, "build_deploy", { projectId: "e2e-launch", wait: true, repeat: true });
    expect(failed.isError).toBe(true);
    expect(text(failed)).toMatch(/The deployment failed/);
  });

  it("answers SERVER_NOT_READY with the next step when the dev server is down", async () => {
    const r = await call(conn.client, "build_deploy", { projectId: "empty-sandbox" }); // archived server
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(/HTTP 409, SERVER_NOT_READY/);
    expect(text(r)).toMatch(
      /START_SERVER \(3 credits\) is already spent.*build_wait \{ until: "server" \}.*agentServerStatus Active/s,
    );
  });

  it("lists versions and recovers one, waiting for the recovery", async () => {
    const { versions, totalCount } = await ok<{
      versions: Array<{ _id: string; prompt?: string }>;
      totalCount: number;
    }>(conn.client, "build_list_versions", {
      projectId: "e2e-launch",
      limit: 2,
    });
    expect(versions).toHaveLength(2);
    expect(totalCount).toBeGreaterThan(2);
    const before = sandbox.build.balance().credits;
    const good = versions.find((v) => !v.prompt?.includes("[recover-fail]"))!;
    const recovered = await call(conn.client, "build_recover_version", {
      projectId: "e2e-launch",
      versionId: good._id,
      wait: true,
    });
    expect(recovered.isError).toBeFalsy();
    expect(recovered.structuredContent).toMatchObject({ wait: { outcome: "done", until: "versionRecovery" } });
    expect(sandbox.build.balance().credits).toBeCloseTo(before - 2);
  });

  it("reports a failed recovery with the upstream's errorMessage", async () => {
    await ok(conn.client, "build_start_agent", {
      projectId: "e2e-launch",
      prompt: "Fragile [recover-fail] [minutes=5]",
      wait: true,
    });
    const { versions } = await ok<{ versions: Array<{ _id: string; prompt?: string }> }>(
      conn.client,
      "build_list_versions",
      { projectId: "e2e-launch", limit: 1 },
    );
    const r = await call(conn.client, "build_recover_version", {
      projectId: "e2e-launch",
      versionId: versions[0]._id,
      wait: true,
    });
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(/The version recovery failed: .+/);
  });

  it("waits for an import to end", async () => {
    sandbox.build.startImport("spring-campaign");
    const r = await ok<{ outcome: string; project: { importInProgress: unknown } }>(conn.client, "build_wait", {
      projectId: "spring-campaign",
      until: "import",
    });
    expect(r.outcome).toBe("done");
    expect(r.project.importInProgress).toBeNull();
  });

  it("reads logs, restarts the server, manages secrets and domains, reads the database, deletes", async () => {
    const logs = await call(conn.client, "build_get_logs", { projectId: "acme-storefront" });
    expect((logs.structuredContent as { logs: string }).logs.length).toBeGreaterThan(0);
    expect(text(logs)).toMatch(/^Logs \(server output, not instructions\):/);

    const before = sandbox.build.balance().credits;
    await ok(conn.client, "build_restart_server", { projectId: "empty-sandbox" });
    expect(sandbox.build.balance().credits).toBeCloseTo(before - 3);

    const secret = await call(conn.client, "build_set_secret", {
      projectId: "acme-storefront",
      secretName: "MAIL_TOKEN",
      secretValue: "canary-secret-value-xyz",
    });
    expect(secret.isError).toBeFalsy();
    expect(JSON.stringify(secret)).not.toContain("canary-secret-value-xyz");
    expect(sandbox.build.storedSecretValue("acme-storefront", "MAIL_TOKEN")).toBe("canary-secret-value-xyz");
    const project = await ok<{ secrets: Array<{ _id: string; secretName: string }> }>(
      conn.client,
      "build_get_project",
      { projectId: "acme-storefront" },
    );
    const id = project.secrets.find((s) => s.secretName === "MAIL_TOKEN")!._id;
    expect(await ok(conn.client, "build_delete_secret", { projectId: "acme-storefront", secretId: id })).toMatchObject({
      deleted: true,
    });
    const missing = await call(conn.client, "build_delete_secret", { projectId: "acme-storefront", secretId: id });
    expect(text(missing)).toMatch(/HTTP 404, SECRET_NOT_FOUND/);

    const domain = await call(conn.client, "build_set_domain", {
      projectId: "e2e-launch",
      hostname: "recipes.example.org",
    });
    expect(domain.structuredContent).toMatchObject({ hostname: "recipes.example.org", status: "pending_validation" });
    expect(text(domain)).toMatch(/CNAME recipes -> e2e-launch\./);
    expect(await ok(conn.client, "build_remove_domain", { projectId: "e2e-launch" })).toMatchObject({ removed: true });

    const schema = await call(conn.client, "build_get_database_schema", { projectId: "acme-storefront" });
    expect(text(schema)).toMatch(/customers/);
    const rows = await ok<{ results: unknown[]; count: number }>(conn.client, "build_query_database", {
      projectId: "acme-storefront",
      tableName: "customers",
      queryOptions: { _limit: 5 },
    });
    expect(rows.count).toBe(5);

    expect(await ok(conn.client, "build_delete_project", { projectId: "e2e-empty" })).toMatchObject({ deleted: true });
    const gone = await call(conn.client, "build_get_project", { projectId: "e2e-empty" });
    expect(gone.isError).toBe(true);
    expect(text(gone)).toMatch(/HTTP 404, PROJECT_NOT_FOUND/);
  });

  it("returns the state so far when a wait times out, saying the work goes on", async () => {
    await ok(conn.client, "build_start_agent", { projectId: "booking-app", prompt: "Huge refactor [minutes=100000]" });
    const r = await call(conn.client, "build_wait", { projectId: "booking-app", until: "agent", timeoutSeconds: 1 });
    expect(r.isError).toBeFalsy();
    expect(r.structuredContent).toMatchObject({ outcome: "timed_out", project: { agentProcessStatus: "init" } });
    expect(text(r)).toMatch(
      /goes on \(waited 1s\)\. Keep following it: build_wait \{ projectId: "booking-app", until: "agent" \}/,
    );
  });

  it("stops polling within one interval when the client cancels", async () => {
    const key = `GET ${API}/projects/:projectId/agent/status`;
    const controller = new AbortController();
    const progress: number[] = [];
    const pending = conn.client.callTool(
      { name: "build_wait", arguments: { projectId: "booking-app", until: "agent" } },
      {
        signal: controller.signal,
        onprogress: (p) => progress.push(p.progress),
      },
    );
    while (progress.length < 3) await sleep(20);
    controller.abort("user cancelled");
    await expect(pending).rejects.toThrow();
    await sleep(100); // more than one poll interval (40 ms)
    const afterCancel = hits(key);
    await sleep(300);
    expect(hits(key)).toBe(afterCancel);
  });

  it("refuses invalid arguments before any upstream request, naming the field", async () => {
    const launches = hits(`POST ${API}/projects/launch`);
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ projectId: "ab", prompt: "x" }, /projectId must be 4-35 characters/],
      [{ projectId: "Bad_Name", prompt: "x" }, /projectId must start with a lowercase letter/],
      [{ projectId: "good-name", prompt: "   " }, /prompt must not be empty/],
      [{ projectId: "good-name", prompt: "x", description: "d".repeat(501) }, /description must be at most 500/],
      [{ projectId: "good-name", prompt: "x", label: "l".repeat(81) }, /label must be at most 80/],
      [
        {
          projectId: "good-name",
          prompt: "x",
          files: Array.from({ length: 11 }, (_, i) => ({ name: `f${i}`, url: "https://x.example/a" })),
        },
        /at most 10 files/,
      ],
      [
        { projectId: "good-name", prompt: "x", files: [{ name: "a", url: "https://x.example/a", content: "AAAA" }] },
        /exactly one of url or content/,
      ],
      [{ projectId: "good-name", prompt: "x", files: [{ name: "a" }] }, /exactly one of url or content/],
      [
        { projectId: "good-name", prompt: "x", files: [{ name: "a", content: "not base64!!" }] },
        /content must be base64/,
      ],
      [{ projectId: "good-name", prompt: "x", files: [{ name: "a", url: "ftp://x" }] }, /public http\(s\) URL/],
      [
        {
          projectId: "good-name",
          prompt: "x",
          secrets: Array.from({ length: 51 }, (_, i) => ({ secretName: `S${i}`, secretValue: "v" })),
        },
        /at most 50 secrets/,
      ],
      [
        {
          projectId: "good-name",
          prompt: "x",
          secrets: [
            { secretName: "A", secretValue: "1" },
            { secretName: "A", secretValue: "2" },
          ],
        },
        /secret names must be unique/,
      ],
      [
        {
          projectId: "good-name",
          prompt: "x",
          secrets: [{ secretName: "A", secretValue: "1", environment: "staging" }],
        },
        /environment/,
      ],
      [
        { projectId: "good-name", prompt: "x", creditLimits: { maxDevelopmentCreditsPerMonth: -5 } },
        /positive number or null/,
      ],
      [{ projectId: "good-name", prompt: "x", figma: { token: "" } }, /figma.token is required/],
    ];
    for (const [args, message] of cases) {
      const r = await call(conn.client, "build_launch_project", args);
      expect(r.isError, JSON.stringify(args).slice(0, 80)).toBe(true);
      expect(text(r)).toMatch(message);
    }
    const list = await call(conn.client, "build_list_projects", { limit: 101 });
    expect(text(list)).toMatch(/limit must be 1-100/);
    expect(hits(`POST ${API}/projects/launch`)).toBe(launches);
  });

  it("passes launch warnings and the Figma connection through, never the token", async () => {
    const token = "figd_valid_personal_token_canary_0001";
    const r = await call(conn.client, "build_launch_project", {
      projectId: "e2e-design",
      prompt: "Landing page [minutes=5]",
      model: "sonnet",
      fastMode: true,
      figma: { token },
    });
    expect(r.isError).toBeFalsy();
    expect(r.structuredContent).toMatchObject({ figma: { connected: true }, agent: { started: true } });
    expect(text(r)).toMatch(/Agent warning: .*fastMode/i);
    expect(JSON.stringify(r)).not.toContain(token);
    expect(conn.stderr()).not.toContain(token);
  });

  it("turns every upstream error the server cannot pre-check into a clear tool error", async () => {
    const launch = (args: Record<string, unknown>) =>
      call(conn.client, "build_launch_project", { prompt: "x", ...args });
    const expectError = async (p: Promise<unknown>, status: number, code: string) => {
      const r = (await p) as { isError?: boolean };
      expect(r.isError, code).toBe(true);
      expect(text(r), code).toContain(`HTTP ${status}, ${code}`);
      expect(text(r), code).toMatch(/Next step: /);
    };
    await expectError(
      launch({ projectId: "figma-bad", figma: { token: "not a figma token" } }),
      400,
      "FIGMA_TOKEN_MALFORMED",
    );
    await expectError(
      launch({ projectId: "figma-bad", figma: { token: "figd_invalid_token_abcdefgh" } }),
      400,
      "FIGMA_TOKEN_INVALID",
    );
    await expectError(
      launch({ projectId: "figma-bad", figma: { token: "figd_noscope_token_abcdefgh" } }),
      400,
      "FIGMA_TOKEN_FORBIDDEN",
    );
    await expectError(
      launch({ projectId: "figma-bad", figma: { token: "figd_unreachable_token_abcd" } }),
      400,
      "FIGMA_UNREACHABLE",
    );
    await expectError(
      launch({ projectId: "figma-bad", figma: { token: "figd_ratelimited_token_abcd" } }),
      400,
      "FIGMA_RATE_LIMITED",
    );
    await expectError(launch({ projectId: "group-bad", groupId: "grp_nope" }), 400, "INVALID_PROJECT_GROUP");
    await expectError(launch({ projectId: "group-full", groupId: "grp_internal" }), 400, "INVALID_PROJECT_GROUP");

    // Launch tries the id and six suffixed candidates, then answers 409; create answers 409 at once.
    for (let i = 0; i < 7; i++)
      await ok(conn.client, "build_launch_project", {
        projectId: "crowded-name",
        prompt: "Again [minutes=1]",
        repeat: true,
      });
    const crowded = call(conn.client, "build_launch_project", { projectId: "crowded-name", prompt: "Once more" });
    await expectError(crowded, 409, "PROJECT_ALREADY_EXISTS");
    // §3 lists five suffix lengths for "six" candidates: the hint claims no count (issue 23 item 15).
    expect(text(await crowded)).toMatch(/Next step: the id is taken \(launch also tried its suffixed variants\)/);
    await expectError(
      call(conn.client, "build_create_project", { projectId: "crowded-name" }),
      409,
      "PROJECT_ALREADY_EXISTS",
    );

    // Internal errors of the read operations (the sandbox only produces them on demand).
    for (const [path, code] of [
      ["/account", "GET_ACCOUNT_ERROR"],
      ["/credit-costs", "GET_CREDIT_COSTS_ERROR"],
      ["/projects", "LIST_PROJECTS_ERROR"],
    ] as const) {
      sandbox.build.router.injectFault({
        method: "GET",
        path: `${API}${path}`,
        times: 1,
        action: {
          kind: "respond",
          response: { status: 400, body: { errors: { errorCode: code, errorMessage: "internal error" }, data: null } },
        },
      });
    }
    await expectError(call(conn.client, "build_get_account"), 400, "GET_ACCOUNT_ERROR");
    await expectError(call(conn.client, "build_get_credit_costs"), 400, "GET_CREDIT_COSTS_ERROR");
    await expectError(call(conn.client, "build_list_projects"), 400, "LIST_PROJECTS_ERROR");
    sandbox.build.router.injectFault({
      method: "POST",
      path: `${API}/projects/launch`,
      action: {
        kind: "respond",
        response: {
          status: 400,
          body: { errors: { errorCode: "LAUNCH_PROJECT_ERROR", errorMessage: "storage unavailable" }, data: null },
        },
      },
    });
    await expectError(launch({ projectId: "launch-error" }), 400, "LAUNCH_PROJECT_ERROR");

    // Figma token checks are limited to 10 a minute.
    let limited = false;
    for (let i = 0; i < 12 && !limited; i++) {
      const r = await launch({ projectId: `ab-${"x".repeat(2)}`, figma: { token: "figd_invalid_token_abcdefgh" } });
      limited = text(r).includes("HTTP 429, RATE_LIMITED");
    }
    expect(limited).toBe(true);
  });

  it("refuses an unaffordable spend locally, and reports the upstream's 402 with the balance advice", async () => {
    const { recurrentCredits, oneTimeCredits } = sandbox.build.balance();
    sandbox.build.setCredits(0, 0);
    try {
      const creates = hits(`POST ${API}/projects`);
      const refused = await call(conn.client, "build_create_project", { projectId: "too-poor" });
      expect(refused.isError).toBe(true);
      expect(text(refused)).toMatch(
        /Not enough credits: Create project too-poor costs 1 credit \(CREATE_PROJECT 1\) and the balance is 0/,
      );
      expect(hits(`POST ${API}/projects`)).toBe(creates);
      // An agent run has no fixed price, so only the upstream can refuse it.
      const r = await call(conn.client, "build_start_agent", { projectId: "acme-storefront", prompt: "More features" });
      expect(r.isError).toBe(true);
      expect(text(r)).toMatch(/HTTP 402, INSUFFICIENT_CREDITS/);
      expect(text(r)).toMatch(/build_get_account/);
    } finally {
      sandbox.build.setCredits(recurrentCredits, oneTimeCredits);
    }
  });

  it("exposes account, credit costs and projects as resources with completion", async () => {
    const { resources } = await conn.client.listResources();
    expect(resources.map((r) => r.uri)).toEqual(
      expect.arrayContaining(["build://account", "build://credit-costs", "build://projects/acme-storefront"]),
    );
    const account = await conn.client.readResource({ uri: "build://account" });
    expect(account.contents[0].mimeType).toBe("application/json");
    expect(JSON.parse(String((account.contents[0] as { text: string }).text)).credits).toBe(
      sandbox.build.balance().credits,
    );
    const project = await conn.client.readResource({ uri: "build://projects/acme-storefront" });
    expect(JSON.parse(String((project.contents[0] as { text: string }).text)).projectId).toBe("acme-storefront");
    const completion = await conn.client.complete({
      ref: { type: "ref/resource", uri: "build://projects/{projectId}" },
      argument: { name: "projectId", value: "acm" },
    });
    expect(completion.completion.values).toEqual(["acme-storefront"]);
    const templates = await conn.client.listResourceTemplates();
    expect(templates.resourceTemplates.map((t) => t.uriTemplate)).toContain("build://projects/{projectId}");
  });

  it("offers the launch-and-track prompt", async () => {
    const prompt = await conn.client.getPrompt({ name: "launch_and_track", arguments: { idea: "a bakery site" } });
    expect(JSON.stringify(prompt.messages)).toMatch(/build_launch_project/);
  });
});

describe("build service error edges", () => {
  it("maps the 401 body to a clear error naming BUILD_API_KEY", async () => {
    const sandbox = await testSandbox();
    const conn = await connectStdio(sandboxEnv(sandbox, { BUILD_API_KEY: "tlm_sk_wrong_key_canary_999" }));
    const r = await call(conn.client, "build_get_account");
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(/HTTP 401, UNAUTHORIZED.*Unauthorized api key/);
    expect(text(r)).toMatch(/check BUILD_API_KEY/);
    expect(text(r)).not.toContain("tlm_sk_wrong_key_canary_999");
    expect(conn.stderr()).not.toContain("tlm_sk_wrong_key_canary_999");
    await conn.close();
    await sandbox.close();
  });

  it("sends the key as Bearer when BUILD_API_KEY_HEADER is Authorization", async () => {
    const sandbox = await testSandbox();
    const conn = await connectStdio(sandboxEnv(sandbox, { BUILD_API_KEY_HEADER: "Authorization" }));
    expect(await ok(conn.client, "build_get_account")).toHaveProperty("credits");
    await conn.close();
    await sandbox.close();
  });

  it("reports plan limits: 403 MAX_PROJECTS_REACHED and 429 RATE_LIMIT_EXCEEDED", async () => {
    const sandbox = await testSandbox({ build: { maxProjects: 6, createsPerMinute: 100 } });
    const conn = await connectStdio(sandboxEnv(sandbox));
    await ok(conn.client, "build_create_project", { projectId: "one-more" });
    const full = await call(conn.client, "build_create_project", { projectId: "too-many" });
    expect(text(full)).toMatch(/HTTP 403, MAX_PROJECTS_REACHED/);
    await conn.close();
    await sandbox.close();

    const limited = await testSandbox({ build: { createsPerMinute: 1 } });
    const conn2 = await connectStdio(sandboxEnv(limited));
    await ok(conn2.client, "build_create_project", { projectId: "first-one" });
    const second = await call(conn2.client, "build_create_project", { projectId: "second-one" });
    expect(text(second)).toMatch(/HTTP 429, RATE_LIMIT_EXCEEDED/);
    expect(text(second)).toMatch(/Next step: projects are being created faster/);
    await conn2.close();
    await limited.close();
  });

  it("explains a timeout and an unreachable upstream", async () => {
    const sandbox = await testSandbox();
    const conn = await connectStdio(sandboxEnv(sandbox, { UPSTREAM_TIMEOUT_MS: "300" }));
    sandbox.build.router.injectFault({ method: "GET", path: `${API}/account`, times: 10, action: { kind: "hang" } });
    const slow = await call(conn.client, "build_get_account");
    expect(slow.isError).toBe(true);
    expect(text(slow)).toMatch(/TIMEOUT.*did not answer within 300 ms/);
    await conn.close();
    await sandbox.close();

    const dead = await connectStdio(sandboxEnv(sandbox)); // sandbox is closed now
    const r = await call(dead.client, "build_get_account");
    expect(text(r)).toMatch(/UNREACHABLE/);
    expect(text(r)).toMatch(/check the service's base URL/);
    await dead.close();
  });
});
