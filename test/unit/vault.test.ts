import { describe, expect, it } from "vitest";
import { Sealer } from "../../src/core/base/seal.js";
import { TicketSigner, TICKET_TTL_MS } from "../../src/core/vault/tickets.js";
import { MemoryVaultStore, Vault } from "../../src/core/vault/vault.js";

const KEY = "tlm_sk_unit_vault_key_000000000042";

describe("vault of linked keys", () => {
  it("keeps keys sealed and bound to their tenant and service: a blob moved elsewhere does not open", async () => {
    const store = new MemoryVaultStore();
    const vault = new Vault(store, new Sealer("s".repeat(32)));
    await vault.link("t_alice", "build", KEY);
    const blob = (await store.all("t_alice")).build;
    expect(blob).not.toContain(KEY);
    expect(Buffer.from(blob.slice(3), "base64url").toString("latin1")).not.toContain(KEY);
    expect(await vault.keys("t_alice")).toEqual({ build: KEY });
    expect(await vault.linked("t_alice")).toEqual([
      { service: "build", lastFour: "0042", linkedAt: expect.any(String) },
    ]);
    // Copied to another tenant, or to another service of the same tenant: not a key there.
    await store.put("t_mallory", "build", blob);
    await store.put("t_alice", "sizing", blob);
    expect(await vault.keys("t_mallory")).toEqual({});
    expect(await vault.keys("t_alice")).toEqual({ build: KEY });
    // Another MCP_STATE_KEY opens nothing.
    expect(await new Vault(store, new Sealer("o".repeat(32))).keys("t_alice")).toEqual({});
    expect(await vault.unlink("t_alice", "build")).toBe(true);
    expect(await vault.unlink("t_alice", "build")).toBe(false);
    expect(await vault.keys("t_alice")).toEqual({});
  });

  it("bounds the in-process store: past the cap the least recently linked tenant goes", async () => {
    const store = new MemoryVaultStore(2);
    for (const t of ["a", "b", "c"]) await store.put(t, "build", "x");
    expect(await store.all("a")).toEqual({});
    expect(await store.all("c")).toEqual({ build: "x" });
  });
});

describe("connect tickets", () => {
  const signer = new TicketSigner(new Sealer("s".repeat(32)).linkKey);
  const fields = { tenant: "t_alice", service: "build", elicitationId: "e1", who: "alice", generation: "g1" };

  it("opens its own ticket, for its service, until it expires", () => {
    const now = Date.now();
    const raw = signer.mint(fields, now);
    expect(signer.open(raw, "build", now)).toMatchObject({ ...fields, expires: now + TICKET_TTL_MS });
    expect(signer.open(raw, "sizing", now)).toEqual({ refused: "This link is for another service." });
    expect(signer.open(raw, "build", now + TICKET_TTL_MS + 1)).toMatchObject({
      refused: expect.stringMatching(/expired/),
    });
  });

  it("refuses a changed ticket, one signed under another key, and garbage", () => {
    const raw = signer.mint(fields);
    const [body, sig] = raw.split(".");
    const forged = Buffer.from(
      JSON.stringify({ ...JSON.parse(Buffer.from(body, "base64url").toString()), tenant: "t_mallory" }),
    ).toString("base64url");
    expect(signer.open(`${forged}.${sig}`, "build")).toMatchObject({ refused: expect.stringMatching(/not valid/) });
    expect(new TicketSigner(new Sealer("o".repeat(32)).linkKey).open(raw, "build")).toMatchObject({
      refused: expect.stringMatching(/not valid/),
    });
    for (const junk of [undefined, "", "a.b.c", "nodot"]) expect(signer.open(junk, "build")).toHaveProperty("refused");
    expect(signer.csrf("n", "cookie-a")).not.toBe(signer.csrf("n", "cookie-b"));
  });
});
