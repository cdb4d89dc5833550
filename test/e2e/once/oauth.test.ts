// MCP_AUTH=oauth against a real OpenID provider (oidc-provider on loopback) and the SDK v2 client's
// own OAuth (authorization code + PKCE), with headless Chromium signing in and consenting. Both
// protocol eras. What a chat app's connector meets: discovery from the 401, the metadata document,
// tokens for another resource refused, a read-only token stepping up to spend.
import type { Browser } from "playwright-core";
import { haveChromium, launchChromium, sayIfChromiumMissing } from "../../browser.js";
import { UnauthorizedError, type Client } from "@modelcontextprotocol/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Sandbox } from "../../../src/sandbox/index.js";
import {
  call,
  ok,
  request2026,
  sandboxEnv,
  spawnHttpServer,
  testSandbox,
  text,
  type Era,
  type HttpServerProcess,
} from "../../harness.js";
import { completeRedirect, connectWithOAuth, REDIRECT_URI, TestOAuthProvider } from "../../oauth/client.js";
import { freePort, startIdp, type Idp } from "../../oauth/idp.js";
import { cardProblems } from "../../server-card.js";

sayIfChromiumMissing("oauth e2e");

describe.skipIf(!haveChromium)("OAuth 2.1 resource server (MCP_AUTH=oauth)", () => {
  let sandbox: Sandbox;
  let idp: Idp;
  let http: HttpServerProcess;
  let browser: Browser;
  let publicUrl: string;
  let otherResource: string;
  const clients: Client[] = [];

  beforeAll(async () => {
    const port = await freePort();
    publicUrl = `http://127.0.0.1:${port}/mcp`;
    otherResource = `http://127.0.0.1:${port}/not-this-server`;
    [sandbox, idp, browser] = await Promise.all([
      testSandbox(),
      startIdp({ redirectUri: REDIRECT_URI, resources: [publicUrl, otherResource] }),
      launchChromium(),
    ]);
    http = await spawnHttpServer(
      sandboxEnv(sandbox, {
        MCP_AUTH: "oauth",
        MCP_PUBLIC_URL: publicUrl,
        MCP_AUTH_ISSUER: idp.issuer,
        BUILD_CONFIRM_SPEND: "never",
      }),
      ["--port", String(port)],
    );
  }, 120_000);
  afterAll(async () => {
    await Promise.allSettled(clients.map((c) => c.close()));
    await http?.stop();
    await browser?.close();
    await idp?.close();
    await sandbox?.close();
  });

  it("answers unauthenticated requests with the 401 challenge; RFC 9728 metadata at both well-known URLs", async () => {
    const res = await fetch(publicUrl, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: "{}",
    });
    expect(res.status).toBe(401);
    const challenge = res.headers.get("www-authenticate") ?? "";
    const metadataUrl = new URL("/.well-known/oauth-protected-resource/mcp", publicUrl).href;
    expect(challenge).toMatch(/^Bearer /);
    expect(challenge).toContain(`resource_metadata="${metadataUrl}"`);
    // Every scope, so a client that registers itself with this challenge's scope can step up later.
    expect(challenge).toContain('scope="switchboard:read switchboard:write switchboard:spend"');
    for (const url of [metadataUrl, new URL("/.well-known/oauth-protected-resource", publicUrl).href]) {
      const doc = await fetch(url, { headers: { origin: "https://chat.example" } });
      expect(doc.status).toBe(200);
      expect(doc.headers.get("access-control-allow-origin")).toBe("*");
      const body = (await doc.json()) as Record<string, unknown>;
      expect(body).toMatchObject({
        resource: publicUrl,
        authorization_servers: [idp.issuer],
        bearer_methods_supported: ["header"],
      });
      expect(body.scopes_supported).toEqual(["switchboard:read", "switchboard:write", "switchboard:spend"]);
      expect(String(body.resource_documentation)).toMatch(/^https:\/\//);
    }
    // The server card (no token needed) says OAuth is required, and where to start.
    const card = (await (await fetch(`${publicUrl}/server-card`)).json()) as Record<string, any>;
    expect(cardProblems(card)).toEqual([]);
    expect(card.remotes[0].url).toBe(publicUrl);
    expect(card._meta["io.github.switchboard-mcp/authorization"]).toEqual({
      type: "oauth2",
      required: true,
      protectedResourceMetadata: metadataUrl,
      authorizationServers: [idp.issuer],
    });
    // Liveness says nothing more than that to anyone (every user holds a token here).
    expect(await (await fetch(new URL("/healthz", publicUrl))).json()).toEqual({ status: "ok" });
    // A token that is not one, and a JWT from nobody this server trusts: 401 invalid_token.
    for (const token of ["not-a-jwt", "eyJhbGciOiJub25lIn0.eyJpc3MiOiJodHRwOi8vZXZpbC5leGFtcGxlIiwic3ViIjoieCJ9."]) {
      const refused = await fetch(publicUrl, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: "{}",
      });
      expect(refused.status).toBe(401);
      expect(refused.headers.get("www-authenticate")).toMatch(/error="invalid_token"/);
    }
  });

  for (const era of ["legacy", "modern"] as Era[]) {
    describe(era === "legacy" ? "2025-11-25" : "2026-07-28", () => {
      it("finds the authorization server from the 401, signs in; a read-only token steps up to spend", async () => {
        const provider = new TestOAuthProvider();
        // The user grants reading only, at sign-in; the pre-registered client is held to its scopes.
        provider.refuse = ["switchboard:write", "switchboard:spend"];
        const client = await connectWithOAuth(publicUrl, provider, browser, `alice-${era}`, era);
        clients.push(client);
        expect(ours(provider.redirects[0].searchParams.get("scope"))).toEqual([
          "switchboard:read",
          "switchboard:spend",
          "switchboard:write",
        ]);
        expect(ours(provider.grantedScope)).toEqual(["switchboard:read"]);
        expect((await ok<{ credits?: unknown }>(client, "build_get_account")).credits).toEqual(expect.any(Number));

        const projectId = `oauth-step-up-${era}`;
        const denied = await client
          .callTool({ name: "build_create_project", arguments: { projectId } })
          .catch((e: unknown) => e);
        expect(denied).toBeInstanceOf(UnauthorizedError);
        const stepUp = provider.redirects.at(-1)!;
        expect(ours(stepUp.searchParams.get("scope"))).toEqual(["switchboard:read", "switchboard:spend"]);
        expect(stepUp.searchParams.get("resource")).toBe(publicUrl);
        await completeRedirect(publicUrl, provider, browser, `alice-${era}`);
        expect(ours(provider.grantedScope)).toEqual(["switchboard:read", "switchboard:spend"]);
        const created = await ok<{ projectId: string }>(client, "build_create_project", { projectId });
        expect(created.projectId).toBe(projectId);
        // Spend does not include write: a write still asks for its own scope.
        const write = await fetchWith(provider.accessToken!, "tools/call", "build_update_project", {
          projectId,
          label: "x",
        });
        expect(write.status).toBe(403);
        expect(write.headers.get("www-authenticate")).toMatch(
          /error="insufficient_scope", scope="switchboard:read switchboard:spend switchboard:write"/,
        );
      });
    });
  }

  it("refuses a token minted for another resource (no passthrough), naming the audience", async () => {
    const provider = new TestOAuthProvider({ resource: otherResource });
    await connectWithOAuth(publicUrl, provider, browser, "mallory", "modern").then(
      (c) => clients.push(c),
      (err: unknown) => err,
    );
    expect(provider.accessToken).toBeDefined();
    const res = await fetchWith(provider.accessToken!, "tools/list");
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toMatch(
      /error="invalid_token", error_description="[^"]*another resource/,
    );
    expect(http.stderr()).not.toContain(provider.accessToken!);
  });

  it("keeps a 2025 session to the user who opened it", async () => {
    const alice = new TestOAuthProvider();
    const bob = new TestOAuthProvider();
    const a = await connectWithOAuth(publicUrl, alice, browser, "alice-session", "legacy");
    clients.push(a);
    await connectWithOAuth(publicUrl, bob, browser, "bob-session", "legacy").then((c) => clients.push(c));
    const sessionId = (a.transport as unknown as { sessionId?: string }).sessionId!;
    expect(sessionId).toBeTruthy();
    const hijack = await fetch(publicUrl, {
      method: "POST",
      headers: {
        authorization: `Bearer ${bob.accessToken}`,
        "mcp-session-id": sessionId,
        "mcp-protocol-version": "2025-11-25",
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    expect(hijack.status).toBe(403);
    expect(text(await call(a, "build_get_account"))).toMatch(/balance|credits/i);
  });

  /** This server's scopes in a scope string (the client may add offline_access). */
  const ours = (scope: string | null | undefined) =>
    (scope ?? "")
      .split(" ")
      .filter((s) => s.startsWith("switchboard:"))
      .sort();

  /** One raw 2026-07-28 request with a bearer token (what the SDK client would send, minus its retries). */
  async function fetchWith(token: string, method: string, name?: string, args: Record<string, unknown> = {}) {
    const params = name ? { name, arguments: args } : {};
    const { headers, body } = request2026(method, params, { headers: { authorization: `Bearer ${token}` } });
    return fetch(publicUrl, { method: "POST", headers, body });
  }
});
