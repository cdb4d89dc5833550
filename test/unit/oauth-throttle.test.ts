// MCP_UNAUTH_RATE with MCP_AUTH=oauth (docs/security.md, "Bounds"). The rate used to apply only
// with MCP_HTTP_TOKEN: with OAuth every request without a valid access token got its 401 at once,
// after a signature check (a JWT naming a trusted issuer) or an introspection request (an opaque
// token) per request. A real OpenID provider (oidc-provider on loopback, test/oauth/idp.ts) issues
// the valid token (client credentials) and answers the introspections; the transport runs in
// process (startHttpTransport on loopback) with the resource server the CLI builds.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allServicesConfig } from "../../scripts/manifest.js";
import { ResourceServer } from "../../src/core/auth/resource-server.js";
import { createOAuthGate } from "../../src/core/http/oauth-gate.js";
import { startHttpTransport, type RunningHttp } from "../../src/core/http/transport.js";
import { createApp, type App } from "../../src/server.js";
import { loadServices } from "../../src/services/registry.js";
import { rpc2026 } from "../harness.js";
import { freePort, SERVICE_CLIENT, serviceToken, startIdp, type Idp } from "../oauth/idp.js";

const RATE = 2;
const BURST = RATE * 2;
const FLOOD = 60;

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");

/** A JWT naming the trusted issuer and a key it publishes, with a signature nobody made: only a check refutes it. */
const forgedJwt = (issuer: string, audience: string) =>
  [
    b64({ alg: "RS256", kid: "e2e-1", typ: "at+jwt" }),
    b64({ iss: issuer, sub: "mallory", aud: audience, exp: Math.floor(Date.now() / 1000) + 600 }),
    randomBytes(256).toString("base64url"),
  ].join(".");

async function post(url: string, token: string): Promise<Response> {
  const res = await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      authorization: `Bearer ${token}`,
    },
    body: "{}",
  });
  await res.text();
  return res;
}

/** FLOOD requests at once, each with its own bad token: how many got 401 and 429, and how long it took. */
async function flood(url: string, badToken: () => string) {
  const started = performance.now();
  const answers = await Promise.all(Array.from({ length: FLOOD }, () => post(url, badToken())));
  const statuses = answers.map((r) => r.status);
  return {
    unauthorized: statuses.filter((s) => s === 401).length,
    throttled: statuses.filter((s) => s === 429).length,
    others: statuses.filter((s) => s !== 401 && s !== 429),
    seconds: (performance.now() - started) / 1000,
    retryAfter: answers.find((r) => r.status === 429)?.headers.get("retry-after"),
  };
}

describe("MCP_UNAUTH_RATE with MCP_AUTH=oauth", { timeout: 60_000 }, () => {
  let idp: Idp;
  let app: App;
  let resourceServer: ResourceServer;
  let publicUrl: string;
  let port: number;
  const running: RunningHttp[] = [];

  /** A transport with its own MCP_UNAUTH_RATE bucket, on `port` (the token's audience) or a free one. */
  async function serve(on = port): Promise<string> {
    const http = await startHttpTransport({
      host: "127.0.0.1",
      port: on,
      allowedOrigins: [],
      logger: app.runtime.logger,
      runtime: app.runtime,
      health: () => ({}),
      unauthRatePerSec: RATE,
      oauth: createOAuthGate(resourceServer, () => undefined, app.runtime.logger),
    });
    running.push(http);
    return http.url;
  }

  beforeAll(async () => {
    port = await freePort();
    publicUrl = `http://127.0.0.1:${port}/mcp`;
    idp = await startIdp({ redirectUri: "http://127.0.0.1:1/cb", resources: [publicUrl], serviceClient: true });
    resourceServer = new ResourceServer({
      publicUrl,
      issuers: [idp.issuer],
      introspection: {
        url: `${idp.issuer}/token/introspection`,
        clientId: SERVICE_CLIENT.id,
        clientSecret: SERVICE_CLIENT.secret,
      },
    });
    expect(await resourceServer.discover()).toEqual([{ issuer: idp.issuer }]);
    app = createApp({ ...allServicesConfig(), transport: "http" }, undefined, await loadServices());
  }, 60_000);
  afterAll(async () => {
    for (const http of running) await http.close();
    await app?.close();
    await idp?.close();
  });

  it("answers forged JWTs past the rate with 429, unchecked; a valid token still gets through", async () => {
    const url = await serve();
    const token = await serviceToken(idp, publicUrl);
    const valid = async () => await rpc2026(url, "tools/list", {}, { headers: { authorization: `Bearer ${token}` } });
    const first = await valid();
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body.result?.tools?.length).toBeGreaterThan(0);

    const checks = resourceServer.checks;
    const forged = await flood(url, () => forgedJwt(idp.issuer, publicUrl));
    expect(forged.others).toEqual([]);
    // The burst, and what the rate refilled while the flood lasted, got their 401; the rest 429.
    expect(forged.unauthorized).toBeGreaterThanOrEqual(1);
    expect(forged.unauthorized).toBeLessThanOrEqual(BURST + Math.ceil(forged.seconds * RATE) + 1);
    expect(forged.throttled).toBe(FLOOD - forged.unauthorized);
    expect(Number(forged.retryAfter)).toBeGreaterThanOrEqual(1);
    // Only the requests answered 401 cost a signature check.
    expect(resourceServer.checks - checks).toBe(forged.unauthorized);

    // The rate is spent: forged tokens now get 429 but for what the rate refilled since (under load
    // the next request can come a refill later), and the valid one is served.
    const after = performance.now();
    const more = await Promise.all(Array.from({ length: 5 }, () => post(url, forgedJwt(idp.issuer, publicUrl))));
    const refilled = Math.floor(((performance.now() - after) / 1000) * RATE) + 1;
    expect(more.filter((r) => r.status === 429).length).toBeGreaterThanOrEqual(more.length - refilled);
    expect(more.every((r) => r.status === 429 || r.status === 401)).toBe(true);
    const again = await valid();
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body.result?.tools?.length).toBe(first.body.result.tools.length);
  });

  it("sends no introspection for opaque tokens past the rate; the 401 challenge within it", async () => {
    const url = await serve(0);
    const before = idp.requests("/token/introspection");
    const lone = await post(url, randomBytes(24).toString("base64url"));
    expect(lone.status).toBe(401);
    expect(lone.headers.get("www-authenticate")).toContain(
      `resource_metadata="${new URL("/.well-known/oauth-protected-resource/mcp", publicUrl).href}"`,
    );
    const opaque = await flood(url, () => randomBytes(24).toString("base64url"));
    expect(opaque.others).toEqual([]);
    expect(opaque.throttled).toBeGreaterThan(0);
    expect(opaque.unauthorized).toBeLessThanOrEqual(BURST + Math.ceil(opaque.seconds * RATE));
    // One introspection per 401 (the first one's included), none for a 429.
    expect(idp.requests("/token/introspection") - before).toBe(1 + opaque.unauthorized);
  });
});
