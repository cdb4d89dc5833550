import { defineConfig } from "vitest/config";
import type { Reporter, TestModule } from "vitest/node";

/** Ends the run with a plain "N passed, N failed, N skipped" line that any CI log reader understands. */
const summaryLine: Reporter = {
  onTestRunEnd(modules: ReadonlyArray<TestModule>) {
    const counts = { passed: 0, failed: 0, skipped: 0 };
    for (const module of modules) {
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === "passed") counts.passed++;
        else if (state === "failed") counts.failed++;
        else counts.skipped++;
      }
    }
    process.stdout.write(`\n${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped\n`);
  },
};

/** Files at a time (the waits group: twice as many). */
const workers = Number(process.env.SWITCHBOARD_TEST_WORKERS) || 2;
/** Its own project, run alone after every other file (below). */
const PUSH_CLUSTER = "test/cluster/webhooks.test.ts";
/** SWITCHBOARD_SMOKE=N: only the first N tests of each end-to-end and cluster file (test/smoke.ts). */
const smoke = process.env.SWITCHBOARD_SMOKE ? { setupFiles: ["test/smoke.ts"] } : {};
/** dist/cli.js is rebuilt first when a source is newer (test/ensure-built.ts): e2e tests spawn it. */
const e2e = { testTimeout: 30_000, hookTimeout: 30_000, globalSetup: ["test/ensure-built.ts"], ...smoke };
/**
 * End-to-end files that mostly wait (a client's own 60 s timeout, the sandbox's clock, a delivery),
 * measured with `/usr/bin/time`: a few seconds of CPU in a minute of wall time. They run after the
 * other end-to-end files, twice as many at a time, beside the cluster files (the "waits" group).
 */
const WAITING_E2E = [
  "retry-sdk1.2025",
  "ledger-stdio.2025",
  "builder-push.2026",
  "builder-fidelity.2026",
  "builder-traps.2026",
  "patience.2026",
  "long-running",
].map((name) => `test/e2e/${name}.e2e.test.ts`);
/** The waits group: files that spend their time waiting, not computing, four at a time on 2 cores. */
const waits = { maxWorkers: 2 * workers, sequence: { groupOrder: 1 } };
/** One era's end-to-end files: `e2e-2025` runs the computing ones, `e2e-2025-waits` the waiting ones. */
function era(year: 2025 | 2026) {
  const other = year === 2025 ? 2026 : 2025;
  const files = { include: ["test/e2e/*.e2e.test.ts"], env: { SWITCHBOARD_ERA: year === 2025 ? "legacy" : "modern" } };
  const exclude = [`test/e2e/*.${other}.e2e.test.ts`];
  return [
    { test: { name: `e2e-${year}`, ...files, exclude: [...exclude, ...WAITING_E2E], ...e2e } },
    {
      test: {
        name: `e2e-${year}-waits`,
        ...files,
        include: WAITING_E2E.filter((f) => !f.includes(`.${other}.`)),
        ...e2e,
        ...waits,
      },
    },
  ];
}

/**
 * unit: no process spawned. e2e-2025 / e2e-2026: the end-to-end suites, once per protocol era
 * (test/harness.ts reads SWITCHBOARD_ERA). e2e-once: suites that pick their own peers (the
 * conformance suite, the Inspector, a browser) and run once. cluster: the hosted topology (replicas
 * behind nginx, Redis) with local processes.
 */
export default defineConfig({
  test: {
    pool: "forks",
    // Vitest's default is one worker fewer than the cores: one file at a time on CI's 2 cores, while
    // an end-to-end file spends most of its time waiting on its server, the sandbox's clock or a
    // client's timeout. Two files at a time halve the wall time; SWITCHBOARD_TEST_WORKERS overrides.
    maxWorkers: workers,
    reporters: ["default", summaryLine],
    projects: [
      { test: { name: "unit", include: ["test/unit/**/*.test.ts"], testTimeout: 10_000 } },
      // *.2025.e2e.test.ts and *.2026.e2e.test.ts run in one era: what only that era has (2025 tasks,
      // listen streams), and suites whose subject is an upstream or the server's own logic, not the
      // protocol (the rule and the list: docs/contributing.md, "Which era an end-to-end suite runs in").
      // `--project 'e2e-2025*'` runs every file of an era.
      ...era(2025),
      ...era(2026),
      {
        test: {
          name: "e2e-once",
          include: ["test/e2e/once/*.test.ts", "test/clients/*.test.ts"],
          ...e2e,
          testTimeout: 120_000,
          hookTimeout: 120_000,
          // The client matrix and the Inspector suite run their rows concurrently, each spawning a
          // client, a server and often a process per request: three at a time, not vitest's five.
          maxConcurrency: 3,
        },
      },
      // Redis, the sandbox, N replicas and nginx as local processes (scripts/cluster.mjs), after the
      // other projects (groupOrder), so a cluster never competes with the computing e2e files or a
      // browser for the two cores CI has (run beside them, two suites at once reached load 17 and
      // timed out). A cluster mostly waits on leases and timers (the whole project used 165 s of CPU
      // in 450 s of wall time), as the waiting e2e files do: they share the waits group, four files
      // at a time. Skipped, with one line, without redis-server and nginx (test/cluster/harness.ts).
      {
        test: {
          name: "cluster",
          include: ["test/cluster/*.test.ts"],
          exclude: [PUSH_CLUSTER],
          testTimeout: 120_000,
          hookTimeout: 120_000,
          ...waits,
          ...smoke,
        },
      },
      // The webhook cluster measures how soon a delivery ends a wait (p50 < 1 s): alone, last. Beside
      // another cluster file it measured 1,071 ms in a clean CI run; alone, ~500 ms.
      {
        test: {
          name: "cluster-push",
          include: [PUSH_CLUSTER],
          testTimeout: 120_000,
          hookTimeout: 120_000,
          sequence: { groupOrder: 2 },
          ...smoke,
        },
      },
    ],
  },
});
