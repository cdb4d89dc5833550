// Long waits shared between callers, progress a person can read, and the credit guard, in both
// eras. 2025-11-25 tasks are in tasks.2025.e2e.test.ts, the 2026-07-28 tasks extension in
// tasks.2026.e2e.test.ts, resource subscriptions in subscriptions.e2e.test.ts.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Sandbox } from "../../src/sandbox/index.js";
import {
  call,
  connectStdio,
  ok,
  sandboxEnv,
  settles,
  sleep,
  testSandbox,
  text,
  until,
  type StdioConnection,
} from "../harness.js";
import { keepWireOrder } from "./in-order.js";

const API = "/api/v1/vcaas";
const AGENT_STATUS = `GET ${API}/projects/:projectId/agent/status`;

describe("shared polling and progress", () => {
  let sandbox: Sandbox;
  let conn: StdioConnection;
  const hits = (key: string) => sandbox.build.router.count(key);
  const INTERVAL = 100;

  beforeAll(async () => {
    sandbox = await testSandbox();
    conn = await connectStdio(sandboxEnv(sandbox, { BUILD_POLL_INTERVAL_MS: String(INTERVAL) }));
    keepWireOrder(conn.client); // the progress test checks the last line
  });
  afterAll(async () => {
    await conn?.close();
    await sandbox?.close();
  });

  it("100 concurrent waits on one project share one upstream poll per interval", { timeout: 90_000 }, async () => {
    await ok(conn.client, "build_start_agent", { projectId: "booking-app", prompt: "Long [minutes=100000]" });
    const controllers = Array.from({ length: 100 }, () => new AbortController());
    const progressed = new Set<number>();
    const waits = controllers.map((c, i) =>
      conn.client
        .callTool(
          { name: "build_wait", arguments: { projectId: "booking-app", until: "agent" } },
          {
            signal: c.signal,
            onprogress: () => progressed.add(i),
            timeout: 60_000,
          },
        )
        .catch(() => "cancelled"),
    );
    try {
      // A hundred calls and their first progress lines take a while on a loaded machine: the subject
      // here is the shared poll, not how soon they start.
      await until(
        async () => progressed.size,
        (n) => n === 100,
        30_000,
      );
      const before = hits(AGENT_STATUS);
      const started = Date.now();
      await sleep(2000);
      // The shared poll keeps going: at least 3 polls, in 2 s quiet, later at load 18 (a poll and
      // its 100 progress lines then took about a second).
      const polls = await until(
        async () => hits(AGENT_STATUS) - before,
        (n) => n >= 3,
        20_000,
      );
      // The window as measured: under load the sleep overshoots and the server's timers run late, so
      // the bound comes from the time that really passed. One request per interval, never one per
      // waiter (that would be ~100 per interval).
      const intervals = (Date.now() - started) / INTERVAL;
      expect(polls).toBeLessThanOrEqual(intervals + 2);
    } finally {
      for (const c of controllers) c.abort();
    }
    expect(await Promise.all(waits)).toEqual(Array(100).fill("cancelled"));
    // The poll stops once the last waiter left: a stretch of 4 intervals without a request comes
    // within seconds (under load the cancels take more than a few intervals to arrive).
    await settles(() => hits(AGENT_STATUS), INTERVAL * 4);
    await ok(conn.client, "build_stop_agent", { projectId: "booking-app" });
  });

  it("progress lines tell a person what is happening, secrets needed included", async () => {
    const messages: string[] = [];
    const r = await conn.client.callTool(
      {
        name: "build_launch_project",
        arguments: { projectId: "progress-demo", prompt: "Payments page [secrets] [minutes=40]", wait: true },
      },
      { onprogress: (p) => messages.push(p.message ?? "") },
    );
    expect(r.isError).toBeFalsy();
    expect(messages.some((m) => /^Agent running · \d+s · \d+ credits · agent: ".+"/.test(m))).toBe(true);
    expect(messages.some((m) => /asked for secrets: STRIPE_API_KEY/.test(m))).toBe(true);
    expect(messages.at(-1)).toMatch(/^Agent finished · .* · preview: https?:\/\//);
  });
});

describe("credit guard", () => {
  let sandbox: Sandbox;
  beforeAll(async () => {
    sandbox = await testSandbox();
  });
  afterAll(async () => sandbox?.close());

  async function elicitingClient(answer: "accept" | "decline" | "cancel", env: Record<string, string> = {}) {
    const asked: string[] = [];
    const conn = await connectStdio(sandboxEnv(sandbox, env), [], { capabilities: { elicitation: {} } });
    // 2025: the server sends elicitation/create; 2026-07-28: it answers input_required and the
    // client fulfils it through the same handler, then retries the call.
    conn.client.setRequestHandler("elicitation/create", async (req) => {
      asked.push(req.params.message);
      return answer === "accept" ? { action: "accept", content: { confirm: true } } : { action: answer };
    });
    return { conn, asked };
  }

  it("refuses an unaffordable launch with the numbers and no upstream call", async () => {
    const conn = await connectStdio(sandboxEnv(sandbox));
    sandbox.build.setCredits(0, 1.2);
    const launches = sandbox.build.router.count(`POST ${API}/projects/launch`);
    const r = await call(conn.client, "build_launch_project", {
      projectId: "too-dear",
      prompt: "x",
      files: [{ name: "a.png", content: "iVBORw0KGgo=" }],
    });
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(
      /Launch project too-dear costs 1.5 credits \(CREATE_PROJECT 1 \+ UPLOAD_FILE 0.5\) and the balance is 1.2/,
    );
    expect(r.structuredContent).toMatchObject({ refused: true, cost: 1.5, balance: 1.2 });
    expect(sandbox.build.router.count(`POST ${API}/projects/launch`)).toBe(launches);
    sandbox.build.setCredits(200, 300);
    await conn.close();
  });

  it("asks before spending and proceeds when the user accepts", async () => {
    const { conn, asked } = await elicitingClient("accept");
    const before = sandbox.build.balance().credits;
    const r = await ok<{ projectId: string }>(conn.client, "build_create_project", { projectId: "approved-one" });
    expect(r.projectId).toBe("approved-one");
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatch(
      new RegExp(
        `Create project approved-one: costs 1 credit \\(CREATE_PROJECT 1\\)\\. ` +
          `Balance ${before} → ${before - 1} credits after`,
      ),
    );
    await conn.close();
  });

  it("shows the balance as it is when asking, not a snapshot read seconds before (issue 28)", async () => {
    const { conn, asked } = await elicitingClient("decline");
    const { recurrentCredits, oneTimeCredits } = sandbox.build.balance();
    await call(conn.client, "build_create_project", { projectId: "asked-first" });
    // Credits spent elsewhere (another replica, an agent run) within the guard's cache lifetime.
    sandbox.build.setCredits(Math.max(0, recurrentCredits - 7), oneTimeCredits);
    await call(conn.client, "build_create_project", { projectId: "asked-after-spend" });
    expect(asked).toHaveLength(2);
    expect(asked[1]).toMatch(new RegExp(`Balance ${sandbox.build.balance().credits} → `));
    sandbox.build.setCredits(200, 300);
    await conn.close();
  });

  it("ends cleanly with nothing spent when the user declines", async () => {
    const { conn, asked } = await elicitingClient("decline");
    const creates = sandbox.build.router.count(`POST ${API}/projects`);
    const before = sandbox.build.balance().credits;
    const r = await call(conn.client, "build_create_project", { projectId: "declined-one" });
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(
      /the user did not approve spending 1 credit on Create project declined-one\. Nothing was sent or spent/,
    );
    expect(asked).toHaveLength(1);
    expect(sandbox.build.router.count(`POST ${API}/projects`)).toBe(creates);
    expect(sandbox.build.balance().credits).toBe(before);
    await conn.close();
  });

  it('takes an answer that does not match the form (confirm: "yes") as a no, with nothing spent', async () => {
    // The SDK's 2025 shim passes a form's answer on unvalidated (its Ajv check is for elicitInput):
    // core/tools/confirm.ts approves only `confirm: true`, in both eras.
    const conn = await connectStdio(sandboxEnv(sandbox), [], { capabilities: { elicitation: {} } });
    conn.client.setRequestHandler("elicitation/create", async () => ({
      action: "accept",
      content: { confirm: "yes" },
    }));
    const creates = sandbox.build.router.count(`POST ${API}/projects`);
    const before = sandbox.build.balance().credits;
    const r = await call(conn.client, "build_create_project", { projectId: "malformed-answer" });
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(/the user did not approve spending 1 credit on Create project malformed-answer/);
    expect(sandbox.build.router.count(`POST ${API}/projects`)).toBe(creates);
    expect(sandbox.build.balance().credits).toBe(before);
    await conn.close();
  });

  it("proceeds without asking when the client cannot be asked", async () => {
    const conn = await connectStdio(sandboxEnv(sandbox));
    expect(await ok(conn.client, "build_create_project", { projectId: "no-elicitation" })).toMatchObject({
      projectId: "no-elicitation",
    });
    await conn.close();
  });

  it("BUILD_CONFIRM_SPEND sets the threshold above which to ask, and never turns asking off", async () => {
    const threshold = await elicitingClient("accept", { BUILD_CONFIRM_SPEND: "5" });
    await ok(threshold.conn.client, "build_create_project", { projectId: "cheap-one" }); // 1 credit: below 5
    expect(threshold.asked).toHaveLength(0);
    // up to 40
    await ok(threshold.conn.client, "build_start_agent", { projectId: "cheap-one", prompt: "Build it [minutes=5]" });
    expect(threshold.asked).toHaveLength(1);
    expect(threshold.asked[0]).toMatch(
      /Start an agent run on cheap-one: has no fixed price: the agent run \(typically 10-40 credits/,
    );
    await threshold.conn.close();

    const never = await elicitingClient("decline", { BUILD_CONFIRM_SPEND: "never" });
    await ok(never.conn.client, "build_create_project", { projectId: "never-asked" });
    expect(never.asked).toHaveLength(0);
    await never.conn.close();
  });
});
