// 2026-07-28 long-running work: the tasks extension (io.modelcontextprotocol/tasks, SEP-2663), the
// credit confirmation as an input_required round trip, over stateless HTTP.
import { createTaskSessionFromClient, resultFromTaskOutcome } from "@modelcontextprotocol/ext-tasks/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Sandbox } from "../../src/sandbox/index.js";
import {
  connectHttp,
  rpc2026,
  sandboxEnv,
  sleep,
  spawnHttpServer,
  testSandbox,
  until,
  type HttpServerProcess,
} from "../harness.js";

const TASKS = "io.modelcontextprotocol/tasks";
const API = "/api/v1/vcaas";

type Json = Record<string, any>;

/** One 2026-07-28 request with the tasks extension declared unless other capabilities are given. */
const rpc = (url: string, method: string, params: Json = {}, capabilities: Json = { extensions: { [TASKS]: {} } }) =>
  rpc2026(url, method, params, { capabilities });

describe("tasks extension over stateless HTTP", () => {
  let sandbox: Sandbox;
  let http: HttpServerProcess;

  beforeAll(async () => {
    sandbox = await testSandbox();
    http = await spawnHttpServer(sandboxEnv(sandbox, { BUILD_POLL_INTERVAL_MS: "50" }));
  });
  afterAll(async () => {
    await http?.stop();
    await sandbox?.close();
  });

  it("advertises the extension in server/discover", async () => {
    const { body } = await rpc(http.url, "server/discover");
    expect(body.result.capabilities.extensions).toHaveProperty([TASKS]);
    expect(body.result.capabilities).not.toHaveProperty("tasks");
  });

  it("answers build_wait with a task handle, then the live status line, then the result inline", async () => {
    await rpc(
      http.url,
      "tools/call",
      // Endless, stopped once the status line was seen: a 20-minute run (400 ms) could end, under load,
      // before the first tasks/get.
      { name: "build_start_agent", arguments: { projectId: "acme-storefront", prompt: "Blog [minutes=100000]" } },
      {},
    );
    const created = (
      await rpc(http.url, "tools/call", {
        name: "build_wait",
        arguments: { projectId: "acme-storefront", until: "agent" },
      })
    ).body.result;
    expect(created.resultType).toBe("task");
    expect(created).toMatchObject({ status: "working", pollIntervalMs: 50 });
    expect(typeof created.taskId).toBe("string");
    expect(created.ttlMs).toBeGreaterThan(0);
    const get = async () => (await rpc(http.url, "tasks/get", { taskId: created.taskId })).body.result;
    const live = await until(get, (t) => t.status !== "working" || /^Agent running · /.test(t.statusMessage ?? ""));
    expect(live.status).toBe("working");
    await rpc(http.url, "tools/call", { name: "build_stop_agent", arguments: { projectId: "acme-storefront" } }, {});
    const done = await until(get, (t) => t.status !== "working");
    expect(done.resultType).toBe("complete");
    expect(done.status).toBe("completed");
    expect(done.result.structuredContent).toMatchObject({ outcome: "done", until: "agent" });
  });

  it("blocks with progress for a client that did not declare the extension", async () => {
    const { body } = await rpc(
      http.url,
      "tools/call",
      { name: "build_wait", arguments: { projectId: "acme-storefront", until: "agent" } },
      {},
    );
    expect(body.result.resultType).toBe("complete");
    expect(body.result.structuredContent).toMatchObject({ until: "agent" });
  });

  it("refuses tasks/* to a request without the extension (-32021), an unknown task (-32602)", async () => {
    const missing = await rpc(http.url, "tasks/get", { taskId: "whatever" }, {});
    expect(missing.body.error.code).toBe(-32021);
    const unknown = await rpc(http.url, "tasks/get", { taskId: "no-such-task" });
    expect(unknown.body.error.code).toBe(-32602);
    expect(unknown.body.error.message).toMatch(/not found/i);
  });

  it("answers invalid arguments with the same field error as a plain call, and makes no task", async () => {
    const { body } = await rpc(http.url, "tools/call", {
      name: "build_wait",
      arguments: { projectId: "acme-storefront", until: "forever" },
    });
    expect(body.result.resultType).toBe("complete");
    expect(body.result.isError).toBe(true);
    expect(body.result.content[0].text).toMatch(/Invalid arguments for build_wait: until: /);
  });

  it("tasks/cancel stops following the work; tasks/update is acknowledged", async () => {
    await rpc(
      http.url,
      "tools/call",
      { name: "build_start_agent", arguments: { projectId: "booking-app", prompt: "Long one [minutes=40]" } },
      {},
    );
    const created = (
      await rpc(http.url, "tools/call", { name: "build_wait", arguments: { projectId: "booking-app", until: "agent" } })
    ).body.result;
    expect((await rpc(http.url, "tasks/update", { taskId: created.taskId, inputResponses: {} })).body.result).toEqual(
      expect.objectContaining({ resultType: "complete" }),
    );
    expect((await rpc(http.url, "tasks/cancel", { taskId: created.taskId })).body.result.resultType).toBe("complete");
    const after = (await rpc(http.url, "tasks/get", { taskId: created.taskId })).body.result;
    expect(after.status).toBe("cancelled");
    const polls = sandbox.build.router.count(`GET ${API}/projects/:projectId/agent/status`);
    await sleep(300);
    expect(sandbox.build.router.count(`GET ${API}/projects/:projectId/agent/status`)).toBe(polls);
  });

  it("a third-party task client (ext-tasks) drives a launch to its result and cancels another", async () => {
    const client = await connectHttp(http.url, {}, {}, "modern");
    const clientCapabilities = { extensions: { [TASKS]: {} } };
    const session = createTaskSessionFromClient(client, {
      endpointId: "switchboard-test",
      rawDispatch: async (request) => {
        const r = request as Json;
        const answer = await rpc(http.url, r.method, r.params ?? {}, clientCapabilities);
        return answer.body.error
          ? { kind: "error", error: answer.body.error }
          : { kind: "result", result: answer.body.result };
      },
      v2RequestFraming: {
        protocolVersion: "2026-07-28",
        clientInfo: { name: "raw-2026", version: "1.0.0" },
        clientCapabilities,
      },
    });
    try {
      const launch = await session.callTool("build_launch_project", {
        projectId: "ext-tasks-app",
        prompt: "Landing page [minutes=10]",
        wait: true,
      });
      const { outcome } = await launch.settle();
      const result = resultFromTaskOutcome(outcome) as Json;
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toMatchObject({ projectId: "ext-tasks-app", wait: { outcome: "done" } });

      await rpc(
        http.url,
        "tools/call",
        { name: "build_start_agent", arguments: { projectId: "ext-tasks-app", prompt: "Much more [minutes=40]" } },
        {},
      );
      const waiting = await session.callTool("build_wait", { projectId: "ext-tasks-app", until: "agent" });
      await sleep(200);
      await waiting.cancel();
      const settled = await waiting.settle().catch((err: Error) => err);
      expect(String((settled as Json).outcome?.status ?? settled)).toMatch(/cancel/i);
    } finally {
      await session.close();
      await client.close();
    }
  });
});

describe("credit confirmation as an input_required round trip", () => {
  let sandbox: Sandbox;
  let http: HttpServerProcess;
  const elicit = { elicitation: { form: {} } };

  beforeAll(async () => {
    sandbox = await testSandbox();
    http = await spawnHttpServer(sandboxEnv(sandbox));
  });
  afterAll(async () => {
    await http?.stop();
    await sandbox?.close();
  });

  const creates = () => sandbox.build.router.count(`POST ${API}/projects`);

  it("asks first, with a signed state; the retry with the answer spends once, a replay spends nothing", async () => {
    const before = creates();
    const first = (
      await rpc(http.url, "tools/call", { name: "build_create_project", arguments: { projectId: "mrtr-one" } }, elicit)
    ).body.result;
    expect(first.resultType).toBe("input_required");
    expect(first.inputRequests.confirm_spend.params.message).toMatch(
      /Create project mrtr-one: costs 1 credit \(CREATE_PROJECT 1\)/,
    );
    expect(typeof first.requestState).toBe("string");
    expect(creates()).toBe(before);

    const answer = { confirm_spend: { action: "accept", content: { confirm: true } } };
    const retry = (
      await rpc(
        http.url,
        "tools/call",
        {
          name: "build_create_project",
          arguments: { projectId: "mrtr-one" },
          inputResponses: answer,
          requestState: first.requestState,
        },
        elicit,
      )
    ).body.result;
    expect(retry.isError).toBeFalsy();
    expect(retry.structuredContent).toMatchObject({ projectId: "mrtr-one" });
    expect(creates()).toBe(before + 1);

    // Within the window the ledger answers the same call with the first one's outcome (issue 28).
    const again = (
      await rpc(
        http.url,
        "tools/call",
        {
          name: "build_create_project",
          arguments: { projectId: "mrtr-one" },
          inputResponses: answer,
          requestState: first.requestState,
        },
        elicit,
      )
    ).body.result;
    expect(again.isError).toBeFalsy();
    expect(again.content[0].text).toMatch(/^Same call as the one at .*: nothing was sent again/);
    expect(again.content[0].text).toMatch(/Created project mrtr-one/);
    expect(creates()).toBe(before + 1);

    // Past the ledger (repeat: true), the used confirmation itself is refused.
    const replay = (
      await rpc(
        http.url,
        "tools/call",
        {
          name: "build_create_project",
          arguments: { projectId: "mrtr-one", repeat: true },
          inputResponses: answer,
          requestState: first.requestState,
        },
        elicit,
      )
    ).body.result;
    expect(replay.isError).toBe(true);
    expect(replay.content[0].text).toMatch(/already used/);
    // The first use may have gone through with its answer lost (a 502): never "nothing was spent", but how to check.
    expect(replay.content[0].text).toMatch(/outcome is unknown/);
    expect(replay.content[0].text).toMatch(/Check first \(call build_list_projects with search "mrtr-one"/);
    expect(replay.content[0].text).not.toMatch(/nothing was sent or spent/i);
    expect(creates()).toBe(before + 1);
  });

  it("refuses a tampered state and an answer for other arguments", async () => {
    const before = creates();
    const first = (
      await rpc(http.url, "tools/call", { name: "build_create_project", arguments: { projectId: "mrtr-two" } }, elicit)
    ).body.result;
    const answer = { confirm_spend: { action: "accept", content: { confirm: true } } };
    const tampered = `${first.requestState.slice(0, -2)}xx`;
    const refused = await rpc(
      http.url,
      "tools/call",
      {
        name: "build_create_project",
        arguments: { projectId: "mrtr-two" },
        inputResponses: answer,
        requestState: tampered,
      },
      elicit,
    );
    expect(refused.body.error.code).toBe(-32602);
    const swapped = (
      await rpc(
        http.url,
        "tools/call",
        {
          name: "build_create_project",
          arguments: { projectId: "mrtr-other" },
          inputResponses: answer,
          requestState: first.requestState,
        },
        elicit,
      )
    ).body.result;
    // The answer approved mrtr-two: for other arguments the user is asked again, nothing is spent.
    expect(swapped.resultType).toBe("input_required");
    expect(creates()).toBe(before);
  });

  it("a decline spends nothing", async () => {
    const before = creates();
    const first = (
      await rpc(
        http.url,
        "tools/call",
        { name: "build_create_project", arguments: { projectId: "mrtr-three" } },
        elicit,
      )
    ).body.result;
    const declined = (
      await rpc(
        http.url,
        "tools/call",
        {
          name: "build_create_project",
          arguments: { projectId: "mrtr-three" },
          inputResponses: { confirm_spend: { action: "decline" } },
          requestState: first.requestState,
        },
        elicit,
      )
    ).body.result;
    expect(declined.isError).toBe(true);
    expect(declined.content[0].text).toMatch(/did not approve.*Nothing was sent or spent/s);
    expect(creates()).toBe(before);
  });

  it("confirms before a task starts, then answers with the task", async () => {
    const caps = { ...elicit, extensions: { [TASKS]: {} } };
    const first = (
      await rpc(
        http.url,
        "tools/call",
        { name: "build_deploy", arguments: { projectId: "acme-storefront", wait: true } },
        caps,
      )
    ).body.result;
    expect(first.resultType).toBe("input_required");
    const created = (
      await rpc(
        http.url,
        "tools/call",
        {
          name: "build_deploy",
          arguments: { projectId: "acme-storefront", wait: true },
          inputResponses: { confirm_spend: { action: "accept", content: { confirm: true } } },
          requestState: first.requestState,
        },
        caps,
      )
    ).body.result;
    expect(created.resultType).toBe("task");
  });
});
