// Long work within every client's patience, and no retry that pays twice (issue 19): a blocking
// wait answers before the common 60 s client timeout with the build_wait call that follows it; a
// task keeps the whole wait; a spending call repeated with the same arguments gets the first
// call's outcome instead of spending again; a cancel is a cancel, never "a bug".
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FAULTS } from "../../src/sandbox/faults.js";
import type { Sandbox } from "../../src/sandbox/index.js";
import { call, connectStdio, ok, rpc2026, sandboxEnv, spawnHttpServer } from "../harness.js";
import { testSandbox, text, until } from "../harness.js";
import type { HttpServerProcess, StdioConnection } from "../harness.js";

const API = "/api/v1/vcaas";
const LAUNCH = `POST ${API}/projects/launch`;
const CREATE = `POST ${API}/projects`;
/** The test sandbox runs 3000 simulated ms per real ms: [minutes=N] takes 20·N real ms. */
const realSeconds = (s: number) => `[minutes=${Math.round((s * 1000) / 20)}]`;

describe("a blocking wait answers within the client's patience", () => {
  let sandbox: Sandbox;
  let conn: StdioConnection;

  beforeAll(async () => {
    sandbox = await testSandbox();
    const env = { BUILD_CONFIRM_SPEND: "never", MCP_MAX_BLOCKING_WAIT_SECONDS: "2", BUILD_POLL_INTERVAL_MS: "100" };
    conn = await connectStdio(sandboxEnv(sandbox, env));
  });
  afterAll(async () => {
    await conn?.close();
    await sandbox?.close();
  });

  it("returns at the limit, not as an error, saying how to follow the work; each follow-up stays short", async () => {
    const started = Date.now();
    const args = { projectId: "patient-app", prompt: `Shop ${realSeconds(60)}`, wait: true };
    const r = await call(conn.client, "build_launch_project", args);
    const ms = Date.now() - started;
    expect(r.isError).toBeFalsy();
    expect(ms).toBeLessThan(15_000);
    type Launched = { projectId: string; startedAt: string; wait: { outcome: string; elapsedSeconds: number } };
    const launched = r.structuredContent as Launched;
    expect(launched.wait.outcome).toBe("timed_out");
    expect(launched.wait.elapsedSeconds).toBeLessThanOrEqual(3);
    const follow = `build_wait { projectId: "${launched.projectId}", until: "agent", since: "${launched.startedAt}" }`;
    expect(text(r)).toContain(follow);

    const hinted = { projectId: launched.projectId, until: "agent", since: launched.startedAt };
    const again = await call(conn.client, "build_wait", hinted);
    expect(again.isError).toBeFalsy();
    expect(again.structuredContent).toMatchObject({ outcome: "timed_out" });
    expect(text(again)).toContain(follow);
    // Followed every minute for up to 40 minutes: one line, and structured data without the details.
    expect(text(again).split("\n")).toHaveLength(1);
    expect(JSON.stringify(again.structuredContent).length).toBeLessThan(600);
    await ok(conn.client, "build_stop_agent", { projectId: launched.projectId });
  });

  it("waits as long as the caller asked with timeoutSeconds", async () => {
    await ok(conn.client, "build_start_agent", { projectId: "booking-app", prompt: `Blog ${realSeconds(60)}` });
    const started = Date.now();
    const args = { projectId: "booking-app", until: "agent", timeoutSeconds: 4 };
    const r = await ok<{ outcome: string }>(conn.client, "build_wait", args);
    expect(r.outcome).toBe("timed_out");
    expect(Date.now() - started).toBeGreaterThanOrEqual(3500);
    await ok(conn.client, "build_stop_agent", { projectId: "booking-app" });
  });

  it("the tool descriptions say so", async () => {
    const { tools } = await conn.client.listTools();
    const launch = tools.find((t) => t.name === "build_launch_project")!;
    const wait = (launch.inputSchema.properties as Record<string, { description?: string }>).wait;
    expect(wait.description).toMatch(/~45 s/);
  });
});

describe("a task keeps the whole wait", () => {
  let sandbox: Sandbox;
  let http: HttpServerProcess;
  const TASKS = { extensions: { "io.modelcontextprotocol/tasks": {} } };

  beforeAll(async () => {
    sandbox = await testSandbox();
    const env = { MCP_MAX_BLOCKING_WAIT_SECONDS: "1", BUILD_POLL_INTERVAL_MS: "50" };
    http = await spawnHttpServer(sandboxEnv(sandbox, env));
  });
  afterAll(async () => {
    await http?.stop();
    await sandbox?.close();
  });

  it("a build_wait task outlasts the blocking limit and ends done", async () => {
    const start = { projectId: "acme-storefront", prompt: `Blog ${realSeconds(3)}` };
    await rpc2026(http.url, "tools/call", { name: "build_start_agent", arguments: start });
    const wait = { name: "build_wait", arguments: { projectId: "acme-storefront", until: "agent" } };
    const created = (await rpc2026(http.url, "tools/call", wait, { capabilities: TASKS })).body.result;
    expect(created.resultType).toBe("task");
    const get = async () =>
      (await rpc2026(http.url, "tasks/get", { taskId: created.taskId }, { capabilities: TASKS })).body.result;
    const done = await until(get, (t) => t.status !== "working", 30_000);
    expect(done.result.structuredContent).toMatchObject({ outcome: "done" });
    expect(done.result.structuredContent.elapsedSeconds).toBeGreaterThan(1.5);
  });
});

describe("no retry pays twice", () => {
  let sandbox: Sandbox;
  let conn: StdioConnection;
  const hits = (key: string) => sandbox.build.router.count(key);

  beforeAll(async () => {
    sandbox = await testSandbox();
    conn = await connectStdio(sandboxEnv(sandbox, { BUILD_CONFIRM_SPEND: "never", BUILD_POLL_INTERVAL_MS: "50" }));
  });
  afterAll(async () => {
    await conn?.close();
    await sandbox?.close();
  });

  it("the same spending call while the first runs gets its outcome; repeat: true spends again", async () => {
    const before = hits(CREATE);
    sandbox.build.router.injectFault({ method: "POST", path: `${API}/projects`, times: 2, action: FAULTS.slow(1500) });
    const args = { projectId: "once-only" };
    // Two at once (a client that retried without waiting): one claims the call, the other waits for it.
    const create = () => call(conn.client, "build_create_project", args);
    const [a, b] = await Promise.all([create(), create()]);
    expect([a.isError, b.isError], text(a) + text(b)).toEqual([undefined, undefined]);
    expect(b.structuredContent).toEqual(a.structuredContent);
    expect(text(a) + text(b)).toMatch(/nothing was sent again/);
    expect(hits(CREATE) - before).toBe(1);
    // On purpose: the upstream is asked again (and refuses, the id being taken now).
    const forced = await call(conn.client, "build_create_project", { ...args, repeat: true });
    expect(text(forced)).toMatch(/HTTP 409, PROJECT_ALREADY_EXISTS/);
    expect(hits(CREATE) - before).toBe(2);
  });

  it("a call whose answer arrived is still remembered (a lost one looks alike): repeat: true is new", async () => {
    const before = hits(CREATE);
    await ok(conn.client, "build_create_project", { projectId: "twice-on-purpose" });
    const again = await call(conn.client, "build_create_project", { projectId: "twice-on-purpose" });
    expect(again.isError).toBeFalsy();
    expect(text(again)).toMatch(/^Same call as the one at \d\d:\d\d:\d\d UTC .*nothing was sent again.*repeat: true/s);
    expect(text(again)).toMatch(/Created project twice-on-purpose/);
    expect(hits(CREATE) - before).toBe(1);
    const forced = await call(conn.client, "build_create_project", { projectId: "twice-on-purpose", repeat: true });
    expect(text(forced)).toMatch(/HTTP 409, PROJECT_ALREADY_EXISTS/);
    expect(hits(CREATE) - before).toBe(2);
  });

  it("a wait: true launch cancelled with a reason, then retried, follows its build: one launch, no bug", async () => {
    const before = hits(LAUNCH);
    const args = { projectId: "retry-app", prompt: `Shop ${realSeconds(4)}`, wait: true };
    const stop = new AbortController();
    const messages: string[] = [];
    const first = conn.client
      .callTool(
        { name: "build_launch_project", arguments: args },
        {
          signal: stop.signal,
          onprogress: (p) => messages.push(p.message ?? ""),
        },
      )
      .catch((err: unknown) => err);
    await until(
      async () => messages.length,
      (n) => n >= 2,
    );
    stop.abort("User pressed stop");
    await first;
    const retried = await call(conn.client, "build_launch_project", args);
    expect(retried.isError).toBeFalsy();
    expect(text(retried)).toMatch(/nothing was sent again/);
    expect(retried.structuredContent).toMatchObject({ projectId: "retry-app", wait: { outcome: "done" } });
    expect(hits(LAUNCH) - before).toBe(1);
    const cancelled = await until(
      async () => conn.stderr(),
      (e) => /"tool call cancelled"/.test(e),
    );
    const line = cancelled.split("\n").find((l) => l.includes('"tool call cancelled"'))!;
    const logged = { level: "debug", tool: "build_launch_project", reason: "User pressed stop" };
    expect(JSON.parse(line)).toMatchObject(logged);
    expect(conn.stderr()).not.toMatch(/This is a bug/);
  });
});
