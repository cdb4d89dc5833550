import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Sandbox } from "../../src/sandbox/index.js";
import { call, connectStdio, ok, retryStart, sandboxEnv, testSandbox, text, type StdioConnection } from "../harness.js";

const API = "/api/v1/vcaas";
const CONNECT = `POST ${API}/projects/:projectId/figma/connect`;
const VALIDATE = `POST ${API}/figma/validate`;

const GOOD = "figd_e2e_good_token_0123456789";
const EXPIRING = "figd_e2e_expiring_token_0123456789";

describe("build_figma: connect, status, disconnect, validate", () => {
  let sandbox: Sandbox;
  let conn: StdioConnection;
  const hits = (key: string) => sandbox.build.router.count(key);
  /** Nothing the caller sent as a token may come back, in text or structured content. */
  const expectNoToken = (result: unknown, token: string) => expect(JSON.stringify(result)).not.toContain(token);

  beforeAll(async () => {
    sandbox = await testSandbox();
    conn = await retryStart(() => connectStdio(sandboxEnv(sandbox)));
  });
  afterAll(async () => {
    await conn?.close();
    await sandbox?.close();
  });

  it("is off by default and lists its four tools when enabled", async () => {
    const names = (await conn.client.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(
      expect.arrayContaining([
        "build_connect_figma",
        "build_get_figma_status",
        "build_disconnect_figma",
        "build_validate_figma_token",
      ]),
    );
    const defaults = await retryStart(() => connectStdio(sandboxEnv(sandbox), ["--toolsets", "build"]));
    try {
      expect((await defaults.client.listTools()).tools.map((t) => t.name)).not.toContain("build_connect_figma");
    } finally {
      await defaults.close();
    }
  });

  it("connects a project, never echoing the token, and reports the account", async () => {
    const result = await call(conn.client, "build_connect_figma", { projectId: "spring-campaign", token: GOOD });
    expect(result.isError).toBeFalsy();
    expectNoToken(result, GOOD);
    expect(result.structuredContent).toMatchObject({
      projectId: "spring-campaign",
      connected: true,
      account: { handle: expect.stringMatching(/^designer-/) },
    });
    expect(text(result)).toMatch(/Figma connected to spring-campaign as "designer-/);
    expect(sandbox.build.project("spring-campaign")?.figma?.handle).toMatch(/^designer-/);

    const status = await call(conn.client, "build_get_figma_status", { projectId: "spring-campaign" });
    expect(status.structuredContent).toMatchObject({ connected: true, connectedAt: expect.any(String) });
    expect(status.structuredContent).not.toHaveProperty("tokenValid");
    expect(text(status)).toMatch(
      /^Figma is connected to spring-campaign as "designer-[^"]+" \(designer-.*@example\.com\) since /,
    );
  });

  it("re-checks the token live only when asked; a failed check leaves it connected", async () => {
    const checked = await ok(conn.client, "build_get_figma_status", { projectId: "spring-campaign", verify: true });
    expect(checked).toMatchObject({ connected: true, tokenValid: true });

    await ok(conn.client, "build_connect_figma", { projectId: "booking-app", token: EXPIRING });
    const failed = await call(conn.client, "build_get_figma_status", { projectId: "booking-app", verify: true });
    expect(failed.isError).toBeFalsy();
    expect(failed.structuredContent).toMatchObject({
      connected: true,
      tokenValid: false,
      tokenError: expect.stringMatching(/expired/),
    });
    expect(text(failed)).toMatch(
      /live check failed: ".*expired".*still connected; reconnect with a new token \(build_connect_figma\)/,
    );
    expectNoToken(failed, EXPIRING);
    expect(sandbox.build.project("booking-app")?.figma).toBeDefined();
  });

  it("refuses a token with whitespace or a URL before anything is sent", async () => {
    const before = hits(CONNECT);
    const spaced = await call(conn.client, "build_connect_figma", {
      projectId: "spring-campaign",
      token: "figd_abc def_0123456789",
    });
    expect(spaced.isError).toBe(true);
    expect(text(spaced)).toMatch(/Invalid arguments for build_connect_figma: token: token must not contain whitespace/);
    const url = await call(conn.client, "build_validate_figma_token", { token: "https://www.figma.com/file/abc" });
    expect(text(url)).toMatch(/token: token must be the token itself, not a URL/);
    expect(hits(CONNECT)).toBe(before);
  });

  it("passes the service's refusals on with a next step, without the token", async () => {
    const short = "figd_short_tok";
    const malformed = await call(conn.client, "build_connect_figma", { projectId: "spring-campaign", token: short });
    expect(malformed.isError).toBe(true);
    expect(text(malformed)).toMatch(/FIGMA_TOKEN_MALFORMED/);
    expect(text(malformed)).toMatch(/start with figd_/);
    expectNoToken(malformed, short);

    const revoked = "figd_e2e_invalid_token_0123456789";
    const invalid = await call(conn.client, "build_connect_figma", { projectId: "spring-campaign", token: revoked });
    expect(text(invalid)).toMatch(/FIGMA_TOKEN_INVALID[\s\S]*create a new personal access token/);
    expectNoToken(invalid, revoked);
    // A failed connect changes nothing: the first account stays.
    expect(await ok(conn.client, "build_get_figma_status", { projectId: "spring-campaign" })).toMatchObject({
      connected: true,
    });
  });

  it("disconnects, and disconnecting again is fine", async () => {
    expect(await ok(conn.client, "build_disconnect_figma", { projectId: "spring-campaign" })).toMatchObject({
      disconnected: true,
    });
    const again = await call(conn.client, "build_disconnect_figma", { projectId: "spring-campaign" });
    expect(again.isError).toBeFalsy();
    expect(text(again)).toBe("Figma is disconnected from spring-campaign.");
    const status = await call(conn.client, "build_get_figma_status", { projectId: "spring-campaign" });
    expect(status.structuredContent).toMatchObject({ connected: false });
    expect(text(status)).toBe("Figma is not connected to spring-campaign.");
  });

  it("validates a token without a project, then hits the 10-per-minute limit without retrying", async () => {
    const valid = await call(conn.client, "build_validate_figma_token", { token: GOOD });
    expect(valid.structuredContent).toMatchObject({ valid: true, account: { handle: expect.any(String) } });
    expect(text(valid)).toMatch(/^The token is valid: it belongs to "designer-/);
    expectNoToken(valid, GOOD);

    const rejected = await call(conn.client, "build_validate_figma_token", { token: "figd_e2e_noscope_token_012345" });
    expect(rejected.isError).toBeFalsy();
    expect(rejected.structuredContent).toMatchObject({ valid: false });
    expect(text(rejected)).toMatch(/^Figma does not accept this token \(".*scope.*"\); create a new one/);

    // Every call is one check upstream: the limit shows after at most 10 more.
    let limited: Awaited<ReturnType<typeof call>> | undefined;
    for (let i = 0; i < 11 && !limited; i++) {
      const before = hits(VALIDATE);
      const r = await call(conn.client, "build_validate_figma_token", { token: GOOD });
      expect(hits(VALIDATE)).toBe(before + 1);
      if (r.isError) limited = r;
    }
    expect(limited).toBeDefined();
    expect(text(limited)).toMatch(/429[\s\S]*RATE_LIMITED[\s\S]*10 per minute per account/);

    // A live status check shares the limit; a plain status read is not a check.
    const status = await call(conn.client, "build_get_figma_status", { projectId: "booking-app", verify: true });
    expect(text(status)).toMatch(/RATE_LIMITED/);
    expect(await ok(conn.client, "build_get_figma_status", { projectId: "booking-app" })).toMatchObject({
      connected: true,
    });
  });
});
