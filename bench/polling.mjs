// Goal 5: polling cost. Upstream requests while 100 build_wait calls wait on one project, then on
// 100 different projects. The sandbox runs in this process so its per-route counters can be read.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { Pool } from "undici";
import { CLI, NODE, loadSandbox, sandboxEnv, sleep } from "./lib.mjs";

const STATUS_ROUTE = "GET /api/v1/vcaas/projects/:projectId/agent/status";

export async function polling({ waiters = 100, intervalMs = 200, settleMs = 1500, windowMs = 4000, log }) {
  const { startSandbox } = await loadSandbox();
  // Real time (timeScale 1) and a [minutes=100000] prompt: the runs outlast the benchmark.
  const sandbox = await startSandbox({
    timeScale: 1,
    build: {
      maxProjects: 10_000,
      createsPerMinute: 1_000_000,
      credits: { recurrentCredits: 0, oneTimeCredits: 10_000_000 },
    },
  });
  const router = sandbox.build.router;
  const base = new URL(sandbox.urls.build);
  const pool = new Pool(base.origin, { connections: 8 });
  const launch = async (projectId) => {
    const res = await pool.request({
      path: `${base.pathname}/api/v1/vcaas/projects/launch`,
      method: "POST",
      headers: { "api-key": sandbox.keys.build, "content-type": "application/json" },
      body: JSON.stringify({ projectId, prompt: "Benchmark: a run that keeps going [minutes=100000]" }),
    });
    const body = await res.body.json();
    if (res.statusCode !== 200 || !body.data?.agent?.started)
      throw new Error(`launch ${projectId}: ${res.statusCode} ${JSON.stringify(body).slice(0, 300)}`);
    return body.data.projectId;
  };
  const one = await launch("bench-one-project");
  const many = [];
  for (let i = 0; i < waiters; i++) many.push(await launch(`bench-project-${String(i).padStart(3, "0")}`));

  const transport = new StdioClientTransport({
    command: NODE,
    args: [CLI, "--toolsets", "build"],
    env: sandboxEnv(sandbox, { BUILD_POLL_INTERVAL_MS: String(intervalMs) }),
    stderr: "ignore",
  });
  const client = new Client({ name: "switchboard-bench", version: "1.0.0" });
  await client.connect(transport);

  const scenario = async (label, projectIds) => {
    const controllers = projectIds.map(() => new AbortController());
    let finishedEarly = 0;
    const calls = projectIds.map((projectId, i) =>
      client
        .callTool({ name: "build_wait", arguments: { projectId, until: "agent", timeoutSeconds: 3600 } }, undefined, {
          signal: controllers[i].signal,
          timeout: 3_600_000,
        })
        .then(
          () => finishedEarly++,
          () => undefined,
        ),
    );
    await sleep(settleMs);
    const status0 = router.count(STATUS_ROUTE);
    const total0 = router.count();
    const t0 = performance.now();
    await sleep(windowMs);
    const elapsed = performance.now() - t0;
    const status = router.count(STATUS_ROUTE) - status0;
    const total = router.count() - total0;
    for (const c of controllers) c.abort();
    await Promise.all(calls);
    // After cancellation the polling must stop.
    await sleep(Math.max(500, 2 * intervalMs));
    const after0 = router.count();
    await sleep(Math.max(1000, 5 * intervalMs));
    const afterCancel = router.count() - after0;
    const intervals = elapsed / intervalMs;
    const r = {
      waiters: projectIds.length,
      projects: new Set(projectIds).size,
      windowMs: Math.round(elapsed),
      intervalMs,
      statusRequests: status,
      totalRequests: total,
      statusPerInterval: status / intervals,
      totalPerInterval: total / intervals,
      finishedEarly,
      requestsAfterCancel: afterCancel,
    };
    log(
      `polling (${label}): ${r.statusPerInterval.toFixed(1)} status requests per ${intervalMs} ms interval, ` +
        `${afterCancel} after cancel`,
    );
    return r;
  };

  try {
    const sameProject = await scenario("one project", Array(waiters).fill(one));
    const differentProjects = await scenario("different projects", many);
    return {
      sameProject,
      differentProjects,
      goals: {
        sameProject: {
          text: "one project: one upstream request per poll interval",
          value: sameProject.totalPerInterval,
          met: sameProject.totalPerInterval <= 1.5,
        },
        differentProjects: {
          text: `${waiters} projects: one request per project per interval (${waiters})`,
          value: differentProjects.totalPerInterval,
          met: differentProjects.totalPerInterval <= waiters * 1.1,
        },
        stopsOnCancel: {
          text: "no polling after the calls are cancelled",
          met: sameProject.requestsAfterCancel === 0 && differentProjects.requestsAfterCancel === 0,
        },
      },
    };
  } finally {
    await client.close();
    await pool.close();
    await sandbox.close();
  }
}
