// Issue 31's bench row (npm run bench, 5b "push"): the bench section itself, run small, meets both
// goals it reports, so the row CI never runs in full still proves what it claims: a wait answers
// within a second of the run's end (median) and reads the agent status at least 4 times less than
// polling at the same interval, in one run, over real HTTPS deliveries.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

interface Goal {
  value: number;
  met: boolean;
}
interface PushResult {
  push: { getsPerWait: number; lagMs: { median: number } };
  poll: { getsPerWait: number; lagMs: { median: number } };
  goals: { latency: Goal; requests: Goal };
}

describe("bench 5b: push against poll", () => {
  it("meets both goals of its row, run small", async () => {
    // @ts-expect-error bench/ is plain JavaScript without declarations
    const { push } = (await import("../../../bench/push.mjs")) as {
      push: (o: {
        waits: number;
        intervalMs: number;
        runSeconds: number;
        log: (s: string) => void;
      }) => Promise<PushResult>;
    };
    const lines: string[] = [];
    const r = await push({ waits: 3, intervalMs: 1000, runSeconds: 10, log: (s) => void lines.push(s) });
    console.log(lines.join("\n"));
    expect(r.goals.latency).toMatchObject({ met: true });
    expect(r.goals.requests).toMatchObject({ met: true });
    expect(r.push.lagMs.median).toBeLessThan(1000);
    expect(r.push.getsPerWait * 4).toBeLessThanOrEqual(r.poll.getsPerWait);
    // The row the bench prints from these goals.
    const run = readFileSync(new URL("../../../bench/run.mjs", import.meta.url), "utf8");
    expect(run).toContain('add("5b push", r.push.goals.latency');
    expect(run).toContain('add("5b push", r.push.goals.requests');
  });
});
