// What a valid token must also carry (issue 28 item 8): a subject (an empty `sub` made every such
// token one tenant, issuer + ""), and switchboard:read to open a 2026-07-28 listen stream (a token
// without it could follow every resource change). The listen test runs a real transport on loopback
// with a real OpenID provider's token (oidc-provider, client credentials); the subject test signs
// its own tokens with an issuer of its own (discovery and JWKS over HTTP on loopback), since no
// certified provider issues an empty subject.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allServicesConfig } from "../../scripts/manifest.js";
import { ResourceServer } from "../../src/core/auth/resource-server.js";
import { createOAuthGate } from "../../src/core/http/oauth-gate.js";
import { startHttpTransport, type RunningHttp } from "../../src/core/http/transport.js";
import { createApp, type App } from "../../src/server.js";
import { loadServices } from "../../src/services/registry.js";
import { request2026 } from "../harness.js";
import { freePort, serviceToken, startIdp, type Idp } from "../oauth/idp.js";

describe("OAuth: a subject, and the read scope for listen streams", { timeout: 60_000 }, () => {
  let idp: Idp;
  let app: App;
  let http: RunningHttp;
  let publicUrl: string;
  let own: { issuer: string; server: Server; sign(claims: Record<string, unknown>): Promise<string> };

  beforeAll(async () => {
    const port = await freePort();
    publicUrl = `http://127.0.0.1:${port}/mcp`;
    idp = await startIdp({ redirectUri: "http://127.0.0.1:1/cb", resources: [publicUrl], serviceClient: true });
    const resourceServer = new ResourceServer({ publicUrl, issuers: [idp.issuer] });
    app = createApp({ ...allServicesConfig(), transport: "http" }, undefined, await loadServices());
    http = await startHttpTransport({
      host: "127.0.0.1",
      port,
      allowedOrigins: [],
      logger: app.runtime.logger,
      runtime: app.runtime,
      health: () => ({}),
      oauth: createOAuthGate(resourceServer, () => undefined, app.runtime.logger),
    });
    own = await ownIssuer();
  }, 60_000);
  afterAll(async () => {
    await http?.close();
    await app?.close();
    await idp?.close();
    own?.server.closeAllConnections();
    own?.server.close();
  });

  it("refuses subscriptions/listen to a token without switchboard:read (403 insufficient_scope)", async () => {
    const listen = async (scope: string) => {
      const token = await serviceToken(idp, publicUrl, scope);
      const { headers, body } = request2026(
        "subscriptions/listen",
        { notifications: { toolsListChanged: true } },
        { headers: { authorization: `Bearer ${token}` } },
      );
      const controller = new AbortController();
      const res = await fetch(http.url, { method: "POST", headers, body, signal: controller.signal });
      controller.abort();
      return res;
    };
    const refused = await listen("switchboard:write switchboard:spend");
    expect(refused.status).toBe(403);
    expect(refused.headers.get("www-authenticate")).toMatch(/error="insufficient_scope".*switchboard:read/);
    // With the read scope the stream opens.
    expect((await listen("switchboard:read")).status).toBe(200);
  });

  it("refuses a token whose sub is empty or missing; a token with a subject passes", async () => {
    const server = new ResourceServer({ publicUrl, issuers: [own.issuer] });
    const claims = { aud: publicUrl, scope: "switchboard:read" };
    const ok = await server.authenticate(`Bearer ${await own.sign({ ...claims, sub: "alice" })}`);
    expect(ok.subject).toBe("alice");
    await expect(server.authenticate(`Bearer ${await own.sign({ ...claims, sub: "" })}`)).rejects.toThrow(
      /names no subject|sub claim/,
    );
    await expect(server.authenticate(`Bearer ${await own.sign(claims)}`)).rejects.toThrow(/sub/);
  });
});

/** An issuer of our own on loopback: OpenID discovery, a JWKS, and tokens signed with its key. */
async function ownIssuer() {
  const { privateKey, publicKey } = await generateKeyPair("RS256", { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid: "own-1", alg: "RS256", use: "sig" };
  const server = createServer((req, res) => {
    const body =
      req.url === "/jwks"
        ? { keys: [jwk] }
        : req.url?.startsWith("/.well-known/")
          ? { issuer, jwks_uri: `${issuer}/jwks` }
          : undefined;
    res.writeHead(body ? 200 : 404, { "content-type": "application/json" }).end(JSON.stringify(body ?? {}));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const sign = (claims: Record<string, unknown>) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: "RS256", kid: "own-1", typ: "at+jwt" })
      .setIssuer(issuer)
      .setIssuedAt()
      .setExpirationTime("5m")
      .sign(privateKey);
  return { issuer, server, sign };
}
