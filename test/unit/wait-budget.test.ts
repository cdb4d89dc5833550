import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/core/base/logger.js";
import { Egress } from "../../src/core/base/egress.js";
import type { Poller, PollListener } from "../../src/core/upstream/poller.js";
import { waitUntilDone } from "../../src/core/upstream/wait.js";

/** A poller whose answers the test hands out by hand. */
function manualPoller<T>() {
  let listener: PollListener<T> | undefined;
  const poller: Poller<T> = {
    follow: (_key, l) => {
      listener = l;
      return () => (listener = undefined);
    },
  };
  return { poller, answer: (value: T) => listener?.({ value }) };
}

const wait = (poller: Poller<{ phase: "running" | "done" }>, timeoutMs: number, lines: string[]) =>
  waitUntilDone({
    poller,
    key: "p",
    check: (s) => ({ phase: s.phase }),
    describe: (s) => s.phase,
    timeoutMs,
    signal: new AbortController().signal,
    onProgress: async (m) => void lines.push(m),
    logger: createLogger("error", new Egress()),
  });

describe("waitUntilDone: a budget shorter than the first answer", () => {
  // Old: "no answer from the upstream within 1s", an internal error, under load (stateless.2026.e2e).
  it("ends timed_out on the first answer that comes after the budget, with its progress line", async () => {
    const { poller, answer } = manualPoller<{ phase: "running" | "done" }>();
    const lines: string[] = [];
    const waiting = wait(poller, 20, lines);
    await new Promise((r) => setTimeout(r, 60));
    answer({ phase: "running" });
    const outcome = await waiting;
    expect(outcome).toMatchObject({ outcome: "timed_out", state: { phase: "running" }, polls: 1 });
    expect(lines).toEqual(["running"]);
  });

  it("still ends done when that late first answer says the work ended", async () => {
    const { poller, answer } = manualPoller<{ phase: "running" | "done" }>();
    const waiting = wait(poller, 20, []);
    await new Promise((r) => setTimeout(r, 60));
    answer({ phase: "done" });
    expect((await waiting).outcome).toBe("done");
  });
});
