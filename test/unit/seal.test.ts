import { describe, expect, it } from "vitest";
import { Sealer } from "../../src/core/base/seal.js";

const KEY = "a-state-key-of-at-least-32-characters!";

describe("sealed task state and tenant ids (MCP_STATE_KEY)", () => {
  it("opens what it sealed, on any replica with the same key", () => {
    const work = {
      tool: "build_wait",
      input: { projectId: "p" },
      credentials: { build: "tlm_sk_live_secret_123456789" },
    };
    const sealed = new Sealer(KEY).seal(work, "task-1");
    expect(sealed).toMatch(/^v1\./);
    expect(sealed).not.toContain("tlm_sk_live_secret");
    expect(new Sealer(KEY).open(sealed, "task-1")).toEqual(work);
  });

  it("refuses a blob moved to another task, tampered with, or sealed under another key", () => {
    const sealed = new Sealer(KEY).seal({ a: 1 }, "task-1");
    expect(() => new Sealer(KEY).open(sealed, "task-2")).toThrow();
    // One character of the ciphertext changed (never to itself: the blob is random).
    const at = sealed.length - 2;
    const flipped = `${sealed.slice(0, at)}${sealed[at] === "A" ? "B" : "A"}${sealed.slice(at + 1)}`;
    expect(flipped).not.toBe(sealed);
    expect(() => new Sealer(KEY).open(flipped, "task-1")).toThrow();
    expect(() => new Sealer("another-key-of-at-least-32-characters").open(sealed, "task-1")).toThrow();
  });

  it("gives the same keys the same tenant on every replica, other keys another, and reveals no key", () => {
    const a = new Sealer(KEY).tenantId({ build: "tlm_sk_alice_000000000000", drones: "dfk_alice" });
    expect(new Sealer(KEY).tenantId({ drones: "dfk_alice", build: "tlm_sk_alice_000000000000" })).toBe(a);
    expect(new Sealer(KEY).tenantId({ build: "tlm_sk_bob_00000000000000" })).not.toBe(a);
    expect(
      new Sealer("another-key-of-at-least-32-characters").tenantId({
        build: "tlm_sk_alice_000000000000",
        drones: "dfk_alice",
      }),
    ).not.toBe(a);
    expect(a).toMatch(/^t_[A-Za-z0-9_-]{22}$/);
  });
});
