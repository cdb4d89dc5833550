import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Sandbox } from "../../src/sandbox/index.js";
import {
  call,
  connectStdio,
  ok,
  retryStart,
  sandboxEnv,
  sleep,
  testSandbox,
  text,
  type StdioConnection,
} from "../harness.js";

const API = "/api/v1/vcaas";
const P = `${API}/projects/:projectId`;
const TOKEN = "github_pat_11ABCDEFG0canaryTokenValue_0123456789abcdef";

describe("build_github: connection, pulls and environment names", () => {
  let sandbox: Sandbox;
  let conn: StdioConnection;
  const hits = (key: string) => sandbox.build.router.count(key);

  beforeAll(async () => {
    sandbox = await testSandbox();
    conn = await retryStart(() => connectStdio(sandboxEnv(sandbox)));
  });
  afterAll(async () => {
    await conn?.close();
    await sandbox?.close();
  });

  it("declares its tools with the right annotations", async () => {
    const { tools } = await conn.client.listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    expect(byName.get("build_get_env_names")!.annotations).toMatchObject({ readOnlyHint: true });
    expect(byName.get("build_disconnect_github")!.annotations).toMatchObject({ destructiveHint: true });
    // §12: without shared history one side is overwritten (issue 29).
    expect(byName.get("build_connect_github")!.annotations).toMatchObject({
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: false,
    });
    for (const name of ["build_get_github_status", "build_pull_github", "build_get_github_pull_status"])
      expect(byName.has(name), name).toBe(true);
  });

  it("refuses malformed connections locally and never echoes the token", async () => {
    const connects = hits(`POST ${P}/github/connect`);
    const classic = await call(conn.client, "build_connect_github", {
      projectId: "acme-storefront",
      token: "ghp_classicTokenValue0123456789",
      repositoryFullName: "acme/site",
    });
    expect(text(classic)).toMatch(
      /token: token must be a fine-grained personal access token \(github_pat_…\)\. Nothing was sent upstream/,
    );
    expect(text(classic)).not.toContain("ghp_classicTokenValue0123456789");
    const repo = await call(conn.client, "build_connect_github", {
      projectId: "acme-storefront",
      token: TOKEN,
      repositoryFullName: "just-a-name",
    });
    expect(text(repo)).toMatch(/repositoryFullName: repositoryFullName must be owner\/repo/);
    const direction = await call(conn.client, "build_connect_github", {
      projectId: "acme-storefront",
      token: TOKEN,
      repositoryFullName: "acme/site",
      syncDirection: "both",
    });
    expect(text(direction)).toMatch(/syncDirection: /);
    expect(hits(`POST ${P}/github/connect`)).toBe(connects);

    const noPerm = "github_pat_noperm_0123456789abcdefghijkl";
    const refused = await call(conn.client, "build_connect_github", {
      projectId: "acme-storefront",
      token: noPerm,
      repositoryFullName: "acme/site",
    });
    expect(text(refused)).toMatch(
      /HTTP 400, GITHUB_VALIDATION_FAILED[\s\S]*Next step: GitHub refused the token or repository/,
    );
    const missing = await call(conn.client, "build_connect_github", {
      projectId: "acme-storefront",
      token: TOKEN,
      repositoryFullName: "acme/missing-repo",
    });
    expect(text(missing)).toMatch(/HTTP 400, GITHUB_VALIDATION_FAILED/);
    const noBranches = await call(conn.client, "build_connect_github", {
      projectId: "acme-storefront",
      token: TOKEN,
      repositoryFullName: "acme/nobranches",
    });
    expect(text(noBranches)).toMatch(/HTTP 400, GITHUB_SYNC_FAILED[\s\S]*develop and main/);
    expect(conn.stderr()).not.toContain(noPerm);

    // An upstream answer that quotes the token is scrubbed (the token is registered before the request).
    const echoed = "github_pat_echoed_0123456789abcdefghijkl";
    sandbox.build.router.injectFault({
      method: "POST",
      path: `${API}/projects/acme-storefront/github/connect`,
      action: {
        kind: "respond",
        response: {
          status: 400,
          body: { errors: { errorCode: "GITHUB_VALIDATION_FAILED", errorMessage: `bad token ${echoed}` }, data: null },
        },
      },
    });
    const quoted = await call(conn.client, "build_connect_github", {
      projectId: "acme-storefront",
      token: echoed,
      repositoryFullName: "acme/site",
    });
    expect(text(quoted)).toMatch(/bad token \[redacted\]/);
    expect(JSON.stringify(quoted) + conn.stderr()).not.toContain(echoed);
  });

  it("connects, pulls what others pushed with wait: true, and disconnects", async () => {
    const before = await call(conn.client, "build_get_github_status", { projectId: "acme-storefront" });
    expect(before.structuredContent).toMatchObject({ connected: false, tokenExpired: false });
    expect(text(before)).toBe("acme-storefront is not connected to GitHub.");

    const connected = await call(conn.client, "build_connect_github", {
      projectId: "acme-storefront",
      token: TOKEN,
      repositoryFullName: "acme/storefront",
    });
    expect(connected.isError).toBeFalsy();
    expect(connected.structuredContent).toMatchObject({
      connected: true,
      repositoryFullName: "acme/storefront",
      syncAction: "push_new",
      repoHasContent: false,
      requiresRebuild: false,
    });
    expect(text(connected)).toBe(
      "Connected acme/storefront to acme-storefront (push_new). " +
        "Overwritten: nothing (acme/storefront was empty: main and develop were created).",
    );
    expect(JSON.stringify(connected)).not.toContain(TOKEN);

    const status = await call(conn.client, "build_get_github_status", { projectId: "acme-storefront" });
    expect(status.structuredContent).toMatchObject({
      connected: true,
      tokenValid: true,
      developBranch: "develop",
      productionBranch: "main",
    });
    expect(text(status)).toMatch(
      /connected to acme\/storefront \(token valid; develop = development, main = production\)/,
    );

    const nothing = await call(conn.client, "build_pull_github", { projectId: "acme-storefront", wait: true });
    expect(nothing.structuredContent).toMatchObject({ status: "no_changes", filesUpdated: 0 });
    expect(nothing.structuredContent).not.toHaveProperty("wait");
    expect(text(nothing)).toMatch(
      /^No changes on develop to pull into acme-storefront\. "develop has no new commits"$/,
    );
    const none = await ok<{ status: string | null }>(conn.client, "build_get_github_pull_status", {
      projectId: "acme-storefront",
    });
    expect(none.status).toBeNull();

    const versions = sandbox.build.project("acme-storefront")!.versions.length;
    sandbox.build.pushToGithub("acme-storefront", {
      "src/app/about/page.tsx": "export default function About() { return <p>About us</p>; }\n",
    });
    const progress: string[] = [];
    const pulled = await conn.client.callTool(
      { name: "build_pull_github", arguments: { projectId: "acme-storefront", wait: true } },
      { onprogress: (p) => progress.push(p.message ?? ""), timeout: 20_000 },
    );
    expect(pulled.isError).toBeFalsy();
    expect(pulled.structuredContent).toMatchObject({
      status: "pulling",
      filesUpdated: 1,
      wait: { outcome: "done", until: "githubPull", lastStatus: { status: "success" } },
    });
    expect(text(pulled)).toMatch(/^The GitHub pull has ended\./);
    expect(progress.at(-1)).toMatch(/^Pulled and rebuilt · \d+s$/);
    expect(sandbox.build.project("acme-storefront")!.versions.length).toBe(versions + 1);
    const file = await ok<{ content: string }>(conn.client, "build_read_file", {
      projectId: "acme-storefront",
      path: "src/app/about/page.tsx",
    });
    expect(file.content).toContain("About us");
    const pullStatus = await call(conn.client, "build_get_github_pull_status", { projectId: "acme-storefront" });
    expect(text(pullStatus)).toMatch(/^GitHub pull of acme-storefront: success \(started \S+\)\.$/);

    sandbox.build.pushToGithub("acme-storefront", { "src/app/page.tsx": "<<<<<<< [pull-error]" });
    const conflict = await call(conn.client, "build_pull_github", { projectId: "acme-storefront" });
    expect(text(conflict)).toMatch(/HTTP 400, GITHUB_PULL_ERROR[\s\S]*Next step: the pull failed/);

    const gone = await call(conn.client, "build_disconnect_github", { projectId: "acme-storefront" });
    expect(gone.structuredContent).toMatchObject({ success: true });
    expect(text(gone)).toMatch(/^Disconnected GitHub from acme-storefront\. "/);
    const again = await call(conn.client, "build_disconnect_github", { projectId: "acme-storefront" });
    expect(text(again)).toMatch(/HTTP 400, GITHUB_NOT_CONNECTED[\s\S]*Next step: .*build_connect_github/);
    const noPull = await call(conn.client, "build_pull_github", { projectId: "acme-storefront" });
    expect(text(noPull)).toMatch(/HTTP 400, GITHUB_NOT_CONNECTED/);
  });

  it("follows the rebuild of a connection that replaced the project code, with build_wait", async () => {
    const connected = await ok<{ requiresRebuild: boolean; syncAction: string; startedAt: string }>(
      conn.client,
      "build_connect_github",
      {
        projectId: "booking-app",
        token: TOKEN,
        repositoryFullName: "salon/unrelated-app",
        syncDirection: "github_to_totalum",
      },
    );
    expect(connected).toMatchObject({
      requiresRebuild: true,
      syncAction: "pull",
      overwritten: "the code of booking-app, replaced by salon/unrelated-app's develop",
    });
    const rendered = await call(conn.client, "build_get_github_pull_status", { projectId: "booking-app" });
    expect(rendered.structuredContent).toMatchObject({ status: expect.stringMatching(/^(pulling|success)$/) });
    const waited = await ok<{ outcome: string; until: string }>(conn.client, "build_wait", {
      projectId: "booking-app",
      until: "githubPull",
      since: connected.startedAt,
    });
    expect(waited).toMatchObject({ outcome: "done", until: "githubPull" });
  });

  it("reports an expired token, and a server that must start first", async () => {
    await ok(conn.client, "build_connect_github", {
      projectId: "spring-campaign",
      token: "github_pat_expiring_0123456789abcdefghij",
      repositoryFullName: "acme/spring",
    });
    await sleep(1500); // an hour of simulated time
    const status = await call(conn.client, "build_get_github_status", { projectId: "spring-campaign" });
    expect(status.structuredContent).toMatchObject({
      connected: false,
      tokenValid: false,
      tokenExpired: true,
      repositoryFullName: "acme/spring",
    });
    expect(text(status)).toMatch(
      /token of spring-campaign expired \(repo acme\/spring\); the credentials were deleted\. Reconnect/,
    );

    const asleep = await call(conn.client, "build_connect_github", {
      projectId: "empty-sandbox",
      token: TOKEN,
      repositoryFullName: "acme/empty",
    });
    expect(text(asleep)).toMatch(/HTTP 409, SERVER_NOT_READY/);
  });

  it("returns only the names of the environment variables, never their values", async () => {
    const r = await call(conn.client, "build_get_env_names", { projectId: "internal-dashboard" });
    expect(r.isError).toBeFalsy();
    const data = r.structuredContent as { development: string[]; production: string[] };
    expect(data.development).toEqual(["NODE_ENV", "NEXT_PUBLIC_APP_URL", "TOTALUM_API_KEY", "DATABASE_URL"]);
    expect(data.production).toEqual([
      "NODE_ENV",
      "NEXT_PUBLIC_APP_URL",
      "TOTALUM_API_KEY",
      "DATABASE_URL",
      "SENDGRID_API_KEY",
    ]);
    expect(text(r)).toMatch(/names only; values are not shown/);
    const all = JSON.stringify(r) + conn.stderr();
    for (const value of ["postgres://demo:demo@db/sales", "SG.demo-secret-value", "tlm_app_"])
      expect(all).not.toContain(value);

    // A value that later shows up anywhere (here: in an upstream error message) is scrubbed.
    const dev = sandbox.build.storedSecretValue("internal-dashboard", "DATABASE_URL")!;
    sandbox.build.router.injectFault({
      method: "GET",
      path: `${API}/projects/internal-dashboard/github/status`,
      action: {
        kind: "respond",
        response: {
          status: 400,
          body: { errors: { errorCode: "GITHUB_STATUS_ERROR", errorMessage: `could not parse ${dev}` }, data: null },
        },
      },
    });
    const leaked = await call(conn.client, "build_get_github_status", { projectId: "internal-dashboard" });
    expect(text(leaked)).toMatch(/GITHUB_STATUS_ERROR/);
    expect(text(leaked)).not.toContain(dev);
  });

  // Issue 29 (§12): connecting an unrelated repository overwrote its main and develop without a word.
  it("asks before a connection that may overwrite the repository, naming it and its branches", async () => {
    const asked: string[] = [];
    let answer: "accept" | "decline" = "decline";
    const eliciting = await retryStart(() =>
      connectStdio(sandboxEnv(sandbox), [], { capabilities: { elicitation: {} } }),
    );
    // 2025: elicitation/create from the server; 2026-07-28: input_required, fulfilled by this handler.
    eliciting.client.setRequestHandler("elicitation/create", async (req) => {
      asked.push(req.params.message);
      return answer === "accept" ? { action: "accept", content: { confirm: true } } : { action: answer };
    });
    try {
      const connects = hits(`POST ${P}/github/connect`);
      const args = { projectId: "acme-storefront", token: TOKEN, repositoryFullName: "acme/unrelated-site" };
      const declined = await call(eliciting.client, "build_connect_github", args);
      expect(declined.isError).toBe(true);
      expect(text(declined)).toMatch(/^Not done: the user did not approve this\. If acme\/unrelated-site has content/);
      expect(asked).toHaveLength(1);
      expect(asked[0]).toMatch(/acme\/unrelated-site .*acme-storefront, its branches main and develop are overwritten/);
      expect(hits(`POST ${P}/github/connect`)).toBe(connects);

      answer = "accept";
      const done = await call(eliciting.client, "build_connect_github", args);
      expect(done.isError).toBeFalsy();
      expect(hits(`POST ${P}/github/connect`)).toBe(connects + 1);
      expect(done.structuredContent).toMatchObject({
        syncAction: "push",
        overwritten: "branches main and develop of acme/unrelated-site, replaced by the code of acme-storefront",
      });
      expect(text(done)).toMatch(/Overwritten: branches main and develop of acme\/unrelated-site/);
      expect(JSON.stringify(done)).not.toContain(TOKEN);
    } finally {
      await eliciting.close();
    }
  });
});
