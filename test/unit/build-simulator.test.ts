import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import {
  BuildSimulator,
  CREDIT_COSTS,
  type BuildSimulatorOptions,
} from "../../src/sandbox/simulators/builder/index.js";

const KEY = "tlm_sk_test_key_0123456789";
const MINUTE = 60_000;
/** Real clock at construction: demo projects are dated relative to it. */
const T0 = Date.UTC(2025, 5, 15, 12, 0, 0);
const TIME_SCALE = 5000;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;
interface Reply {
  status: number;
  body: Any;
  text: string;
}

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

/**
 * The injected clock only moves on advance(): the details cache and the start lag are off unless a
 * test turns them on.
 */
async function start(options: Partial<BuildSimulatorOptions> = {}) {
  const clock = { t: T0 };
  const sim = new BuildSimulator({
    apiKey: KEY,
    timeScale: TIME_SCALE,
    now: () => clock.t,
    detailsCacheMs: 0,
    startLagMs: 0,
    ...options,
  });
  const server = createServer((req, res) => void sim.router.handle(req, res, req.url!));
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1/vcaas`;

  async function call(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = { "api-key": KEY },
  ): Promise<Reply> {
    const init: RequestInit = { method, headers: { ...headers } };
    if (body !== undefined) {
      init.body = typeof body === "string" ? body : JSON.stringify(body);
      (init.headers as Record<string, string>)["content-type"] = "application/json";
    }
    const res = await fetch(base + path, init);
    const text = await res.text();
    return { status: res.status, text, body: text ? JSON.parse(text) : undefined };
  }
  /** Moves the injected clock by a number of simulated minutes. */
  const advance = (simMinutes: number) => {
    clock.t += (simMinutes * MINUTE) / (options.timeScale ?? TIME_SCALE);
  };
  const data = async (method: string, path: string, body?: unknown) => {
    const r = await call(method, path, body);
    expect(r.status, r.text).toBe(200);
    expect(r.body.errors).toBeNull();
    return r.body.data;
  };
  const expectError = async (r: Promise<Reply>, status: number, code: string) => {
    const reply = await r;
    expect({ status: reply.status, code: reply.body?.errors?.errorCode }, reply.text).toEqual({ status, code });
    expect(reply.body.data).toBeNull();
  };
  return { sim, clock, call, data, advance, expectError };
}

describe("auth and envelope", () => {
  it("rejects a missing or wrong key with the bare 401 body, before routing and JSON parsing", async () => {
    const { call } = await start();
    const rejected: Array<Record<string, string>> = [
      {},
      { "api-key": "nope" },
      { authorization: "Bearer nope" },
      { authorization: KEY },
    ];
    for (const headers of rejected) {
      const r = await call("GET", "/account", undefined, headers);
      expect(r.status).toBe(401);
      expect(r.text).toBe('{"error":"Unauthorized api key"}');
    }
    expect((await call("GET", "/no/such/route", undefined, {})).status).toBe(401);
    expect((await call("POST", "/projects", "{not json", {})).status).toBe(401);
  });

  it("accepts api-key and Bearer, answers envelopes for unknown routes and bad JSON", async () => {
    const { call, expectError } = await start();
    expect((await call("GET", "/account", undefined, { authorization: `Bearer ${KEY}` })).status).toBe(200);
    const ok = await call("GET", "/account");
    expect(ok.body).toEqual({ errors: null, data: { credits: 500, recurrentCredits: 200, oneTimeCredits: 300 } });
    await expectError(call("GET", "/no/such/route"), 404, "NOT_FOUND");
    await expectError(call("POST", "/projects", "{not json"), 400, "INVALID_JSON");
    await expectError(call("GET", "/projects/nope-nope"), 404, "PROJECT_NOT_FOUND");
  });

  it("serves the documented credit costs", async () => {
    const { data } = await start();
    expect(await data("GET", "/credit-costs")).toEqual({
      creditCosts: {
        CREATE_PROJECT: 1,
        CREATE_DEPLOYMENT: 1,
        START_SERVER: 3,
        GET_SOURCE_CODE: 1,
        RECOVER_VERSION: 2,
        UPLOAD_FILE: 0.5,
        ADD_CUSTOM_DOMAIN: 2,
        EXPORT_PROJECT: 2,
        IMPORT_PROJECT: 6,
        UPDATE_FILE: 0.1,
        REBUILD_PROJECT: 1,
      },
    });
  });
});

describe("create project", () => {
  it("creates, charges recurrent credits first, and boots the server", async () => {
    const { sim, data, advance } = await start();
    const created = await data("POST", "/projects", {
      projectId: "my-shop",
      description: "A shop",
      label: "Shop",
      groupId: "grp_marketing",
    });
    expect(created).toEqual({
      projectId: "my-shop",
      description: "A shop",
      plan: "api",
      createdAt: new Date(T0).toISOString(),
      label: "Shop",
      groupId: "grp_marketing",
    });
    expect(sim.balance()).toEqual({ credits: 499, recurrentCredits: 199, oneTimeCredits: 300 });
    const details = await data("GET", "/projects/my-shop");
    expect(details).toMatchObject({
      agentProcessStatus: "idle",
      agentServerStatus: "Creating",
      deployment: null,
      versionRecovery: null,
      importInProgress: null,
      customDomain: null,
      secrets: [],
      productionProjectUrl: "my-shop.sandbox-apps.example",
      totalCreditsSpent: 1,
    });
    expect(details.previewImageUrl).toBeUndefined();
    advance(1);
    expect((await data("GET", "/projects/my-shop")).agentServerStatus).toBe("Active");
  });

  // Reference §3 (replaces "-2".."-7" suffixes on create): create answers 409 for a taken id; launch
  // appends 2-6 random characters (six candidates), so a 35-character id becomes longer than 35.
  it("answers 409 on create of a taken id; launch suffixes it six times, then answers 409", async () => {
    const { sim, call, data, expectError } = await start();
    expect((await data("POST", "/projects", { projectId: "taken-name" })).requestedProjectId).toBeUndefined();
    await expectError(call("POST", "/projects", { projectId: "taken-name" }), 409, "PROJECT_ALREADY_EXISTS");
    const lengths: number[] = [];
    for (let n = 0; n < 6; n++) {
      const d = await data("POST", "/projects/launch", { projectId: "taken-name", prompt: "x [minutes=1]" });
      expect(d).toMatchObject({
        projectId: expect.stringMatching(/^taken-name-[a-z0-9]{2,6}$/),
        requestedProjectId: "taken-name",
      });
      lengths.push(d.projectId.length - "taken-name-".length);
    }
    expect(lengths).toEqual([2, 3, 4, 5, 6, 6]);
    const before = sim.balance().credits;
    await expectError(
      call("POST", "/projects/launch", { projectId: "taken-name", prompt: "x" }),
      409,
      "PROJECT_ALREADY_EXISTS",
    );
    expect(sim.balance().credits).toBe(before);

    const long = "a".repeat(35);
    await data("POST", "/projects", { projectId: long });
    const d = await data("POST", "/projects/launch", { projectId: long, prompt: "x" });
    expect(d.projectId).toMatch(new RegExp(`^${long}-[a-z0-9]{2}$`));
    expect((await data("GET", `/projects/${d.projectId}`)).projectId).toBe(d.projectId);
  });

  it.each([
    [{}, 400, "MISSING_PROJECT_ID"],
    [{ projectId: "" }, 400, "MISSING_PROJECT_ID"],
    [{ projectId: "abc" }, 400, "INVALID_PROJECT_NAME_LENGTH"],
    [{ projectId: "a".repeat(36) }, 400, "INVALID_PROJECT_NAME_LENGTH"],
    [{ projectId: "Abcd" }, 400, "INVALID_PROJECT_NAME"],
    [{ projectId: "1abcd" }, 400, "INVALID_PROJECT_NAME"],
    [{ projectId: "ab_cd" }, 400, "INVALID_PROJECT_NAME"],
    [{ projectId: "good-id", description: "x".repeat(501) }, 400, "INVALID_DESCRIPTION"],
    [{ projectId: "good-id", label: "x".repeat(81) }, 400, "INVALID_LABEL"],
    [{ projectId: "good-id", groupId: "grp_nope" }, 400, "INVALID_PROJECT_GROUP"],
    [{ projectId: "good-id", groupId: "grp_internal" }, 400, "INVALID_PROJECT_GROUP"],
  ])("create %j -> %i %s", async (body, status, code) => {
    const { sim, call, expectError } = await start();
    const before = sim.projectIds().length;
    await expectError(call("POST", "/projects", body), status, code);
    expect(sim.projectIds().length).toBe(before);
    expect(sim.balance().credits).toBe(500);
  });

  it("enforces the plan limit, the creation rate and the balance", async () => {
    const limited = await start({ maxProjects: 6 });
    await limited.data("POST", "/projects", { projectId: "sixth" });
    await limited.expectError(limited.call("POST", "/projects", { projectId: "seventh" }), 403, "MAX_PROJECTS_REACHED");

    const rated = await start({ createsPerMinute: 2 });
    await rated.data("POST", "/projects", { projectId: "one-1" });
    await rated.data("POST", "/projects", { projectId: "two-2" });
    await rated.expectError(rated.call("POST", "/projects", { projectId: "three" }), 429, "RATE_LIMIT_EXCEEDED");
    rated.clock.t += 61_000;
    await rated.data("POST", "/projects", { projectId: "three" });

    const poor = await start();
    poor.sim.setCredits(0, 0.5);
    await poor.expectError(poor.call("POST", "/projects", { projectId: "broke" }), 402, "INSUFFICIENT_CREDITS");
    expect(poor.sim.project("broke")).toBeUndefined();
    poor.sim.setCredits(0.5, 10);
    await poor.data("POST", "/projects", { projectId: "split" });
    expect(poor.sim.balance()).toEqual({ credits: 9.5, recurrentCredits: 0, oneTimeCredits: 9.5 });
  });
});

describe("launch", () => {
  const valid = { projectId: "launch-one", prompt: "Build a todo app [minutes=5]" };
  const png = Buffer.from("fake png bytes").toString("base64");

  it.each([
    ["MISSING_PROMPT", { prompt: "  " }],
    ["MISSING_PROMPT", { prompt: undefined }],
    ["INVALID_FILES", { files: "x" }],
    ["INVALID_FILES", { files: [1] }],
    [
      "TOO_MANY_FILES",
      { files: Array.from({ length: 11 }, (_, i) => ({ name: `f${i}`, url: "https://example.com/a.png" })) },
    ],
    ["INVALID_FILE_NAME", { files: [{ url: "https://example.com/a.png" }] }],
    ["INVALID_FILE_SOURCE", { files: [{ name: "a" }] }],
    ["INVALID_FILE_SOURCE", { files: [{ name: "a", url: "https://example.com/a.png", content: png }] }],
    ["INVALID_FILE_URL", { files: [{ name: "a", url: "ftp://example.com/a.png" }] }],
    ["INVALID_FILE_URL", { files: [{ name: "a", url: "http://localhost:3000/a.png" }] }],
    ["INVALID_FILE_URL", { files: [{ name: "a", url: "http://127.0.0.1/a.png" }] }],
    ["INVALID_FILE_URL", { files: [{ name: "a", url: "http://10.1.2.3/a.png" }] }],
    ["INVALID_FILE_URL", { files: [{ name: "a", url: "http://192.168.1.1/a.png" }] }],
    ["INVALID_FILE_CONTENT", { files: [{ name: "a", content: "not base64!!" }] }],
    ["INVALID_SECRETS", { secrets: {} }],
    ["INVALID_SECRETS", { secrets: ["x"] }],
    [
      "TOO_MANY_SECRETS",
      { secrets: Array.from({ length: 51 }, (_, i) => ({ secretName: `S${i}`, secretValue: "v" })) },
    ],
    ["MISSING_SECRET_FIELDS", { secrets: [{ secretName: "A" }] }],
    [
      "DUPLICATE_SECRET_NAME",
      {
        secrets: [
          { secretName: "A", secretValue: "1" },
          { secretName: "A", secretValue: "2" },
        ],
      },
    ],
    ["INVALID_SECRET_ENVIRONMENT", { secrets: [{ secretName: "A", secretValue: "1", environment: "staging" }] }],
    ["INVALID_CREDIT_LIMITS", { creditLimits: 5 }],
    ["INVALID_LIMIT", { creditLimits: { maxDevelopmentCreditsPerMonth: 0 } }],
    ["INVALID_LIMIT", { creditLimits: { maxInfrastructureCreditsPerMonth: "10" } }],
    // Reference §3/§13: the field is `figma` (not `design`), codes FIGMA_*.
    ["INVALID_FIGMA", { figma: "tok" }],
    ["MISSING_FIGMA_TOKEN", { figma: {} }],
    ["FIGMA_TOKEN_MALFORMED", { figma: { token: "figd_has a space_0123456789" } }],
    ["FIGMA_TOKEN_MALFORMED", { figma: { token: "figd_short" } }],
    ["FIGMA_TOKEN_MALFORMED", { figma: { token: "https://www.figma.com/file/abc" } }],
    ["FIGMA_TOKEN_INVALID", { figma: { token: "figd_invalid_0123456789" } }],
    ["FIGMA_TOKEN_FORBIDDEN", { figma: { token: "figd_noscope_0123456789" } }],
    ["FIGMA_UNREACHABLE", { figma: { token: "figd_unreachable_0123456789" } }],
    ["FIGMA_RATE_LIMITED", { figma: { token: "figd_ratelimited_0123456789" } }],
    ["MISSING_PROJECT_ID", { projectId: undefined }],
    ["INVALID_PROJECT_NAME_LENGTH", { projectId: "ab" }],
    ["INVALID_PROJECT_NAME", { projectId: "-abcd" }],
    ["INVALID_DESCRIPTION", { description: "d".repeat(501) }],
    ["INVALID_LABEL", { label: "l".repeat(81) }],
    ["INVALID_PROJECT_GROUP", { groupId: "grp_internal" }],
  ])("400 %s", async (code, override) => {
    const { sim, call, expectError } = await start();
    const before = sim.projectIds().length;
    await expectError(call("POST", "/projects/launch", { ...valid, ...override }), 400, code);
    expect(sim.projectIds().length).toBe(before);
    expect(sim.balance().credits).toBe(500);
  });

  it("rate-limits Figma token checks to 10 per real minute", async () => {
    const { clock, call, expectError } = await start();
    const body = { ...valid, figma: { token: "figd_invalid_0123456789" } };
    for (let i = 0; i < 10; i++) await expectError(call("POST", "/projects/launch", body), 400, "FIGMA_TOKEN_INVALID");
    await expectError(call("POST", "/projects/launch", body), 429, "RATE_LIMITED");
    clock.t += 61_000;
    await expectError(call("POST", "/projects/launch", body), 400, "FIGMA_TOKEN_INVALID");
  });

  it("creates the project with files, secrets and Figma, never echoing secrets or the token", async () => {
    const { sim, call } = await start();
    const token = "figd_live_token_abcdefghijkl";
    const r = await call("POST", "/projects/launch", {
      ...valid,
      label: "Todo",
      groupId: "grp_marketing",
      description: "Todos",
      model: "sonnet",
      fastMode: true,
      effort: "ultra",
      creditLimits: { maxDevelopmentCreditsPerMonth: 80 },
      files: [
        { name: "mock.png", url: "https://example.com/mock.png", description: "home mockup" },
        { name: "logo.png", content: `data:image/png;base64,${png}`, imageDescription: "logo" },
      ],
      secrets: [
        { secretName: "STRIPE_API_KEY", secretValue: "sk_super_secret_value", environment: "production" },
        { secretName: "OTHER", secretValue: "other_secret_value" },
      ],
      figma: { token },
    });
    expect(r.status, r.text).toBe(200);
    expect(r.text).not.toContain("sk_super_secret_value");
    expect(r.text).not.toContain("other_secret_value");
    expect(r.text).not.toContain(token);
    const d = r.body.data;
    expect(d).toMatchObject({
      projectId: "launch-one",
      description: "Todos",
      plan: "api",
      label: "Todo",
      groupId: "grp_marketing",
      creditLimits: { maxDevelopmentCreditsPerMonth: 80, maxInfrastructureCreditsPerMonth: 250 },
      agent: { started: true, status: "init" },
      warnings: [],
    });
    expect(d.requestedProjectId).toBeUndefined();
    expect(d.files[0]).toEqual({
      name: "mock.png",
      imageDescription: "home mockup",
      url: "https://example.com/mock.png",
    });
    expect(d.files[1].imageDescription).toBe("logo");
    expect(d.files[1].url).toMatch(/^https:\/\/files\.sandbox-apps\.example\/launch-one\/.+signature=/);
    expect(d.secrets.map((s: Any) => Object.keys(s).sort())).toEqual([
      ["_id", "environment", "secretName"],
      ["_id", "environment", "secretName"],
    ]);
    expect(d.secrets[1].environment).toBe("both");
    expect(d.figma.connected).toBe(true);
    expect(Object.keys(d.figma.account).sort()).toEqual(["email", "handle", "id", "imgUrl"]);
    expect(d.design).toBeUndefined();
    expect(d.agent.warnings).toHaveLength(2);
    expect(d.agent.warnings.join(" ")).toMatch(/effort/);
    expect(d.agent.warnings.join(" ")).toMatch(/fastMode/);
    // §1.7: the run's first 10 credits are taken at its start.
    expect(sim.balance().credits).toBe(500 - CREDIT_COSTS.CREATE_PROJECT - CREDIT_COSTS.UPLOAD_FILE - 10);
    expect(sim.storedSecretValue("launch-one", "STRIPE_API_KEY")).toBe("sk_super_secret_value");

    const again = await call("POST", "/projects/launch", { ...valid });
    expect(again.body.data).toMatchObject({
      projectId: expect.stringMatching(/^launch-one-[a-z0-9]{2}$/),
      requestedProjectId: "launch-one",
    });
    expect(again.body.data.label).toBeUndefined();
    expect(again.body.data.agent.warnings).toBeUndefined();
  });

  // §3: the balance (project, inline files and the run minimum) is judged before creation; the old
  // simulator created and charged the project with a balance of 1-5 and only warned about the agent.
  it("refuses a launch the balance cannot start the agent for, creating and charging nothing", async () => {
    const { sim, call, data, expectError } = await start();
    for (const credits of [0.5, 3, 5.9]) {
      sim.setCredits(0, credits);
      await expectError(call("POST", "/projects/launch", valid), 402, "INSUFFICIENT_CREDITS");
      expect(sim.project("launch-one")).toBeUndefined();
      expect(sim.balance().credits).toBe(credits);
    }
    sim.setCredits(0, 7);
    expect((await data("POST", "/projects/launch", valid)).agent.started).toBe(true);
  });

  it("creates the project without starting the agent when its development cap is below the run's start", async () => {
    const { data } = await start();
    const d = await data("POST", "/projects/launch", { ...valid, creditLimits: { maxDevelopmentCreditsPerMonth: 5 } });
    expect(d.agent.started).toBe(false);
    expect(d.warnings).toEqual([expect.objectContaining({ step: "agent", errorCode: "PROJECT_CREDIT_LIMIT_REACHED" })]);
    expect((await data("GET", "/projects/launch-one")).agentProcessStatus).toBe("idle");
  });
});

describe("agent runs", () => {
  it("stamps agent messages with the real time they were written, never ahead of the clock", async () => {
    const { clock, data, advance } = await start();
    await data("POST", "/projects", { projectId: "stamps" });
    await data("POST", "/projects/stamps/agent/start", { prompt: "Build a blog [minutes=5]" });
    advance(2.5);
    const status = await data("GET", "/projects/stamps/agent/status");
    const { conversation } = await data("GET", "/projects/stamps/agent/full-conversation");
    const stamps = [...status.realtimeConversation, ...conversation].map((m: Any) => Date.parse(m.createdAt));
    expect(stamps.length).toBeGreaterThan(4);
    // 2.5 simulated minutes are 30 real ms at this time scale: every message was written within them.
    for (const at of stamps) {
      expect(at).toBeGreaterThanOrEqual(T0);
      expect(at).toBeLessThanOrEqual(clock.t);
    }
    expect(Math.max(...stamps)).toBeGreaterThan(T0);
  });

  it("moves idle -> init -> done over simulated time, with messages, a version and a preview", async () => {
    const { sim, data, advance } = await start();
    await data("POST", "/projects", { projectId: "runner" });
    const before = await data("GET", "/projects/runner");
    const started = await data("POST", "/projects/runner/agent/start", { prompt: "Build a blog [minutes=5]" });
    expect(started).toMatchObject({ projectId: "runner", status: "init" });
    expect((await data("GET", "/projects/runner")).agentProcessStatus).toBe("init");

    advance(2.5);
    const mid = await data("GET", "/projects/runner/agent/status");
    expect(mid.status).toBe("init");
    expect(mid.creditsSpent).toBeGreaterThan(0);
    expect(mid.realtimeConversation.map((m: Any) => m.messageType)).toEqual([
      "regular",
      "starting",
      "building",
      "building",
    ]);

    advance(2.5);
    const done = await data("GET", "/projects/runner");
    expect(done.agentProcessStatus).toBe("done");
    expect(done.previewImageUrl).toMatch(/^https:\/\//);
    expect(done.lastModifiedAt > before.lastModifiedAt).toBe(true);
    const status = await data("GET", "/projects/runner/agent/status");
    const finished = status.realtimeConversation.at(-1);
    expect(finished).toMatchObject({ author: "agent", messageType: "finished" });
    expect(finished.gitDiffUrl).toContain(finished.versionId);
    expect(status.creditsSpent).toBeGreaterThanOrEqual(10);
    expect(status.creditsSpent).toBeLessThanOrEqual(40);
    expect(done.totalCreditsSpent).toBe(1 + status.creditsSpent);
    expect(sim.balance().credits).toBe(500 - 1 - status.creditsSpent);

    const versions = await data("GET", "/projects/runner/versions");
    expect(versions.totalCount).toBe(2);
    expect(versions.versions[0]).toMatchObject({ _id: finished.versionId, prompt: "Build a blog [minutes=5]" });

    const full = await data("GET", "/projects/runner/agent/full-conversation");
    expect(full.conversation[0]).toMatchObject({ author: "user", message: "Build a blog [minutes=5]" });
    expect((await data("GET", "/projects/runner/backend/dev/logs")).logs).toMatch(/Compiled successfully/);
  });

  it("follows the real clock when none is injected", async () => {
    const { data } = await start({ now: Date.now, timeScale: 600_000 });
    await data("POST", "/projects", { projectId: "realtime" });
    await data("POST", "/projects/realtime/agent/start", { prompt: "Tiny [minutes=1]" });
    await new Promise((r) => setTimeout(r, 50));
    expect((await data("GET", "/projects/realtime")).agentProcessStatus).toBe("done");
  });

  // Reference §1.7 (replaces charging as the run goes): 10 taken at the start, refunded on failure.
  it("refunds a [fail] run", async () => {
    const { sim, data, advance } = await start();
    await data("POST", "/projects/launch", { projectId: "fails", prompt: "Broken [fail] [minutes=5]" });
    expect(sim.balance().credits).toBe(489);
    advance(4.5);
    expect(sim.balance().credits).toBe(489);
    advance(1);
    const status = await data("GET", "/projects/fails/agent/status");
    expect(status.status).toBe("done");
    expect(status.creditsSpent).toBe(0);
    expect(status.realtimeConversation.at(-1).messageType).toBe("error");
    expect(sim.balance().credits).toBe(499);
    expect((await data("GET", "/projects/fails")).totalCreditsSpent).toBe(1);
  });

  // Reference §17 (replaces a run stopped with limit-reached at the cap): at the cap agent/start is
  // refused with 403 (launch: a warning of step agent); a run that started finishes, billed up to the cap.
  it("refuses a run over the project's development credit cap, and bills a started run up to it", async () => {
    const { call, data, advance, expectError } = await start();
    const refused = await data("POST", "/projects/launch", {
      projectId: "capped",
      prompt: "Big app [minutes=5]",
      creditLimits: { maxDevelopmentCreditsPerMonth: 3 },
    });
    expect(refused.agent.started).toBe(false);
    expect(refused.warnings).toEqual([
      expect.objectContaining({ step: "agent", errorCode: "PROJECT_CREDIT_LIMIT_REACHED" }),
    ]);
    await expectError(
      call("POST", "/projects/capped/agent/start", { prompt: "again" }),
      403,
      "PROJECT_CREDIT_LIMIT_REACHED",
    );

    await data("POST", "/projects/launch", {
      projectId: "capped-two",
      prompt: "Big app [minutes=5]",
      creditLimits: { maxDevelopmentCreditsPerMonth: 12 },
    });
    advance(5);
    const status = await data("GET", "/projects/capped-two/agent/status");
    expect(status.realtimeConversation.at(-1).messageType).toBe("finished");
    expect((await data("GET", "/projects/capped-two")).totalCreditsSpent).toBe(12);
  });

  it("bills a run that outlasts its time budget a flat 60, or 50 on a low balance, with limit-reached", async () => {
    const { sim, data, advance } = await start({ runBudgetMinutes: 30 });
    await data("POST", "/projects/launch", { projectId: "endless", prompt: "Forever [minutes=500]" });
    expect(sim.balance().credits).toBe(489);
    advance(30);
    const status = await data("GET", "/projects/endless/agent/status");
    expect(status).toMatchObject({ status: "done", creditsSpent: 60 });
    expect(status.realtimeConversation.at(-1)).toMatchObject({
      messageType: "limit-reached",
      message: expect.stringMatching(/time limit \(30 minutes\)/),
    });
    expect(sim.balance().credits).toBe(439);
    expect((await data("GET", "/projects/endless/versions")).totalCount).toBe(1);

    sim.setCredits(0, 40);
    await data("POST", "/projects/endless/agent/start", { prompt: "Forever again [minutes=500]" });
    advance(30);
    expect((await data("GET", "/projects/endless/agent/status")).creditsSpent).toBe(50);
    // 10 of the 40 at the start; of the other 40 billed only 30 remain: the shortfall is absorbed
    expect(sim.balance().credits).toBe(0);
  });

  it("asks for secrets with [secrets]", async () => {
    const { data, advance } = await start();
    await data("POST", "/projects/launch", { projectId: "needs-keys", prompt: "Checkout [secrets] [minutes=5]" });
    advance(5);
    const { conversation } = await data("GET", "/projects/needs-keys/agent/full-conversation");
    const asking = conversation.find((m: Any) => m.secretKeysNeeded);
    expect(asking.secretKeysNeeded.STRIPE_API_KEY).toMatchObject({ isProvided: false });
  });

  it("answers 409 while running, stops, and checks prompt and credits", async () => {
    const { sim, call, data, expectError } = await start();
    await data("POST", "/projects/launch", { projectId: "busy-one", prompt: "Long [minutes=30]" });
    await expectError(call("POST", "/projects/busy-one/agent/start", { prompt: "more" }), 409, "AGENT_RUNNING");
    await expectError(call("POST", "/projects/busy-one/deployments/deploy", {}), 409, "AGENT_RUNNING");
    // Reference §4 (replaces 409 AGENT_NOT_RUNNING and a status answer): {message}, then 400 NO_PROCESS_RUNNING.
    expect(await data("POST", "/projects/busy-one/agent/stop", {})).toEqual({ message: "Agent stop signal sent" });
    expect((await data("GET", "/projects/busy-one")).agentProcessStatus).toBe("done");
    await expectError(call("POST", "/projects/busy-one/agent/stop", {}), 400, "NO_PROCESS_RUNNING");
    await expectError(call("POST", "/projects/busy-one/agent/start", { prompt: "" }), 400, "MISSING_PROMPT");
    sim.setCredits(0, 4);
    await expectError(call("POST", "/projects/busy-one/agent/start", { prompt: "again" }), 402, "INSUFFICIENT_CREDITS");
  });
});

describe("deployments, recovery, import", () => {
  it("answers SERVER_NOT_READY and starts an archived server, then deploys", async () => {
    const { sim, call, data, advance, expectError } = await start();
    await expectError(call("POST", "/projects/empty-sandbox/deployments/deploy", {}), 409, "SERVER_NOT_READY");
    expect(sim.balance().credits).toBe(500 - CREDIT_COSTS.START_SERVER);
    expect((await data("GET", "/projects/empty-sandbox")).agentServerStatus).toBe("Starting");
    // §1.6, §1.8, T7: every SERVER_NOT_READY answer costs START_SERVER, a server already starting too.
    await expectError(call("POST", "/projects/empty-sandbox/deployments/deploy", {}), 409, "SERVER_NOT_READY");
    expect(sim.balance().credits).toBe(494);
    // Reference §5 ([RC]): a never-published project reads {status: null, createdAt: null}.
    expect(await data("GET", "/projects/empty-sandbox/deployments/status")).toEqual({
      projectId: "empty-sandbox",
      status: null,
      createdAt: null,
    });

    advance(1);
    expect(await data("POST", "/projects/empty-sandbox/deployments/deploy", {})).toMatchObject({ status: "deploying" });
    expect(sim.balance().credits).toBe(493);
    await expectError(call("POST", "/projects/empty-sandbox/deployments/deploy", {}), 409, "DEPLOYMENT_RUNNING");
    await expectError(call("POST", "/projects/empty-sandbox/agent/start", { prompt: "x" }), 409, "DEPLOYMENT_RUNNING");
    advance(3);
    const status = await data("GET", "/projects/empty-sandbox/deployments/status");
    const { versions } = await data("GET", "/projects/empty-sandbox/versions");
    expect(status).toMatchObject({ status: "success", versionId: versions[0]._id });
    expect((await data("GET", "/projects/empty-sandbox")).deployment.status).toBe("success");
  });

  it("ends a [deploy-fail] deployment in error", async () => {
    const { data, advance } = await start();
    await data("POST", "/projects/launch", { projectId: "bad-deploy", prompt: "App [deploy-fail] [minutes=5]" });
    advance(5);
    await data("POST", "/projects/bad-deploy/deployments/deploy", {});
    advance(3);
    expect((await data("GET", "/projects/bad-deploy/deployments/status")).status).toBe("error");
  });

  it("recovers versions, with conflicts, unknown ids and [recover-fail]", async () => {
    const { sim, call, data, advance, expectError } = await start();
    const { versions, totalCount } = await data("GET", "/projects/acme-storefront/versions?limit=2&skip=1");
    expect(versions).toHaveLength(2);
    expect(totalCount).toBe(4);
    await expectError(call("POST", "/projects/acme-storefront/versions/nope/recover", {}), 404, "VERSION_NOT_FOUND");
    await data("POST", `/projects/acme-storefront/versions/${versions[0]._id}/recover`, {});
    expect(sim.balance().credits).toBe(500 - CREDIT_COSTS.RECOVER_VERSION);
    expect((await data("GET", "/projects/acme-storefront")).versionRecovery).toMatchObject({
      status: "recovering",
      versionId: versions[0]._id,
    });
    await expectError(
      call("POST", `/projects/acme-storefront/versions/${versions[0]._id}/recover`, {}),
      409,
      "RECOVERY_RUNNING",
    );
    await expectError(call("POST", "/projects/acme-storefront/agent/start", { prompt: "x" }), 409, "RECOVERY_RUNNING");
    advance(2);
    expect((await data("GET", "/projects/acme-storefront")).versionRecovery).toBeNull();
    expect((await data("GET", "/projects/acme-storefront/versions")).totalCount).toBe(5);

    await data("POST", "/projects/launch", { projectId: "bad-recover", prompt: "Site [recover-fail] [minutes=5]" });
    advance(5);
    const latest = (await data("GET", "/projects/bad-recover/versions")).versions[0];
    await data("POST", `/projects/bad-recover/versions/${latest._id}/recover`, {});
    advance(2);
    const recovery = (await data("GET", "/projects/bad-recover")).versionRecovery;
    expect(recovery).toMatchObject({ status: "error", versionId: latest._id });
    expect(recovery.errorMessage).toEqual(expect.any(String));
  });

  it("reports imports started through startImport until they end or go stale", async () => {
    const { sim, call, data, advance, expectError } = await start();
    sim.startImport("spring-campaign");
    expect((await data("GET", "/projects/spring-campaign")).importInProgress).toEqual({
      startedAt: expect.any(String),
    });
    // Reference §1.6/§4: prompting during an import answers IMPORT_IN_PROGRESS (was our IMPORT_RUNNING).
    await expectError(
      call("POST", "/projects/spring-campaign/agent/start", { prompt: "x" }),
      409,
      "IMPORT_IN_PROGRESS",
    );
    advance(4);
    expect((await data("GET", "/projects/spring-campaign")).importInProgress).toBeNull();

    sim.startImport("spring-campaign", { fail: true });
    advance(2.5);
    expect((await data("GET", "/projects/spring-campaign")).importInProgress.errorMessage).toEqual(expect.any(String));
    advance(2);
    expect((await data("GET", "/projects/spring-campaign")).importInProgress).toBeNull();

    sim.startImport("spring-campaign", { stuck: true });
    advance(29);
    expect((await data("GET", "/projects/spring-campaign")).importInProgress).not.toBeNull();
    advance(2);
    expect((await data("GET", "/projects/spring-campaign")).importInProgress).toBeNull();
  });
});

describe("secrets, domain, database, demo data", () => {
  it("stores secrets without returning values", async () => {
    const { sim, call, data, expectError } = await start();
    const s = await data("POST", "/projects/booking-app/secrets", { secretName: "API_TOKEN", secretValue: "v1" });
    expect(s).toEqual({
      _id: expect.any(String),
      secretName: "API_TOKEN",
      environment: "both",
      createdAt: expect.any(String),
    });
    // Reference §8 (replaces update by name): no update endpoint; a second POST creates a second secret.
    const s2 = await data("POST", "/projects/booking-app/secrets", {
      secretName: "API_TOKEN",
      secretValue: "v2",
      environment: "development",
    });
    expect(s2._id).not.toBe(s._id);
    expect(
      (await data("GET", "/projects/booking-app")).secrets.filter((x: Any) => x.secretName === "API_TOKEN"),
    ).toHaveLength(2);
    expect(sim.storedSecretValue("booking-app", "API_TOKEN")).toBe("v2");
    const details = await call("GET", "/projects/internal-dashboard");
    expect(details.body.data.secrets).toHaveLength(2);
    expect(details.text).not.toContain("secretValue");
    await expectError(call("POST", "/projects/booking-app/secrets", { secretName: "X" }), 400, "MISSING_SECRET_FIELDS");
    await expectError(
      call("POST", "/projects/booking-app/secrets", { secretName: "X", secretValue: "y", environment: "qa" }),
      400,
      "INVALID_SECRET_ENVIRONMENT",
    );
    expect(await data("DELETE", `/projects/booking-app/secrets/${s2._id}`)).toEqual({ success: true });
    expect(sim.storedSecretValue("booking-app", "API_TOKEN")).toBe("v1");
    await data("DELETE", `/projects/booking-app/secrets/${s._id}`);
    expect(sim.storedSecretValue("booking-app", "API_TOKEN")).toBeUndefined();
    await expectError(call("DELETE", `/projects/booking-app/secrets/${s._id}`), 404, "SECRET_NOT_FOUND");
  });

  // §9: the old simulator accepted (and charged) a domain on a never-deployed project and an apex
  // hostname, named the DNS record by the full hostname with no TXT record, and answered DELETE with
  // an invented 404 DOMAIN_NOT_FOUND.
  it("adds a custom domain only after a successful deployment, with zone-relative CNAME and TXT records", async () => {
    const { sim, call, data, advance, expectError } = await start();
    await expectError(call("PUT", "/projects/spring-campaign/domain", {}), 400, "MISSING_HOSTNAME");
    await expectError(
      call("PUT", "/projects/spring-campaign/domain", { hostname: "not a host" }),
      400,
      "INVALID_HOSTNAME",
    );
    await expectError(
      call("PUT", "/projects/spring-campaign/domain", { hostname: "example.com" }),
      400,
      "INVALID_HOSTNAME",
    );
    await expectError(
      call("PUT", "/projects/spring-campaign/domain", { hostname: "spring.example.com" }),
      404,
      "NO_DEPLOYMENT",
    );
    await expectError(call("DELETE", "/projects/spring-campaign/domain"), 404, "NO_DEPLOYMENT");
    expect(sim.balance().credits).toBe(500);
    expect((await data("GET", "/projects/spring-campaign")).customDomain).toBeNull();

    await data("POST", "/projects/spring-campaign/deployments/deploy", {});
    advance(3);
    const domain = await data("PUT", "/projects/spring-campaign/domain", { hostname: "Spring.Example.com" });
    expect(domain).toEqual({
      success: true,
      hostname: "spring.example.com",
      status: "pending_validation",
      dnsRecordsToAdd: [
        { type: "CNAME", name: "spring", value: "spring-campaign.sandbox-apps.example" },
        { type: "TXT", name: "_cf-custom-hostname.spring", value: expect.stringMatching(/^[0-9a-f]{32}$/) },
      ],
    });
    expect(sim.balance().credits).toBe(500 - CREDIT_COSTS.CREATE_DEPLOYMENT - CREDIT_COSTS.ADD_CUSTOM_DOMAIN);
    expect((await data("GET", "/projects/spring-campaign")).productionProjectUrl).toBe(
      "spring-campaign.sandbox-apps.example",
    );
    advance(10);
    const details = await data("GET", "/projects/spring-campaign");
    expect(details.customDomain).toMatchObject({ status: "active", sslStatus: "active" });
    // §3: the details name the active custom domain; the list keeps the canonical host.
    expect(details.productionProjectUrl).toBe("spring.example.com");
    expect((await data("GET", "/projects?search=spring-campaign"))[0].productionProjectUrl).toBe(
      "spring-campaign.sandbox-apps.example",
    );
    expect(await data("DELETE", "/projects/spring-campaign/domain")).toEqual({ message: "Custom domain removed" });
    expect(await data("DELETE", "/projects/spring-campaign/domain")).toEqual({ message: "Custom domain removed" });
  });

  // §4 [RC]: isProvided is practically always false; the old simulator computed it from the current secrets.
  it("never marks a needed secret provided, even once it is set", async () => {
    const { data, advance } = await start();
    await data("POST", "/projects/launch", {
      projectId: "has-key",
      prompt: "Checkout [secrets] [minutes=5]",
      secrets: [{ secretName: "STRIPE_API_KEY", secretValue: "sk_test_x" }],
    });
    advance(5);
    const { conversation } = await data("GET", "/projects/has-key/agent/full-conversation");
    expect(conversation.find((m: Any) => m.secretKeysNeeded).secretKeysNeeded.STRIPE_API_KEY).toMatchObject({
      isProvided: false,
    });
  });

  // §7, T2: the old recovered version had no recoveredVersionId, so the second completion signal was missing.
  it("marks the version a recovery makes with recoveredVersionId", async () => {
    const { data, advance } = await start();
    const { versions } = await data("GET", "/projects/acme-storefront/versions");
    const target = versions[1]._id;
    await data("POST", `/projects/acme-storefront/versions/${target}/recover`, {});
    advance(3);
    const after = await data("GET", "/projects/acme-storefront/versions");
    expect(after.totalCount).toBe(versions.length + 1);
    expect(after.versions.find((v: Any) => v.recoveredVersionId === target)).toMatchObject({
      commitSha: expect.stringMatching(/^[0-9a-f]{40}$/),
    });
  });

  // §3, T10: the old simulator always set temporalDevelopmentProjectUrl and never cachedDevelopmentUrl.
  it("has no live preview before the server first started, and names the cached one while it sleeps", async () => {
    const { data, advance } = await start();
    await data("POST", "/projects", { projectId: "fresh-one" });
    expect(await data("GET", "/projects/fresh-one")).toMatchObject({
      temporalDevelopmentProjectUrl: "",
      cachedDevelopmentUrl: "",
    });
    advance(2);
    expect(await data("GET", "/projects/fresh-one")).toMatchObject({
      temporalDevelopmentProjectUrl: "https://fresh-one.dev.sandbox-apps.example",
      developmentUrlFieldToUse: "temporalDevelopmentProjectUrl",
    });
    expect(await data("GET", "/projects/empty-sandbox")).toMatchObject({
      agentServerStatus: "Archived",
      developmentUrlFieldToUse: "cachedDevelopmentUrl",
      cachedDevelopmentUrl: expect.stringMatching(/^https:\/\//),
    });
  });

  // §10: the old simulator matched only exact values (an operator filter gave 0 rows), had no
  // _count, _select or _aggregate, and listed properties as an array with type "relation".
  it("queries with the documented _filter operators, _or, _count, _select, _omit and _aggregate", async () => {
    const { data, call, expectError } = await start();
    const q = (queryOptions: Any, tableName = "orders") =>
      data("POST", "/projects/acme-storefront/database/query", { tableName, queryOptions });
    const { results: all } = await q({ _limit: 1000 });
    const big = all.filter((r: Any) => r.total >= 100);
    expect(big.length).toBeGreaterThan(0);
    expect((await q({ _filter: { total: { gte: 100 } }, _limit: 1000 })).results).toHaveLength(big.length);
    expect((await q({ _filter: { total: { gte: 100, lt: 200 } }, _limit: 1000 })).results).toHaveLength(
      big.filter((r: Any) => r.total < 200).length,
    );
    expect((await q({ _filter: { status: { in: ["paid", "shipped"] } }, _limit: 1000 })).results).toHaveLength(12);
    expect(
      (await q({ _filter: { _or: [{ status: "paid" }, { status: "refunded" }] }, _limit: 1000 })).results,
    ).toHaveLength(12);
    expect(
      (await q({ _filter: { name: { startsWith: "ana" } } }, "customers")).results.map((r: Any) => r.name),
    ).toEqual(["Ana Lopez", "Ana Smith", "Ana Novak"]);
    expect((await q({ _filter: { email: { regex: "^EMMA", options: "i" } } }, "customers")).results).toHaveLength(3);
    expect(await q({ _filter: { status: "paid" }, _count: true, _limit: 2 })).toMatchObject({
      _count: { _total: 6 },
      results: [expect.anything(), expect.anything()],
    });
    expect(Object.keys((await q({ _select: { total: true }, _limit: 1 })).results[0]).sort()).toEqual(["_id", "total"]);
    expect((await q({ _omit: { customer: true }, _limit: 1 })).results[0].customer).toBeUndefined();
    const sum = all.reduce((n: number, r: Any) => n + r.total, 0);
    expect((await q({ _aggregate: { _sum: { total: true }, _count: true } })).aggregations).toEqual({
      _sum: { total: Math.round(sum * 1000) / 1000 },
      _count: 30,
    });
    expect((await q({ _aggregate: { _count: true }, _groupBy: "status" })).aggregations).toHaveLength(5);
    await expectError(
      call("POST", "/projects/acme-storefront/database/query", {
        tableName: "orders",
        queryOptions: { _filter: { total: { between: 1 } } },
      }),
      400,
      "INVALID_QUERY_OPTIONS",
    );

    const { tables } = await data("GET", "/projects/acme-storefront/database/tables-structure");
    const orders = tables.find((t: Any) => t.type === "orders");
    expect(Array.isArray(orders.properties)).toBe(false);
    expect(orders.properties.customer).toMatchObject({
      name: "customer",
      propertyType: "objectReference",
      objectReference: { objectReferenceRelation: "manyToOne" },
    });
    expect(orders.properties.total).toMatchObject({ id: expect.any(String), propertyType: "number" });
  });

  it("serves demo data: a deployed project with domain, tables and queries", async () => {
    const { call, data, expectError } = await start();
    const acme = await data("GET", "/projects/acme-storefront");
    expect(acme).toMatchObject({
      agentProcessStatus: "done",
      agentServerStatus: "Active",
      deployment: { status: "success" },
      customDomain: { hostname: "shop.acme-demo.com", status: "active" },
    });
    expect(acme.previewImageUrl).toEqual(expect.any(String));
    expect((await data("GET", "/projects/booking-app")).deployment.status).toBe("error");

    const { tables } = await data("GET", "/projects/acme-storefront/database/tables-structure");
    expect(tables.map((t: Any) => t.type)).toEqual(["customers", "orders"]);
    const all = await data("POST", "/projects/acme-storefront/database/query", {
      tableName: "customers",
      queryOptions: { _limit: 100 },
    });
    expect(all.results).toHaveLength(30);
    const page = await data("POST", "/projects/acme-storefront/database/query", {
      tableName: "orders",
      queryOptions: { _filter: { status: "paid" }, _sort: { total: "desc" }, _limit: 2, _offset: 1 },
    });
    expect(page.results).toHaveLength(2);
    expect(page.results.every((r: Any) => r.status === "paid")).toBe(true);
    expect(page.results[0].total).toBeGreaterThanOrEqual(page.results[1].total);
    await expectError(
      call("POST", "/projects/acme-storefront/database/query", { tableName: "nope" }),
      404,
      "TABLE_NOT_FOUND",
    );

    await data("DELETE", "/projects/booking-app");
    await expectError(call("GET", "/projects/booking-app"), 404, "PROJECT_NOT_FOUND");
  });
});

describe("list projects", () => {
  const ids = (items: Any[]) => items.map((p) => p.projectId);

  it("lists newest first with list item fields", async () => {
    const { data } = await start();
    const items = await data("GET", "/projects");
    expect(ids(items)).toEqual([
      "booking-app",
      "internal-dashboard",
      "spring-campaign",
      "empty-sandbox",
      "acme-storefront",
    ]);
    expect(Object.keys(items[4]).sort()).toEqual(
      [
        "createdAt",
        "description",
        "label",
        "lastModifiedAt",
        "plan",
        "previewImageUrl",
        "productionProjectUrl",
        "projectId",
      ].sort(),
    );
    expect(items[3].previewImageUrl).toBeUndefined();
    expect(items[3].label).toBeUndefined();
  });

  it.each(["limit=0", "limit=abc", "skip=-1", "createdFrom=yesterday"])("rejects %s", async (q) => {
    const { call, expectError } = await start();
    await expectError(call("GET", `/projects?${q}`), 400, "LIST_PROJECTS_ERROR");
  });

  it.each([
    ["limit=2&skip=1", ["internal-dashboard", "spring-campaign"]],
    ["search=SALON", ["booking-app"]],
    ["search=acme", ["acme-storefront"]],
    ["sortDirection=asc&limit=2", ["acme-storefront", "empty-sandbox"]],
    ["sortField=bogus&limit=1", ["booking-app"]],
    ["sortField=lastModified&sortDirection=asc&limit=1", ["empty-sandbox"]],
    ["groupId=none", ["booking-app", "empty-sandbox", "acme-storefront"]],
    ["groupId=grp_marketing", ["spring-campaign"]],
    ["createdFrom=2025-04-01&createdTo=2025-04-01", ["empty-sandbox"]],
    ["createdFrom=2025-05-26T12:00:00.000Z", ["booking-app", "internal-dashboard"]],
    ["createdFrom=2025-05-26T12:00:00.001Z", ["booking-app"]],
    ["createdTo=2025-02-15", ["acme-storefront"]],
    ["createdTo=2025-02-14", []],
  ])("%s", async (q, expected) => {
    const { data } = await start();
    expect(ids(await data("GET", `/projects?${q}`))).toEqual(expected);
  });
});
