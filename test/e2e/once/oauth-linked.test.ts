// MCP_CREDENTIALS=linked end to end: users signed in with a real OpenID provider (oidc-provider)
// link their upstream key on the server's own page, opened from a URL-mode elicitation, in headless
// Chromium; the call that asked goes on with it. Both protocol eras. Every MCP message on the wire
// is recorded, and the key must appear in none of them, nor in the server's log.
import type { Browser } from "playwright-core";
import { haveChromium, launchChromium, sayIfChromiumMissing } from "../../browser.js";
import { UnauthorizedError, UrlElicitationRequiredError, type Client } from "@modelcontextprotocol/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Sandbox } from "../../../src/sandbox/index.js";
import {
  call,
  sandboxEnv,
  spawnHttpServer,
  testSandbox,
  text,
  until,
  type Era,
  type HttpServerProcess,
} from "../../harness.js";
import {
  completeRedirect,
  connectWithOAuth,
  linkKeyInBrowser,
  REDIRECT_URI,
  TestOAuthProvider,
} from "../../oauth/client.js";
import { haveOpenssl, type MetadataHost, sayIfOpensslMissing, startMetadataHost } from "../../oauth/cimd.js";
import { ALL_SCOPES, CLIENT_ID, freePort, startIdp, type Idp } from "../../oauth/idp.js";

sayIfChromiumMissing("oauth-linked e2e");
sayIfOpensslMissing("oauth-linked e2e, the Client ID Metadata Document client");
const URL_ELICITATION = { capabilities: { elicitation: { form: {}, url: {} } } };
/** What a user unticks at the provider's consent to sign in with read only. */
const WRITE_AND_SPEND = ["switchboard:write", "switchboard:spend"];

describe.skipIf(!haveChromium)("linked upstream keys (MCP_CREDENTIALS=linked)", () => {
  let sandbox: Sandbox;
  let idp: Idp;
  let metadataHost: MetadataHost | undefined;
  let http: HttpServerProcess;
  let browser: Browser;
  let publicUrl: string;
  let buildKeys: string[];
  const clients: Client[] = [];
  /** Every MCP request body and answer any test client sent or got. */
  const wire: string[] = [];
  const recordingFetch: typeof fetch = async (input, init) => {
    if (typeof init?.body === "string") wire.push(init.body);
    const response = await fetch(input, init);
    const copy = response.clone();
    void copy.text().then(
      (t) => wire.push(t),
      () => undefined,
    );
    return response;
  };

  beforeAll(async () => {
    const port = await freePort();
    publicUrl = `http://127.0.0.1:${port}/mcp`;
    // The metadata document lists all three scopes, as docs/deployment.md#oauth asks.
    metadataHost = haveOpenssl
      ? await startMetadataHost(REDIRECT_URI, `openid offline_access ${ALL_SCOPES}`)
      : undefined;
    const metadataDocuments = metadataHost && { ca: metadataHost.ca };
    [sandbox, idp, browser] = await Promise.all([
      testSandbox({ accounts: 2 }),
      startIdp({ redirectUri: REDIRECT_URI, resources: [publicUrl], metadataDocuments }),
      launchChromium(),
    ]);
    buildKeys = sandbox.accounts.build.map((a) => a.key);
    const env = sandboxEnv(sandbox, {
      MCP_AUTH: "oauth",
      MCP_CREDENTIALS: "linked",
      MCP_PUBLIC_URL: publicUrl,
      MCP_AUTH_ISSUER: idp.issuer,
      BUILD_CONFIRM_SPEND: "never",
    });
    delete env.BUILD_API_KEY;
    http = await spawnHttpServer(env, ["--port", String(port)]);
  }, 120_000);
  afterAll(async () => {
    if (process.env.OAUTH_DEBUG) (await import("node:fs")).writeFileSync(process.env.OAUTH_DEBUG, http?.stderr() ?? "");
    await Promise.allSettled(clients.map((c) => c.close()));
    await http?.stop();
    await browser?.close();
    await idp?.close();
    await metadataHost?.close();
    await sandbox?.close();
  });

  const linkInBrowser = (url: string, key: string) => linkKeyInBrowser(browser, url, key);

  /** A client whose elicitation handler links `key` in the browser (or declines when `key` is undefined). */
  async function signedIn(
    user: string,
    era: Era,
    key: string | undefined,
    options: { urlMode?: boolean; dynamic?: boolean; metadataUrl?: string; refuse?: string[] } = {},
  ) {
    const provider = new TestOAuthProvider({ dynamic: options.dynamic, metadataUrl: options.metadataUrl });
    provider.refuse = options.refuse ?? [];
    const client = await connectWithOAuth(
      publicUrl,
      provider,
      browser,
      user,
      era,
      options.urlMode === false ? {} : URL_ELICITATION,
      recordingFetch,
    );
    clients.push(client);
    const links: string[] = [];
    const elicitationIds: string[] = [];
    const completed: string[] = [];
    if (options.urlMode !== false) {
      if (era === "legacy")
        client.setNotificationHandler(
          "notifications/elicitation/complete",
          (n) => void completed.push((n.params as { elicitationId: string }).elicitationId),
        );
      client.setRequestHandler("elicitation/create", async (request) => {
        const params = request.params as { mode?: string; url?: string; elicitationId?: string };
        if (params.mode !== "url" || !params.url) return { action: "decline" };
        links.push(params.url);
        if (params.elicitationId) elicitationIds.push(params.elicitationId);
        if (!key) return { action: "decline" };
        expect(await linkInBrowser(params.url, key)).toMatch(/is linked/);
        return { action: "accept" };
      });
    }
    return { client, provider, links, elicitationIds, completed };
  }

  for (const era of ["legacy", "modern"] as Era[]) {
    describe(era === "legacy" ? "2025-11-25" : "2026-07-28", () => {
      it("asks for the key through a page when a tool needs it, and the call goes on with it", async () => {
        const key = buildKeys[0];
        const { client, links, elicitationIds, completed } = await signedIn(`alice-${era}`, era, key);
        const account = await call(client, "build_get_account");
        expect(account.isError).toBeFalsy();
        // 2025-11-25: the URL elicitation has an id, and the server said when it was complete.
        if (era === "legacy") {
          expect(elicitationIds).toHaveLength(1);
          await until(
            async () => completed,
            (c) => c.length === 1,
          );
          expect(completed).toEqual(elicitationIds);
        }
        expect(account.structuredContent).toMatchObject({ credits: expect.any(Number) });
        expect(links).toHaveLength(1);
        expect(links[0]).toMatch(new RegExp(`^${publicUrl.replace("/mcp", "")}/connect/build\\?ticket=`));
        // Linked once: the next call needs no link.
        expect((await call(client, "build_get_account")).isError).toBeFalsy();
        expect(links).toHaveLength(1);
        const listed = await call(client, "account_linked_services");
        expect(listed.structuredContent).toMatchObject({
          services: expect.arrayContaining([
            {
              service: "build",
              title: expect.any(String),
              linked: true,
              lastFour: key.slice(-4),
              linkedAt: expect.any(String),
            },
          ]),
        });
        expect(text(listed)).toContain(key.slice(-4));
      });

      it("shows a second user nothing of the first: no link, their own key, their own projects", async () => {
        const other = buildKeys[1];
        const { client: bob } = await signedIn(`bob-${era}`, era, undefined);
        const listed = await call(bob, "account_linked_services");
        expect(
          (listed.structuredContent as { services: Array<{ linked: boolean }> }).services.every((s) => !s.linked),
        ).toBe(true);
        const declined = await call(bob, "build_get_project", { projectId: "acme-storefront" });
        expect(declined.isError).toBe(true);
        expect(text(declined)).toMatch(/No project build service key was linked.*nothing was sent upstream/s);
        const { client: carol } = await signedIn(`carol-${era}`, era, other);
        expect((await call(carol, "build_get_account")).isError).toBeFalsy();
        const carolList = await call(carol, "account_linked_services");
        expect(JSON.stringify(carolList.structuredContent)).toContain(other.slice(-4));
        expect(JSON.stringify(carolList.structuredContent)).not.toContain(buildKeys[0].slice(-4));
      });

      it("tells a client without URL mode how to link, without ever asking for the key in the chat", async () => {
        const { client } = await signedIn(`dave-${era}`, era, undefined, { urlMode: false });
        if (era === "legacy") {
          const err = await client.callTool({ name: "build_get_account", arguments: {} }).catch((e: unknown) => e);
          expect(err).toBeInstanceOf(UrlElicitationRequiredError);
          const [elicitation] = (err as UrlElicitationRequiredError).elicitations;
          expect(elicitation).toMatchObject({
            mode: "url",
            url: expect.stringContaining("/connect/build?ticket="),
            elicitationId: expect.any(String),
          });
        } else {
          const result = await call(client, "build_get_account");
          expect(result.isError).toBe(true);
          expect(text(result)).toMatch(/\/connect\/build\?ticket=.*never type the key into the chat/s);
        }
      });
    });
  }

  it("unlinks on request (a write: the token steps up), and the next call asks again", async () => {
    const key = buildKeys[0];
    const { client, provider, links } = await signedIn("erin", "modern", key, { refuse: WRITE_AND_SPEND });
    expect((await call(client, "build_get_account")).isError).toBeFalsy();
    const stepUp = await client
      .callTool({ name: "account_unlink_service", arguments: { service: "build" } })
      .catch((e: unknown) => e);
    expect(stepUp).toBeInstanceOf(UnauthorizedError);
    await completeRedirect(publicUrl, provider, browser, "erin");
    expect((await call(client, "account_unlink_service", { service: "build" })).structuredContent).toEqual({
      service: "build",
      unlinked: true,
    });
    expect((await call(client, "build_get_account")).isError).toBeFalsy();
    expect(links).toHaveLength(2);
  });

  // A chat app's connector registers itself (RFC 7591) with the scope of the first challenge, and the
  // provider holds it to that registration: the step-up to spend works only if it covered spending.
  for (const era of ["legacy", "modern"] as Era[]) {
    it(`a self-registering chat app signs in with read, links a key, and steps up to spend (${era})`, async () => {
      const registrations = idp.requests("/reg");
      const { client, provider, links } = await signedIn(`grace-${era}`, era, buildKeys[0], {
        dynamic: true,
        refuse: WRITE_AND_SPEND,
      });
      expect(idp.requests("/reg")).toBe(registrations + 1);
      expect(provider.registered?.client_id).not.toBe(CLIENT_ID);
      expect(provider.grantedScope?.split(" ").filter((s) => s.startsWith("switchboard:"))).toEqual([
        "switchboard:read",
      ]);
      expect((await call(client, "build_get_account")).isError).toBeFalsy();
      expect(links).toHaveLength(1);
      const projectId = `dcr-step-up-${era}`;
      const stepUp = await client
        .callTool({ name: "build_create_project", arguments: { projectId } })
        .catch((e: unknown) => e);
      expect(stepUp).toBeInstanceOf(UnauthorizedError);
      expect(provider.redirects.at(-1)?.searchParams.get("scope")).toContain("switchboard:spend");
      await completeRedirect(publicUrl, provider, browser, `grace-${era}`);
      expect(provider.grantedScope).toContain("switchboard:spend");
      const created = await call(client, "build_create_project", { projectId });
      expect(created.isError, text(created)).toBeFalsy();
      expect(created.structuredContent).toMatchObject({ projectId });
      // Still the one registration, and still the one link.
      expect(idp.requests("/reg")).toBe(registrations + 1);
      expect(links).toHaveLength(1);
    });
  }

  // A client known by the URL of its metadata document registers nothing: the provider fetches the
  // document (over TLS it trusts) and holds the client to it. The same sign-in, link and step-up.
  it.skipIf(!haveOpenssl)(
    "a client known by its metadata document signs in, links a key, steps up to spend",
    async () => {
      const host = metadataHost!;
      const registrations = idp.requests("/reg");
      const { client, provider, links } = await signedIn("ivan", "modern", buildKeys[0], {
        metadataUrl: host.clientId,
        refuse: WRITE_AND_SPEND,
      });
      expect(host.fetches()).toBeGreaterThan(0);
      expect(provider.redirects[0].searchParams.get("client_id")).toBe(host.clientId);
      expect(provider.grantedScope?.split(" ").filter((s) => s.startsWith("switchboard:"))).toEqual([
        "switchboard:read",
      ]);
      expect((await call(client, "build_get_account")).isError).toBeFalsy();
      const projectId = "cimd-step-up";
      const stepUp = await client
        .callTool({ name: "build_create_project", arguments: { projectId } })
        .catch((e: unknown) => e);
      expect(stepUp).toBeInstanceOf(UnauthorizedError);
      expect(provider.redirects.at(-1)?.searchParams.get("client_id")).toBe(host.clientId);
      await completeRedirect(publicUrl, provider, browser, "ivan");
      expect(provider.grantedScope).toContain("switchboard:spend");
      const created = await call(client, "build_create_project", { projectId });
      expect(created.isError, text(created)).toBeFalsy();
      expect(idp.requests("/reg")).toBe(registrations);
      expect(links).toHaveLength(1);
    },
  );

  it("tells a user on the connect page which service, where its key is and what it looks like", async () => {
    const { client, links } = await signedIn("heidi", "legacy", undefined);
    await call(client, "build_get_account");
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(links[0]);
      // biome-ignore lint/performance/useDomNodeTextContent: playwright's innerText is the text as shown
      const form = await page.locator("main").innerText();
      expect(await page.locator("h1").innerText()).toBe("Link your Totalum App Builder key");
      expect(form).toMatch(/in the API keys section of its settings\. It starts with tlm_sk_/);
      expect(form).toContain("ask your assistant to unlink it");
      expect(form).not.toMatch(/account_unlink_service|project build service/);
      expect(await page.locator("#key").getAttribute("aria-describedby")).toBe("key-hint");
      await page.locator("#key").fill(buildKeys[1]);
      await page.keyboard.press("Enter");
      await page.locator("[role=status]").waitFor({ timeout: 30_000 });
      expect(await page.locator("h1").innerText()).toBe("Totalum App Builder key linked");
      expect(await page.locator("main").innerText()).toMatch(/Your Totalum App Builder key ending in/);
    } finally {
      await context.close();
    }
  });

  it("guards the connect page: a forged ticket, a post without its CSRF cookie, a used link, a wrong key", async () => {
    const base = publicUrl.replace(/\/mcp$/, "");
    expect((await fetch(`${base}/connect/build?ticket=forged.signature`)).status).toBe(400);
    const { client, links } = await signedIn("frank", "legacy", undefined);
    await call(client, "build_get_account");
    const link = links[0];
    const ticket = new URL(link).searchParams.get("ticket")!;
    const noCookie = await fetch(`${base}/connect/build`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ ticket, csrf: "x", key: buildKeys[0] }),
    });
    expect(noCookie.status).toBe(403);
    const crossSite = await fetch(`${base}/connect/build`, {
      method: "POST",
      headers: { origin: "https://evil.example", "content-type": "application/x-www-form-urlencoded" },
      body: "ticket=x",
    });
    expect(crossSite.status).toBe(403);
    expect(await linkInBrowser(link, "tlm_sk_wrong_key_0000000000000000")).toMatch(/refused this key \(HTTP 401\)/);
    expect(await linkInBrowser(link, buildKeys[0])).toMatch(/is linked/);
    expect(await linkInBrowser(link, buildKeys[0]).catch((e: Error) => e.message)).toMatch(/already used/);
  });

  it("never puts a key in any MCP message, either way, nor in the server's log", async () => {
    expect(wire.length).toBeGreaterThan(20);
    for (const key of buildKeys) {
      expect(wire.filter((m) => m.includes(key))).toEqual([]);
      expect(http.stderr()).not.toContain(key);
    }
  });
});
