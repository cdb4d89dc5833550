import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { Client } from "@modelcontextprotocol/client";
import type { Sandbox } from "../../src/sandbox/index.js";
import { CATALOG } from "../../src/sandbox/simulators/sizing/index.js";
import {
  call,
  connectHttp,
  connectStdio,
  ok,
  sandboxEnv,
  spawnHttpServer,
  testSandbox,
  text,
  type HttpServerProcess,
  type StdioConnection,
} from "../harness.js";

/** The JSON body of a text resource content (fails on a blob). */
function body(content: { text: string } | { blob: string }): unknown {
  if (!("text" in content)) throw new Error("expected a text resource");
  return JSON.parse(content.text);
}

const RECOMMEND = "POST /api/retailer/recommend";
const TRY_ON = "POST /api/retailer/try-on";
const CATALOG_ROUTE = "GET /api/retailer/catalog";

function item(name: string) {
  const found = CATALOG.find((i) => i.name === name);
  if (!found) throw new Error(`no catalog item ${name}`);
  return found;
}

// Unisex chart, M = chest 92-100, waist 78-86, hips 96-104; S below it.
const TEE = item("Heavyweight Crew Tee");
const COAT = item("Wool Wrap Coat");
const WOMEN_TROUSER = item("High-Rise Wide-Leg Trouser");

interface Recommendation {
  clothing_item_id: string;
  recommended_size: string;
  confidence_score: number;
  alternative_size: string;
  fit_notes: string;
  size_breakdown: { chest_fit: string; waist_fit: string; overall: string };
}

describe("sizing over stdio", () => {
  let sandbox: Sandbox;
  let conn: StdioConnection;
  const hits = (key?: string) => sandbox.sizing.router.count(key);

  beforeAll(async () => {
    sandbox = await testSandbox();
    conn = await connectStdio(sandboxEnv(sandbox));
  });
  afterAll(async () => {
    await conn?.close();
    await sandbox?.close();
  });

  it("lists the three sizing tools with annotations and output schemas", async () => {
    const { tools } = await conn.client.listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    for (const name of ["sizing_get_catalog", "sizing_recommend_size", "sizing_create_try_on"]) {
      const tool = byName.get(name);
      expect(tool, name).toBeDefined();
      expect(tool!.outputSchema, name).toBeDefined();
      expect(tool!.title, name).toBeTruthy();
    }
    expect(byName.get("sizing_get_catalog")!.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false });
    expect(byName.get("sizing_recommend_size")!.annotations).toMatchObject({
      readOnlyHint: true,
      idempotentHint: true,
    });
    // A try-on stores a session and uses the monthly allowance.
    expect(byName.get("sizing_create_try_on")!.annotations).toMatchObject({
      readOnlyHint: false,
      idempotentHint: false,
    });
  });

  it("reads the catalog with upstream filters, a local search and paging", async () => {
    const all = await call(conn.client, "sizing_get_catalog");
    expect(all.isError).toBeFalsy();
    const page = all.structuredContent as {
      items: Array<{ _id: string }>;
      total: number;
      count: number;
      omitted: number;
      nextOffset?: number;
    };
    expect(page.total).toBe(CATALOG.length);
    expect(page.count).toBe(CATALOG.length);
    expect(page.items).toEqual(CATALOG);
    expect(page.nextOffset).toBeUndefined();
    expect(text(all)).toMatch(new RegExp(`^${CATALOG.length} item\\(s\\) match; showing 1-${CATALOG.length}`));
    expect(text(all)).toContain(
      `- ${COAT._id}: "Wool Wrap Coat" by "Aurelia", 329.00 (outerwear, women); sizes XS, S, M, L, XL`,
    );

    const filtered = await call(conn.client, "sizing_get_catalog", { category: "pants", gender: "women" });
    expect((filtered.structuredContent as { items: unknown[] }).items).toEqual([WOMEN_TROUSER]);
    expect(text(filtered)).toMatch(/^1 item\(s\) match/);
    expect(text(filtered)).toContain("sizes 34, 36, 38, 40, 42, 44");

    const tops = CATALOG.filter((i) => i.category === "tops");
    const paged = await ok<{
      items: Array<{ _id: string }>;
      total: number;
      offset: number;
      count: number;
      omitted: number;
      nextOffset?: number;
    }>(conn.client, "sizing_get_catalog", { category: "tops", limit: 2, offset: 1 });
    expect(paged).toMatchObject({ total: tops.length, offset: 1, count: 2, omitted: tops.length - 2, nextOffset: 3 });
    expect(paged.items.map((i) => i._id)).toEqual(tops.slice(1, 3).map((i) => i._id));

    const search = await call(conn.client, "sizing_get_catalog", { search: "harbor" });
    const expected = CATALOG.filter((i) => i.brand === "Harbor Supply").map((i) => i._id);
    expect(expected.length).toBeGreaterThan(1);
    expect((search.structuredContent as { items: Array<{ _id: string }> }).items.map((i) => i._id)).toEqual(expected);

    const none = await call(conn.client, "sizing_get_catalog", { category: "swimwear" });
    expect(none.isError).toBeFalsy();
    expect(none.structuredContent).toMatchObject({ items: [], total: 0 });
    expect(text(none)).toMatch(/No catalog items match/);
  });

  it("recommends a size, reading like a shop assistant's advice", async () => {
    const before = sandbox.sizing.sessions().length;
    const r = await call(conn.client, "sizing_recommend_size", {
      clothing_item_id: TEE._id,
      measurements: { chest: 95, waist: 80, hips: 100 },
      preferred_fit: "regular",
    });
    expect(r.isError).toBeFalsy();
    const rec = r.structuredContent as unknown as Recommendation;
    // chest 95 and hips 100 sit in M, waist 80 in its lower half: M, leaning towards S.
    expect(rec).toMatchObject({
      clothing_item_id: TEE._id,
      recommended_size: "M",
      confidence_score: 0.85,
      alternative_size: "S",
      size_breakdown: { chest_fit: "comfortable", waist_fit: "comfortable", overall: "comfortable" },
    });
    expect(rec.fit_notes).toMatch(/Chest 95 cm sits in the middle of M \(92–100 cm\)/);
    const t = text(r);
    expect(t).toMatch(/^I'd go with size M \(85% confidence, a confident match\) for a regular fit\./);
    expect(t).toContain("If it doesn't feel right, the alternative is size S.");
    expect(t).toContain("How it should fit: chest comfortable, waist comfortable, overall comfortable.");
    expect(t).toContain(`Why, in the sizing service's words: ${JSON.stringify(rec.fit_notes)}`);
    // Advice only: no try-on session stored.
    expect(sandbox.sizing.sessions()).toHaveLength(before);
  });

  it("passes preferred_fit upstream: a slim fit moves one size down", async () => {
    // Every measurement in the lower quarter of M: slim prefers S, M stays the alternative.
    const r = await call(conn.client, "sizing_recommend_size", {
      clothing_item_id: TEE._id,
      measurements: { chest: 93, waist: 79, hips: 97 },
      preferred_fit: "slim",
    });
    expect(r.structuredContent).toMatchObject({ recommended_size: "S", alternative_size: "M", confidence_score: 0.55 });
    expect(text(r)).toMatch(/^I'd go with size S \(55% confidence, a borderline match\) for a slim fit\./);
    expect(text(r)).toContain("the alternative is size M.");

    const regular = await ok<Recommendation>(conn.client, "sizing_recommend_size", {
      clothing_item_id: TEE._id,
      measurements: { chest: 93, waist: 79, hips: 97 },
    });
    expect(regular.recommended_size).toBe("M");
  });

  it("creates a try-on session that the service stores", async () => {
    const before = sandbox.sizing.sessions().length;
    const r = await call(conn.client, "sizing_create_try_on", {
      clothing_item_id: TEE._id,
      user_id: "cust-e2e-42",
      measurements: { chest: 95, waist: 80, hips: 100 },
    });
    expect(r.isError).toBeFalsy();
    const session = r.structuredContent as {
      session_id: string;
      recommended_size: string;
      confidence_score: number;
      created_at: string;
      fit_notes: string;
    };
    expect(session.session_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(session).toMatchObject({ recommended_size: "M", confidence_score: 0.85 });
    expect(Number.isNaN(Date.parse(session.created_at))).toBe(false);
    const stored = sandbox.sizing.sessions();
    expect(stored).toHaveLength(before + 1);
    expect(stored.at(-1)).toMatchObject({
      session_id: session.session_id,
      user_id: "cust-e2e-42",
      clothing_item_id: TEE._id,
      recommended_size: "M",
    });
    const t = text(r);
    expect(t).toMatch(
      new RegExp(
        `^Try-on session ${session.session_id} saved at ${session.created_at.replace(/[.]/g, "\\.")}: ` +
          `size M \\(85% confidence`,
      ),
    );
    expect(t).toContain("This used one try-on of the plan's monthly allowance.");
  });

  it("reports an unknown item as HTTP 404 NOT_FOUND with the next step", async () => {
    const r = await call(conn.client, "sizing_recommend_size", {
      clothing_item_id: "000000000000000000000000",
      measurements: { chest: 90 },
    });
    expect(r.isError).toBe(true);
    expect(text(r)).toContain("HTTP 404, NOT_FOUND");
    expect(text(r)).toMatch(/Next step: .*sizing_get_catalog/);
    const tryOn = await call(conn.client, "sizing_create_try_on", {
      clothing_item_id: "no-such-item",
      user_id: "u1",
      measurements: { chest: 90 },
    });
    expect(tryOn.isError).toBe(true);
    expect(text(tryOn)).toContain("HTTP 404, NOT_FOUND");
  });

  it("refuses invalid arguments before any upstream request, naming the field", async () => {
    const before = hits();
    const sessions = sandbox.sizing.sessions().length;
    const cases: Array<[string, Record<string, unknown>, RegExp]> = [
      ["sizing_recommend_size", { clothing_item_id: TEE._id, measurements: { chest: "95" } }, /measurements\.chest/],
      ["sizing_recommend_size", { clothing_item_id: TEE._id, measurements: { waist: -3 } }, /measurements\.waist/],
      [
        "sizing_recommend_size",
        { clothing_item_id: TEE._id, measurements: { chest: 90, inseam: "long" } },
        /measurements\.inseam: every measurement must be a number/,
      ],
      ["sizing_recommend_size", { clothing_item_id: TEE._id, measurements: {} }, /measurements needs at least one/],
      [
        "sizing_recommend_size",
        { clothing_item_id: TEE._id, measurements: { chest: 90 }, preferred_fit: "" },
        /preferred_fit/,
      ],
      ["sizing_recommend_size", { clothing_item_id: "  ", measurements: { chest: 90 } }, /clothing_item_id/],
      [
        "sizing_create_try_on",
        { clothing_item_id: TEE._id, user_id: "u1", measurements: { hips: -1 } },
        /measurements\.hips/,
      ],
      [
        "sizing_create_try_on",
        { clothing_item_id: TEE._id, user_id: "u1", measurements: { chest: "big" } },
        /measurements\.chest/,
      ],
      ["sizing_create_try_on", { clothing_item_id: TEE._id, measurements: { chest: 90 } }, /user_id/],
      ["sizing_get_catalog", { limit: 0 }, /limit must be a whole number/],
    ];
    for (const [tool, args, message] of cases) {
      const r = await call(conn.client, tool, args);
      expect(r.isError, `${tool} ${JSON.stringify(args)}`).toBe(true);
      expect(text(r), `${tool} ${JSON.stringify(args)}`).toMatch(message);
    }
    expect(hits()).toBe(before);
    expect(sandbox.sizing.sessions()).toHaveLength(sessions);
  });

  it("lists, reads and completes catalog items as resources", async () => {
    const { resourceTemplates } = await conn.client.listResourceTemplates();
    expect(resourceTemplates.map((t) => t.uriTemplate)).toContain("sizing://catalog/{id}");

    const { resources } = await conn.client.listResources();
    const catalog = resources.filter((r) => r.uri.startsWith("sizing://catalog/"));
    expect(catalog.map((r) => r.uri)).toEqual(CATALOG.map((i) => `sizing://catalog/${i._id}`));
    expect(catalog.find((r) => r.uri.endsWith(COAT._id))).toMatchObject({
      name: "Wool Wrap Coat",
      mimeType: "application/json",
    });

    const read = await conn.client.readResource({ uri: `sizing://catalog/${COAT._id}` });
    expect(read.contents).toHaveLength(1);
    expect(read.contents[0].mimeType).toBe("application/json");
    expect(body(read.contents[0])).toEqual(COAT);

    await expect(conn.client.readResource({ uri: "sizing://catalog/000000000000000000000000" })).rejects.toThrow(
      /Resource not found: no catalog item has _id/,
    );

    const ref = { type: "ref/resource" as const, uri: "sizing://catalog/{id}" };
    const prefix = "6650c1a2f3b4d5e6a7b8010";
    const byId = await conn.client.complete({ ref, argument: { name: "id", value: prefix } });
    expect(byId.completion.values).toEqual(CATALOG.filter((i) => i._id.startsWith(prefix)).map((i) => i._id));
    expect(byId.completion.values.length).toBeGreaterThan(1);
    const byName = await conn.client.complete({ ref, argument: { name: "id", value: "wool" } });
    expect(byName.completion.values).toEqual([COAT._id]);
    const nothing = await conn.client.complete({ ref, argument: { name: "id", value: "zzz" } });
    expect(nothing.completion.values).toEqual([]);
  });

  it("offers the fitting_room prompt, pointing at the sizing tools", async () => {
    const { prompts } = await conn.client.listPrompts();
    expect(prompts.map((p) => p.name)).toContain("fitting_room");
    const prompt = await conn.client.getPrompt({
      name: "fitting_room",
      arguments: { item: "Wool Wrap Coat", category: "outerwear" },
    });
    const body = prompt.messages.map((m) => (m.content.type === "text" ? m.content.text : "")).join("\n");
    expect(body).toContain('Find "Wool Wrap Coat"');
    expect(body).toContain('category "outerwear"');
    for (const tool of ["sizing_get_catalog", "sizing_recommend_size", "sizing_create_try_on"])
      expect(body).toContain(tool);
    expect(body).toMatch(/confidence as a percentage/);
  });
});

describe("sizing over HTTP, and the free plan's limits", () => {
  let sandbox: Sandbox;
  let server: HttpServerProcess;
  let client: Client;
  const tryOn = (user: string) =>
    call(client, "sizing_create_try_on", {
      clothing_item_id: TEE._id,
      user_id: user,
      measurements: { chest: 95, waist: 80, hips: 100 },
    });

  beforeAll(async () => {
    // The simulator reads its clock from Date.now when created: a fake clock lets the test step
    // past the per-minute window (only Date is faked; timers stay real).
    vi.useFakeTimers({ toFake: ["Date"], now: new Date("2030-03-10T12:00:00.000Z") });
    sandbox = await testSandbox();
    server = await spawnHttpServer(sandboxEnv(sandbox));
    client = await connectHttp(server.url);
  });
  afterAll(async () => {
    sandbox?.sizing.setPlan("professional");
    await client?.close();
    await server?.stop();
    await sandbox?.close();
    vi.useRealTimers();
  });

  it("recommends a size and reads the catalog over Streamable HTTP", async () => {
    const before = sandbox.sizing.router.count(RECOMMEND);
    const r = await call(client, "sizing_recommend_size", {
      clothing_item_id: TEE._id,
      measurements: { chest: 95, waist: 80, hips: 100 },
    });
    expect(r.isError).toBeFalsy();
    expect(r.structuredContent).toMatchObject({ recommended_size: "M", alternative_size: "S", confidence_score: 0.85 });
    expect(text(r)).toMatch(/^I'd go with size M \(85% confidence/);
    expect(sandbox.sizing.router.count(RECOMMEND)).toBe(before + 1);

    const page = await ok<{ total: number }>(client, "sizing_get_catalog", { gender: "men" });
    expect(page.total).toBe(CATALOG.filter((i) => i.gender === "men").length);
  });

  it("answers HTTP 429 RATE_LIMITED after 60 requests in a minute on the free plan", async () => {
    vi.setSystemTime(new Date("2030-03-10T12:01:01.000Z")); // an empty window
    sandbox.sizing.setPlan("free");
    const catalogBefore = sandbox.sizing.router.count(CATALOG_ROUTE);
    const recommendBefore = sandbox.sizing.router.count(RECOMMEND);
    // Exactly the free allowance, concurrently. (A 61st read would be retried after Retry-After.)
    const results = await Promise.all(
      Array.from({ length: 60 }, () => call(client, "sizing_get_catalog", { category: "tops", limit: 1 })),
    );
    expect(results.filter((r) => r.isError).map(text)).toEqual([]);
    expect(sandbox.sizing.router.count(CATALOG_ROUTE)).toBe(catalogBefore + 60);

    // The next request is over the limit; a POST is never retried, so the 429 comes straight back.
    const limited = await call(client, "sizing_recommend_size", {
      clothing_item_id: TEE._id,
      measurements: { chest: 95 },
    });
    expect(limited.isError).toBe(true);
    expect(text(limited)).toContain("HTTP 429, RATE_LIMITED");
    expect(text(limited)).toMatch(/60 requests per minute/);
    expect(text(limited)).toMatch(/Next step: .*wait/);
    // The seed shows no error codes: the hint says its reading of this one is assumed.
    expect(text(limited)).toMatch(/Next step: assumed to mean/);
    expect(sandbox.sizing.router.count(RECOMMEND)).toBe(recommendBefore);

    // A minute later the window has room again.
    vi.setSystemTime(new Date("2030-03-10T12:02:02.000Z"));
    expect(
      await ok(client, "sizing_recommend_size", { clothing_item_id: TEE._id, measurements: { chest: 95 } }),
    ).toMatchObject({ recommended_size: "M" });
    expect(sandbox.sizing.router.count(RECOMMEND)).toBe(recommendBefore + 1);
  });

  it("answers HTTP 429 TRY_ON_LIMIT_REACHED after 100 try-ons in a month on the free plan", async () => {
    vi.setSystemTime(new Date("2030-03-10T12:03:03.000Z"));
    sandbox.sizing.setPlan("free");
    expect(sandbox.sizing.sessions()).toHaveLength(0);
    const first = await Promise.all(Array.from({ length: 60 }, (_, i) => tryOn(`cust-${i}`)));
    expect(first.filter((r) => r.isError).map(text)).toEqual([]);
    expect(sandbox.sizing.sessions()).toHaveLength(60);

    vi.setSystemTime(new Date("2030-03-10T12:04:04.000Z"));
    const second = await Promise.all(Array.from({ length: 40 }, (_, i) => tryOn(`cust-${60 + i}`)));
    expect(second.filter((r) => r.isError).map(text)).toEqual([]);
    expect(sandbox.sizing.sessions()).toHaveLength(100);

    const over = await tryOn("cust-100");
    expect(over.isError).toBe(true);
    expect(text(over)).toContain("HTTP 429, TRY_ON_LIMIT_REACHED");
    expect(text(over)).toMatch(/Monthly limit of 100 try-ons/);
    expect(text(over)).toMatch(/Next step: .*allowance is used up.*use sizing_recommend_size/);
    expect(sandbox.sizing.sessions()).toHaveLength(100);

    // Advice costs no try-on, so it still works.
    expect(
      await ok(client, "sizing_recommend_size", { clothing_item_id: TEE._id, measurements: { chest: 95 } }),
    ).toMatchObject({ recommended_size: "M" });

    // Upgrading lifts the limit at once.
    sandbox.sizing.setPlan("professional");
    const upgraded = await tryOn("cust-101");
    expect(upgraded.isError).toBeFalsy();
    expect(sandbox.sizing.sessions()).toHaveLength(101);
    // 101 stored sessions plus the refused 101st try-on, which reached the route.
    expect(sandbox.sizing.router.count(TRY_ON)).toBe(102);
  });
});

describe("sizing with a wrong SIZING_API_KEY", () => {
  const WRONG = "sz_wrong_key_canary_7777";
  let sandbox: Sandbox;
  let conn: StdioConnection;

  beforeAll(async () => {
    sandbox = await testSandbox();
    conn = await connectStdio(sandboxEnv(sandbox, { SIZING_API_KEY: WRONG }));
  });
  afterAll(async () => {
    await conn?.close();
    await sandbox?.close();
  });

  it("answers HTTP 401 naming SIZING_API_KEY, never echoing the key", async () => {
    for (const [tool, args] of [
      ["sizing_get_catalog", {}],
      ["sizing_recommend_size", { clothing_item_id: TEE._id, measurements: { chest: 95 } }],
    ] as const) {
      const r = await call(conn.client, tool, args);
      expect(r.isError, tool).toBe(true);
      expect(text(r), tool).toContain("HTTP 401, UNAUTHORIZED");
      expect(text(r), tool).toMatch(/check SIZING_API_KEY/);
      expect(JSON.stringify(r), tool).not.toContain(WRONG);
    }
    expect(conn.stderr()).not.toContain(WRONG);
    // A 401 is answered before any route: nothing was served.
    expect(sandbox.sizing.router.count()).toBe(0);
  });
});
