import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Sandbox } from "../../src/sandbox/index.js";
import { call, connectStdio, ok, retryStart, sandboxEnv, testSandbox, text, type StdioConnection } from "../harness.js";

const PATCH = "PATCH /api/v1/vcaas/projects/:projectId/credit-limits";
const ANALYTICS = "GET /api/v1/credits/spending-analytics";
const DAY = 24 * 60 * 60 * 1000;

interface Limits {
  projectId: string;
  creditLimits: { maxDevelopmentCreditsPerMonth: number | null; maxInfrastructureCreditsPerMonth: number | null };
}
interface Spending {
  daily: Array<{ date: string; development: number; infrastructure: number; byType: Record<string, number> }>;
  totals: { development: number; infrastructure: number; total: number; byType: Record<string, number> };
  projects: string[];
}

describe("build_billing: credit caps and spending analytics", () => {
  let sandbox: Sandbox;
  let conn: StdioConnection;
  const hits = (key: string) => sandbox.build.router.count(key);
  /** A UTC day of the simulated clock, `offset` days away. */
  const simDay = (offset = 0) => new Date(sandbox.build.simulatedNow() + offset * DAY).toISOString().slice(0, 10);

  beforeAll(async () => {
    // A slow clock: the simulated day must not roll over while the analytics are checked.
    sandbox = await testSandbox({ timeScale: 60 });
    conn = await retryStart(() => connectStdio(sandboxEnv(sandbox)));
    await ok(conn.client, "build_create_project", { projectId: "e2e-caps" });
    await ok(conn.client, "build_add_webhook", {
      url: "https://hooks.example.com/caps",
      event: "project.credit_limit.reached",
    });
  });
  afterAll(async () => {
    await conn?.close();
    await sandbox?.close();
  });

  it("sets one cap and keeps the other; null removes a cap", async () => {
    const dev = await call(conn.client, "build_set_credit_limits", {
      projectId: "e2e-caps",
      maxDevelopmentCreditsPerMonth: 2,
    });
    expect(dev.structuredContent).toMatchObject({
      projectId: "e2e-caps",
      creditLimits: { maxDevelopmentCreditsPerMonth: 2, maxInfrastructureCreditsPerMonth: 250 },
    });
    expect(text(dev)).toBe(
      "Monthly credit caps of e2e-caps: development 2 credits/month, infrastructure 250 credits/month. " +
        "Caps reset on the 1st of each month.",
    );

    const infra = await ok<Limits>(conn.client, "build_set_credit_limits", {
      projectId: "e2e-caps",
      maxInfrastructureCreditsPerMonth: null,
    });
    expect(infra.creditLimits).toEqual({ maxDevelopmentCreditsPerMonth: 2, maxInfrastructureCreditsPerMonth: null });
    expect(sandbox.build.project("e2e-caps")?.creditLimits).toEqual(infra.creditLimits);
  });

  it("refuses a request the service would refuse, naming the field, before anything is sent", async () => {
    const before = hits(PATCH);
    const none = await call(conn.client, "build_set_credit_limits", { projectId: "e2e-caps" });
    expect(none.isError).toBe(true);
    expect(text(none)).toMatch(
      new RegExp(
        /Invalid arguments for build_set_credit_limits: /.source +
          /give maxDevelopmentCreditsPerMonth, maxInfrastructureCreditsPerMonth or both /.source +
          /.*Nothing was sent upstream/.source,
      ),
    );
    const zero = await call(conn.client, "build_set_credit_limits", {
      projectId: "e2e-caps",
      maxDevelopmentCreditsPerMonth: 0,
    });
    expect(text(zero)).toMatch(
      new RegExp(
        /maxDevelopmentCreditsPerMonth: /.source +
          /maxDevelopmentCreditsPerMonth must be a positive number, or null to remove the cap/.source,
      ),
    );
    const quoted = await call(conn.client, "build_set_credit_limits", {
      projectId: "e2e-caps",
      maxInfrastructureCreditsPerMonth: "100",
    });
    expect(text(quoted)).toMatch(/maxInfrastructureCreditsPerMonth/);
    expect(hits(PATCH)).toBe(before);
  });

  it("refuses spending past a development cap with 403, fires the webhook once, spends after cap removal", async () => {
    const balance = sandbox.build.balance().credits;
    const refused = await call(conn.client, "build_restart_server", { projectId: "e2e-caps" });
    expect(refused.isError).toBe(true);
    expect(text(refused)).toMatch(/403[\s\S]*PROJECT_CREDIT_LIMIT_REACHED[\s\S]*raise or remove it/);
    expect(sandbox.build.balance().credits).toBe(balance);
    await call(conn.client, "build_restart_server", { projectId: "e2e-caps" });
    const fired = sandbox.build.webhookDeliveries().filter((d) => d.body.event === "project.credit_limit.reached");
    expect(fired).toEqual([
      expect.objectContaining({
        url: "https://hooks.example.com/caps",
        body: expect.objectContaining({ data: { projectId: "e2e-caps", category: "development", limit: 2, spent: 1 } }),
      }),
    ]);

    await ok(conn.client, "build_set_credit_limits", { projectId: "e2e-caps", maxDevelopmentCreditsPerMonth: null });
    await ok(conn.client, "build_restart_server", { projectId: "e2e-caps" });
    expect(sandbox.build.balance().credits).toBe(balance - 3);
  });

  it("caps the app's own infrastructure spending too", async () => {
    await ok(conn.client, "build_set_credit_limits", { projectId: "e2e-caps", maxInfrastructureCreditsPerMonth: 1 });
    for (let i = 0; i < 3; i++) sandbox.build.chargeInfrastructure("e2e-caps", "email", 0.3);
    expect(() => sandbox.build.chargeInfrastructure("e2e-caps", "pdf", 0.2)).toThrow(/infrastructure credit limit/);
    const fired = sandbox.build.webhookDeliveries().filter((d) => d.body.data.category === "infrastructure");
    expect(fired).toHaveLength(1);
    expect(fired[0].body.data).toMatchObject({ projectId: "e2e-caps", limit: 1 });
  });

  it("reports a project's spending by day and type from the service's own ledger", async () => {
    const before = hits(ANALYTICS);
    const result = await call(conn.client, "build_get_spending", {
      from: simDay(-2),
      to: simDay(1),
      projectId: "e2e-caps",
    });
    expect(result.isError).toBeFalsy();
    expect(hits(ANALYTICS)).toBe(before + 1); // outside /api/v1/vcaas
    const data = result.structuredContent as unknown as Spending;
    expect(data.daily).toHaveLength(4);
    expect(data.totals).toMatchObject({
      development: 3,
      infrastructure: 0.9,
      total: 3.9,
      byType: { start_server: 3, email: 0.9 },
    });
    expect(data.projects).toEqual(["e2e-caps"]);
    expect(text(result)).toMatch(
      new RegExp(
        `^Spent ${simDay(-2)} to ${simDay(1)} for e2e-caps: 3\\.9 credits \\(development 3, ` +
          `infrastructure 0\\.9\\)\\.\\nBy type: start_server 3, email 0\\.9\\.\\nBusiest days: `,
      ),
    );
  });

  it("covers the whole account, demo history included", async () => {
    const account = await ok<Spending>(conn.client, "build_get_spending", { from: simDay(-30), to: simDay() });
    expect(account.totals.byType.prompt).toBeGreaterThan(0);
    expect(account.projects).toEqual(expect.arrayContaining(["e2e-caps", "acme-storefront", "booking-app"]));
    expect(account.daily).toHaveLength(31);
    const quiet = await call(conn.client, "build_get_spending", { from: "2020-01-01", to: "2020-01-31" });
    expect(text(quiet)).toBe("No credits spent 2020-01-01 to 2020-01-31.");
  });

  it("refuses bad dates and ranges over 90 days before anything is sent", async () => {
    const before = hits(ANALYTICS);
    const badDay = await call(conn.client, "build_get_spending", { from: "2025-02-30", to: "2025-03-01" });
    expect(text(badDay)).toMatch(/from: from must be a date YYYY-MM-DD/);
    const reversed = await call(conn.client, "build_get_spending", { from: "2025-03-02", to: "2025-03-01" });
    expect(text(reversed)).toMatch(/from must not be after to\. Nothing was sent upstream/);
    const long = await call(conn.client, "build_get_spending", { from: "2025-01-01", to: "2025-04-02" });
    expect(text(long)).toMatch(/from must be at most 90 days before to \(it is 91\)/);
    expect(
      (await call(conn.client, "build_get_spending", { from: "2025-01-01", to: "2025-04-01" })).isError,
    ).toBeFalsy();
    expect(hits(ANALYTICS)).toBe(before + 1);
  });
});
