// Smoke mode (SWITCHBOARD_SMOKE=N, vitest.config.ts adds this file to the end-to-end projects): only
// the first N tests of every file run, in their order; the rest are reported as skipped, and a
// describe block left with no test to run is skipped whole, its beforeAll (a server to start)
// included. CI runs the full suite on the machine's Node and this on the other Node versions
// (.ci/run). The first tests of a file are its basic paths, and later tests may rely on earlier
// ones (test/e2e/in-order.ts), never the reverse, so a prefix is always a valid run.
import { beforeAll } from "vitest";

type Task = { type: string; mode: string; tasks?: Task[] };

const keep = Number(process.env.SWITCHBOARD_SMOKE);

/**
 * Marks every test after the first `keep` (depth first, in file order) to skip; true if any test in
 * `task` still runs.
 */
function trim(task: Task, seen: { tests: number }): boolean {
  if (task.type === "test") {
    if (task.mode !== "run") return false;
    if (seen.tests++ < keep) return true;
    task.mode = "skip";
    return false;
  }
  let runs = false;
  for (const child of task.tasks ?? []) runs = trim(child, seen) || runs;
  if (!runs && task.mode === "run") task.mode = "skip";
  return runs;
}

if (Number.isInteger(keep) && keep > 0) {
  // A setup file's beforeAll is the file's first hook: it runs after collection, before any suite starts.
  // biome-ignore lint/correctness/noEmptyPattern: vitest reads the fixtures a hook uses from this pattern
  beforeAll(({}, file) => {
    const seen = { tests: 0 };
    for (const child of (file as unknown as Task).tasks ?? []) trim(child, seen);
  });
}
