import { readFileSync, readdirSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { type FakeClockSimulator, startFakeClockSimulator } from "../build-simulator-server.js";

/**
 * Issue 29 item 12 (and 10's simulator half): the build simulator teaches only what the reference
 * states, and every rule it adds is listed as assumed in docs/simulator-assumptions.md.
 */

const KEY = "tlm_sk_test_key_0123456789";
const T0 = Date.UTC(2025, 5, 15, 12, 0, 0);
const TIME_SCALE = 5000;
const root = new URL("../../", import.meta.url);

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

const started: FakeClockSimulator[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((s) => s.close()));
});

async function start() {
  const fake = await startFakeClockSimulator({ apiKey: KEY, timeScale: TIME_SCALE, t0: T0 });
  started.push(fake);
  const { sim, base, advance } = fake;
  const call = async (method: string, path: string, body?: unknown): Promise<{ status: number; body: Any }> => {
    const headers: Record<string, string> = { "api-key": KEY };
    if (body !== undefined) headers["content-type"] = "application/json";
    const res = await fetch(base + path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: await res.json() };
  };
  const data = async (method: string, path: string, body?: unknown) => {
    const r = await call(method, path, body);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body.data;
  };
  return { sim, call, data, advance };
}

describe("build simulator rules the reference states (issue 29 item 12)", () => {
  // §1.2: the versions list's maximum limit is not stated; it was capped at 1000 with a 400.
  it("applies no maximum to the versions list limit", async () => {
    const { call, data } = await start();
    const listed = await data("GET", "/projects/acme-storefront/versions?limit=5000");
    expect(listed.versions).toHaveLength(listed.totalCount);
    expect(listed.totalCount).toBeGreaterThan(1);
    const bad = await call("GET", "/projects/acme-storefront/versions?limit=0");
    expect([bad.status, bad.body.errors.errorCode]).toEqual([400, "LIST_VERSIONS_ERROR"]);
  });

  // §1.6: deploy on a server that is not Active charges START_SERVER; Creating was free.
  it("charges START_SERVER for a deploy while the server is Creating, then answers 409", async () => {
    const { sim, call, data } = await start();
    await data("POST", "/projects", { projectId: "fresh-deploy" });
    expect((await data("GET", "/projects/fresh-deploy")).agentServerStatus).toBe("Creating");
    const before = sim.balance().credits;
    const r = await call("POST", "/projects/fresh-deploy/deployments/deploy");
    expect([r.status, r.body.errors.errorCode]).toEqual([409, "SERVER_NOT_READY"]);
    expect(sim.balance().credits).toBe(before - 3);
  });

  // §4: creditsSpent is "present when done"; a project that never ran showed creditsSpent: 0.
  it("leaves creditsSpent out of agent/status for a project that never ran", async () => {
    const { data } = await start();
    await data("POST", "/projects", { projectId: "never-ran" });
    const status = await data("GET", "/projects/never-ran/agent/status");
    expect(status.status).toBe("idle");
    expect("creditsSpent" in status).toBe(false);
  });

  // Item 10: §15 [RC] states 409 SERVER_NOT_READY for an asleep target; the charge is assumed.
  it("answers an import into an asleep target with 409 and START_SERVER, as the guard counts it", async () => {
    const { sim, call, data } = await start();
    const { importCode } = await data("POST", "/projects/acme-storefront/export", {});
    await data("POST", "/projects", { projectId: "asleep-target" });
    sim.project("asleep-target")!.server = { status: "Archived", readyAt: 0 };
    const before = sim.balance().credits;
    const r = await call("POST", "/projects/asleep-target/import", { importCode });
    expect([r.status, r.body.errors.errorCode]).toEqual([409, "SERVER_NOT_READY"]);
    expect(sim.balance().credits).toBe(before - 3);
  });
});

describe("docs/simulator-assumptions.md", () => {
  const read = (path: string) => readFileSync(new URL(path, root), "utf8");

  // Every error code the simulator answers with is in the reference's description, or listed assumed.
  it("lists as assumed every error code the simulator answers that the reference does not show", () => {
    const doc = read("docs/simulator-assumptions.md");
    // The reference's description in the repository (docs/openapi/build-service.yaml is written from it).
    const reference = read("docs/openapi/build-service.yaml");
    const dir = new URL("src/sandbox/simulators/builder/", root);
    const codes = new Set<string>();
    for (const file of readdirSync(dir).filter((f) => f.endsWith(".ts"))) {
      const source = readFileSync(new URL(file, dir), "utf8");
      for (const m of source.matchAll(/fail\(\s*\d{3},\s*"([A-Z_]+)"/g)) codes.add(m[1]);
    }
    expect(codes.size).toBeGreaterThan(20);
    const unlisted = [...codes].filter((code) => !reference.includes(code) && !assumedLine(doc, code));
    expect(unlisted).toEqual([]);
  });

  it("marks every rule it lists as assumed, and is linked from docs/endpoints.md", () => {
    const rules = bullets(read("docs/simulator-assumptions.md"));
    expect(rules.length).toBeGreaterThan(40);
    expect(rules.filter((l) => !/\*\*assumed\*\*/.test(l))).toEqual([]);
    expect(read("docs/endpoints.md")).toContain("(simulator-assumptions.md)");
  });
});

/** The doc's rules: each "- " item with the indented lines that continue it. */
function bullets(doc: string): string[] {
  const items: string[] = [];
  for (const line of doc.split("\n")) {
    if (line.startsWith("- ")) items.push(line);
    else if (line.startsWith("  ") && items.length && line.trim()) items[items.length - 1] += ` ${line.trim()}`;
  }
  return items;
}

/** A rule of the doc that names `code` and says assumed. */
function assumedLine(doc: string, code: string): boolean {
  return bullets(doc).some((l) => new RegExp(`\\b${code}\\b`).test(l) && l.includes("**assumed**"));
}
