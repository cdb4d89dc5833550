import { describe, expect, it } from "vitest";
import { RequestAbort } from "../../src/core/upstream/request-abort.js";

describe("RequestAbort, an upstream request's abort handle", () => {
  it("aborts once, with its reason, calling each listener still registered once", () => {
    const abort = new RequestAbort();
    const calls: string[] = [];
    const kept = () => calls.push(`kept ${String(abort.reason)}`);
    const removed = () => calls.push("removed");
    abort.addEventListener("abort", kept, { once: true });
    abort.addEventListener("abort", removed);
    abort.removeEventListener("abort", removed);
    abort.abort("deadline");
    abort.abort("again");
    expect(calls).toEqual(["kept deadline"]);
    expect(abort.aborted).toBe(true);
    expect(abort.reason).toBe("deadline");
    abort.addEventListener("abort", kept);
    expect(calls).toEqual(["kept deadline"]);
  });

  it("still calls the other listeners when one throws, and leaves that error to the process", async () => {
    const abort = new RequestAbort();
    const seen: unknown[] = [];
    const onUncaught = (err: unknown) => seen.push(err);
    const listeners = process.listeners("uncaughtException");
    process.removeAllListeners("uncaughtException");
    process.on("uncaughtException", onUncaught);
    try {
      let second = false;
      abort.addEventListener("abort", () => {
        throw new Error("listener failed");
      });
      abort.addEventListener("abort", () => {
        second = true;
      });
      expect(() => abort.abort("x")).not.toThrow();
      expect(second).toBe(true);
      await new Promise((resolve) => setImmediate(resolve));
      expect(seen).toEqual([new Error("listener failed")]);
    } finally {
      process.off("uncaughtException", onUncaught);
      for (const l of listeners) process.on("uncaughtException", l);
    }
  });
});
