import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { BuildSimulator, type BuildSimulatorOptions } from "../../src/sandbox/simulators/builder/index.js";

/**
 * The build simulator where the reference's traps live (§1.4, §19 T2-T6), its paging headers,
 * ids, error details and multi-prompt batches. The clock is injected: `real(ms)` moves real time,
 * `sim(minutes)` simulated time (TIME_SCALE 60: one real second is one simulated minute).
 */

const KEY = "tlm_sk_test_key_0123456789";
const T0 = Date.UTC(2025, 5, 15, 12, 0, 0);
const TIME_SCALE = 60;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

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
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(base + path, {
      method,
      headers: { "api-key": KEY, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined, text };
  };
  const data = async (method: string, path: string, body?: unknown) => {
    const r = await call(method, path, body);
    expect(r.status, r.text).toBe(200);
    return r.body.data;
  };
  const error = async (method: string, path: string, body?: unknown) => {
    const r = await call(method, path, body);
    expect(r.body.data, r.text).toBeNull();
    return { status: r.status, ...r.body.errors };
  };
  return {
    sim,
    call,
    data,
    error,
    real: (ms: number) => void (clock.t += ms),
    sim_: (minutes: number) => void (clock.t += (minutes * 60_000) / (options.timeScale ?? TIME_SCALE)),
  };
}

describe("stale reads (§1.4, T2, T4, T5)", () => {
  it("serves the details from a cache for detailsCacheMs real ms; PATCH discards it, nothing else does", async () => {
    const { data, real } = await start({ detailsCacheMs: 2000 });
    const first = await data("GET", "/projects/spring-campaign");
    await data("POST", "/projects/spring-campaign/secrets", { secretName: "NEW_ONE", secretValue: "v" });
    real(1500);
    expect((await data("GET", "/projects/spring-campaign")).secrets).toEqual(first.secrets);
    real(600);
    expect((await data("GET", "/projects/spring-campaign")).secrets.map((s: Any) => s.secretName)).toContain("NEW_ONE");

    await data("PATCH", "/projects/spring-campaign", { label: "Renamed" });
    expect((await data("GET", "/projects/spring-campaign")).label).toBe("Renamed");
  });

  it("shows the previous deployment for startLagMs after a deploy, in deployments/status and the details", async () => {
    const { data, real } = await start({ startLagMs: 500 });
    const before = await data("GET", "/projects/acme-storefront/deployments/status");
    expect(before.status).toBe("success");
    expect(await data("POST", "/projects/acme-storefront/deployments/deploy")).toMatchObject({ status: "deploying" });
    real(100);
    expect(await data("GET", "/projects/acme-storefront/deployments/status")).toEqual(before);
    expect((await data("GET", "/projects/acme-storefront")).deployment).toMatchObject({
      status: "success",
      createdAt: before.createdAt,
    });
    real(500);
    expect((await data("GET", "/projects/acme-storefront/deployments/status")).status).toBe("deploying");
    real(3000); // the deployment takes 3 simulated minutes
    const after = await data("GET", "/projects/acme-storefront/deployments/status");
    expect(after.status).toBe("success");
    expect(after.createdAt > before.createdAt).toBe(true);
  });

  it("shows no recovery or import lock for startLagMs after the call", async () => {
    const { sim, data, real } = await start({ startLagMs: 500 });
    const { versions } = await data("GET", "/projects/acme-storefront/versions");
    await data("POST", `/projects/acme-storefront/versions/${versions[1]._id}/recover`);
    expect((await data("GET", "/projects/acme-storefront")).versionRecovery).toBeNull();
    real(600);
    expect((await data("GET", "/projects/acme-storefront")).versionRecovery).toMatchObject({ status: "recovering" });

    sim.startImport("spring-campaign");
    expect((await data("GET", "/projects/spring-campaign")).importInProgress).toBeNull();
    real(600);
    expect((await data("GET", "/projects/spring-campaign")).importInProgress).toEqual({
      startedAt: expect.any(String),
    });
    real(4000);
    expect(await data("GET", "/projects/spring-campaign")).toMatchObject({
      importInProgress: null,
      agentServerStatus: "Active",
      previewImageUrl: expect.any(String),
    });
  });

  it("start-or-restart of an Active server: startLagMs still reads Active, then Starting, then Active", async () => {
    const { sim, data, error, real } = await start({ startLagMs: 500 });
    expect(await data("POST", "/projects/acme-storefront/agent/server/start-or-restart")).toEqual({
      message: "Server start/restart initiated",
      status: "starting",
    });
    expect(sim.balance().credits).toBe(497);
    expect((await data("GET", "/projects/acme-storefront")).agentServerStatus).toBe("Active");
    real(600);
    expect((await data("GET", "/projects/acme-storefront")).agentServerStatus).toBe("Starting");
    real(1000);
    expect((await data("GET", "/projects/acme-storefront")).agentServerStatus).toBe("Active");

    await data("POST", "/projects/acme-storefront/agent/start", { prompt: "More [minutes=5]" });
    expect(await error("POST", "/projects/acme-storefront/agent/server/start-or-restart")).toMatchObject({
      status: 409,
      errorCode: "AGENT_RUNNING",
    });
  });
});

describe("sleeping servers, unreachable apps, plan limits", () => {
  it("recover on a sleeping server charges START_SERVER, starts it and answers SERVER_NOT_READY", async () => {
    const { sim, data, error, sim_ } = await start();
    const { versions } = await data("GET", "/projects/empty-sandbox/versions");
    expect(await error("POST", `/projects/empty-sandbox/versions/${versions[0]._id}/recover`)).toMatchObject({
      status: 409,
      errorCode: "SERVER_NOT_READY",
    });
    expect(sim.balance().credits).toBe(497);
    expect((await data("GET", "/projects/empty-sandbox")).agentServerStatus).toBe("Starting");
    sim_(1);
    await data("POST", `/projects/empty-sandbox/versions/${versions[0]._id}/recover`);
    expect(sim.balance().credits).toBe(495);
  });

  it("answers SANDBOX_NOT_REACHABLE with errorDetails.reason, charging nothing", async () => {
    const { sim, data, error, sim_ } = await start();
    await data("POST", "/projects/acme-storefront/agent/start", { prompt: "Break the app [app-error] [minutes=1]" });
    sim_(1);
    const before = sim.balance().credits;
    expect(await error("POST", "/projects/acme-storefront/deployments/deploy")).toEqual({
      status: 409,
      errorCode: "SANDBOX_NOT_REACHABLE",
      errorMessage: expect.any(String),
      errorDetails: { reason: "app_error", httpStatus: 500 },
    });
    expect(sim.balance().credits).toBe(before);
    await data("POST", "/projects/acme-storefront/agent/start", { prompt: "Slow boot [app-starting] [minutes=1]" });
    sim_(1);
    const later = sim.balance().credits;
    expect((await error("POST", "/projects/acme-storefront/deployments/deploy")).errorDetails).toEqual({
      reason: "starting",
      httpStatus: 503,
    });
    expect(sim.balance().credits).toBe(later);
    expect(await data("POST", "/projects/acme-storefront/deployments/deploy")).toMatchObject({ status: "deploying" });
    expect(sim.balance().credits).toBe(later - 1);
  });

  it("gives MAX_PROJECTS_REACHED its errorDetails", async () => {
    const { error } = await start({ maxProjects: 5 });
    expect(await error("POST", "/projects", { projectId: "one-too-many" })).toMatchObject({
      status: 403,
      errorCode: "MAX_PROJECTS_REACHED",
      errorDetails: { maxProjects: 5, projectsUsed: 5, plan: null, upgradePlan: null },
    });
    const starter = await start({ maxProjects: 2 });
    expect(
      (await starter.error("POST", "/projects/launch", { projectId: "one-too-many", prompt: "x" })).errorDetails,
    ).toEqual({
      maxProjects: 2,
      projectsUsed: 5,
      plan: "free",
      upgradePlan: "starter",
    });
  });
});

describe("paging", () => {
  it("sends X-Total-Count, X-Limit, X-Skip, X-Has-More and clamps limit to 100", async () => {
    const { call } = await start();
    const page = await call("GET", "/projects?limit=2&skip=1");
    expect(page.body.data).toHaveLength(2);
    expect(
      Object.fromEntries(["x-total-count", "x-limit", "x-skip", "x-has-more"].map((h) => [h, page.headers.get(h)])),
    ).toEqual({
      "x-total-count": "5",
      "x-limit": "2",
      "x-skip": "1",
      "x-has-more": "true",
    });
    const big = await call("GET", "/projects?limit=500&skip=3");
    expect(big.status).toBe(200);
    expect(big.body.data).toHaveLength(2);
    expect([big.headers.get("x-limit"), big.headers.get("x-has-more")]).toEqual(["100", "false"]);
  });

  it("pages versions 20 at a time by default", async () => {
    const { sim, data, sim_ } = await start();
    for (let i = 0; i < 22; i++) {
      await data("POST", "/projects/booking-app/agent/start", { prompt: `Change ${i} [minutes=1]` });
      sim_(1);
    }
    expect(sim.project("booking-app")!.versions.length).toBeGreaterThan(20);
    const page = await data("GET", "/projects/booking-app/versions");
    expect(page.versions).toHaveLength(20);
    expect(page.totalCount).toBe(sim.project("booking-app")!.versions.length);
  });
});

describe("multi-prompt batches (§4, T6)", () => {
  it.each([
    [{ multiPrompt: {} }, 400, "INVALID_MULTI_PROMPT"],
    [{ multiPrompt: "yes" }, 400, "INVALID_MULTI_PROMPT"],
    [{ prompt: "goal", multiPrompt: { prompts: ["a"], letTotalumDecide: true } }, 400, "INVALID_MULTI_PROMPT"],
    [{ multiPrompt: { prompts: [] } }, 400, "INVALID_MULTI_PROMPT"],
    [{ multiPrompt: { letTotalumDecide: true } }, 400, "MISSING_PROMPT"],
    [{ multiPrompt: { prompts: Array.from({ length: 51 }, (_, i) => `p${i}`) } }, 400, "TOO_MANY_PROMPTS"],
    [{ multiPrompt: { prompts: ["ok", "  "] } }, 400, "INVALID_PROMPT_ITEM"],
    [{ multiPrompt: { prompts: ["ok", 3] } }, 400, "INVALID_PROMPT_ITEM"],
  ])("agent/start %j -> %i %s", async (body, status, code) => {
    const { sim, error } = await start();
    expect(await error("POST", "/projects/booking-app/agent/start", body)).toMatchObject({ status, errorCode: code });
    expect(sim.balance().credits).toBe(500);
  });

  it("runs the prompts in order, agent/status flipping init/done between them until multiPrompt is done", async () => {
    const { sim, data, error, sim_ } = await start();
    const started = await data("POST", "/projects/booking-app/agent/start", {
      multiPrompt: { prompts: ["One [minutes=2]", "Two [minutes=2]", "Three [minutes=2]"] },
    });
    expect(started).toMatchObject({
      status: "init",
      multiPrompt: { totalPrompts: 3 },
      message: expect.stringMatching(/hours/),
    });
    expect(await error("POST", "/projects/booking-app/agent/start", { prompt: "single" })).toMatchObject({
      status: 409,
      errorCode: "AUTO_EXECUTION_ALREADY_ACTIVE",
    });

    const seen: string[] = [];
    for (let minute = 0; minute <= 9; minute++) {
      const s = await data("GET", "/projects/booking-app/agent/status");
      seen.push(`${s.status}:${s.multiPrompt.status}:${s.multiPrompt.currentPromptIndex}`);
      sim_(1);
    }
    // prompt i runs 2 minutes, then 1 minute of `done` before the next one
    expect(seen).toEqual([
      "init:executing:0",
      "init:executing:0",
      "done:executing:0",
      "init:executing:1",
      "init:executing:1",
      "done:executing:1",
      "init:executing:2",
      "init:executing:2",
      "done:done:2",
      "done:done:2",
    ]);
    const status = await data("GET", "/projects/booking-app/agent/status");
    expect(status.multiPrompt.prompts.map((p: Any) => p.status)).toEqual(["done", "done", "done"]);
    expect(status.realtimeConversation.filter((m: Any) => m.author === "user").map((m: Any) => m.message)).toEqual([
      "One [minutes=2]",
      "Two [minutes=2]",
      "Three [minutes=2]",
    ]);
    expect((await data("GET", "/projects/booking-app")).multiPrompt).toMatchObject({ status: "done", totalPrompts: 3 });
    // every prompt billed as a run
    expect(500 - sim.balance().credits).toBeGreaterThanOrEqual(30);
  });

  it("plans the prompts from the goal with letTotalumDecide, and agent/stop cancels the batch", async () => {
    const { data, sim_ } = await start();
    const started = await data("POST", "/projects/booking-app/agent/start", {
      prompt: "A shop [prompts=4] [minutes=3]",
      multiPrompt: { letTotalumDecide: true },
    });
    expect(started.multiPrompt).toBeUndefined();
    const planning = await data("GET", "/projects/booking-app/agent/status");
    expect(planning.multiPrompt).toMatchObject({ status: "planning", totalPrompts: 0, currentPromptIndex: -1 });
    sim_(3);
    const running = await data("GET", "/projects/booking-app/agent/status");
    expect(running.multiPrompt).toMatchObject({ status: "executing", totalPrompts: 4, currentPromptIndex: 0 });
    expect(running.multiPrompt.prompts[0].prompt).toBe("Step 1 of 4: A shop [prompts=4] [minutes=3]");
    expect(await data("POST", "/projects/booking-app/agent/stop")).toEqual({ message: "Agent stop signal sent" });
    expect((await data("GET", "/projects/booking-app/agent/status")).multiPrompt).toMatchObject({
      status: "cancelled",
    });
  });
});
