// Issue 31 in linked mode (MCP_CREDENTIALS=linked, BUILD_WEBHOOKS=on): a user signed in with a real
// OpenID provider links their build key, a wait subscribes their account's webhooks with that key,
// and account_unlink_service removes the subscription the server made before forgetting the key,
// leaving the user's own webhook (another event, another URL) as it was. The server sits behind a
// TLS terminator made at test time (its MCP_PUBLIC_URL is https); the test's own requests trust
// that certificate through their own dispatcher, nothing else does.
import type { Browser } from "playwright-core";
import type { Client } from "@modelcontextprotocol/client";
import { StreamableHTTPClientTransport, UnauthorizedError } from "@modelcontextprotocol/client";
import { Agent, fetch as undiciFetch } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeCert, tlsTerminator, type TestCert, type TlsTerminator } from "../../../scripts/tls.mjs";
import type { Sandbox } from "../../../src/sandbox/index.js";
import { haveChromium, launchChromium, sayIfChromiumMissing } from "../../browser.js";
import {
  call,
  newClient,
  sandboxEnv,
  spawnHttpServer,
  testSandbox,
  until,
  type HttpServerProcess,
} from "../../harness.js";
import { authorizeInBrowser, REDIRECT_URI, TestOAuthProvider } from "../../oauth/client.js";
import { freePort, startIdp, type Idp } from "../../oauth/idp.js";

sayIfChromiumMissing("webhooks-linked e2e");
const API = "/api/v1/vcaas";
const URL_ELICITATION = { capabilities: { elicitation: { form: {}, url: {} } } };
const USERS = {
  url: "https://hooks.example.com/users-own",
  event: "project.credit_limit.reached",
  headers: { "x-users-own": "1" },
};

interface Hook {
  id: string;
  url: string;
  event: string;
  headers?: Record<string, string>;
}

describe.skipIf(!haveChromium)("linked keys with BUILD_WEBHOOKS=on: unlinking removes the server's webhook", () => {
  let cert: TestCert;
  let tls: TlsTerminator;
  let sandbox: Sandbox;
  let idp: Idp;
  let browser: Browser;
  let http: HttpServerProcess;
  let publicUrl: string;
  let agent: Agent;
  const clients: Client[] = [];
  /** fetch that trusts the test certificate (for this test's own requests only). */
  const trusting = ((input: string | URL, init?: RequestInit) =>
    undiciFetch(input, { ...(init as object), dispatcher: agent })) as unknown as typeof fetch;

  const hooks = async (key: string): Promise<Hook[]> => {
    const res = await fetch(`${sandbox.urls.build}${API}/webhooks`, { headers: { "api-key": key } });
    return ((await res.json()) as { data: { webhooks: Hook[] } }).data.webhooks;
  };

  beforeAll(async () => {
    cert = makeCert();
    agent = new Agent({ connect: { ca: cert.cert } });
    tls = await tlsTerminator(cert);
    publicUrl = `https://localhost:${tls.port}/mcp`;
    [sandbox, idp, browser] = await Promise.all([
      testSandbox({ accounts: 1, build: { webhookCa: cert.cert } }),
      startIdp({ redirectUri: REDIRECT_URI, resources: [publicUrl] }),
      launchChromium(),
    ]);
    const env = sandboxEnv(sandbox, {
      MCP_AUTH: "oauth",
      MCP_CREDENTIALS: "linked",
      MCP_PUBLIC_URL: publicUrl,
      MCP_AUTH_ISSUER: idp.issuer,
      MCP_STATE_KEY: "webhooks-linked-state-key-0123456789abcdef",
      BUILD_CONFIRM_SPEND: "never",
      BUILD_WEBHOOKS: "on",
      LOG_LEVEL: "info",
    });
    delete env.BUILD_API_KEY;
    http = await spawnHttpServer(env, ["--port", String(await freePort())]);
    tls.target = new URL(http.url);
  }, 120_000);
  afterAll(async () => {
    await Promise.allSettled(clients.map((c) => c.close()));
    await http?.stop();
    await tls?.close();
    await browser?.close();
    await idp?.close();
    await sandbox?.close();
    await agent?.close();
  });

  /** Signs `user` in at the provider (Chromium) and connects over HTTPS; links `key` when asked. */
  async function signedIn(user: string, key: string) {
    const provider = new TestOAuthProvider();
    const transport = () =>
      new StreamableHTTPClientTransport(new URL(publicUrl), { authProvider: provider, fetch: trusting });
    let client = newClient(URL_ELICITATION, "modern");
    await expect(client.connect(transport())).rejects.toBeInstanceOf(UnauthorizedError);
    const params = await authorizeInBrowser(browser, provider.redirects.at(-1)!, user);
    await transport().finishAuth(params);
    client = newClient(URL_ELICITATION, "modern");
    await client.connect(transport());
    clients.push(client);
    const links: string[] = [];
    client.setRequestHandler("elicitation/create", async (request) => {
      const { mode, url } = request.params as { mode?: string; url?: string };
      if (mode !== "url" || !url) return { action: "decline" };
      links.push(url);
      expect(await linkKey(url, key)).toMatch(/is linked/);
      return { action: "accept" };
    });
    return { client, links };
  }

  /** What a user does with the connect link: open it, paste the key, submit (over the test's HTTPS). */
  async function linkKey(link: string, key: string): Promise<string> {
    const page = await trusting(link);
    const form = await page.text();
    const cookie = (page.headers.get("set-cookie") ?? "").split(";")[0];
    const csrf = /name="csrf" value="([^"]+)"/.exec(form)?.[1] ?? "";
    const url = new URL(link);
    const posted = await trusting(`${url.origin}${url.pathname}`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", cookie },
      body: new URLSearchParams({ ticket: url.searchParams.get("ticket")!, csrf, key }),
    });
    return posted.text();
  }

  it("subscribes with the linked key on the first wait, and unsubscribes (only its own) on unlink", async () => {
    const key = sandbox.accounts.build[0].key;
    // The user's own webhook, on the other event and their own URL, from before the server ran.
    const put = await fetch(`${sandbox.urls.build}${API}/webhooks`, {
      method: "PUT",
      headers: { "api-key": key, "content-type": "application/json" },
      body: JSON.stringify(USERS),
    });
    expect(put.status).toBe(200);
    const [users] = await hooks(key);

    const { client, links } = await signedIn("erin", key);
    expect((await call(client, "build_create_project", { projectId: "linked-hooks" })).isError).toBeFalsy();
    expect(links).toHaveLength(1);
    expect(links[0]).toMatch(new RegExp(`^https://localhost:${tls.port}/connect/build\\?ticket=`));
    const waited = await call(client, "build_wait", { projectId: "linked-hooks", until: "agent", timeoutSeconds: 2 });
    expect(waited.isError).toBeFalsy();
    // The first wait subscribes in the background, with the linked key, to this server's address.
    const ours = (list: Hook[]) => list.filter((h) => h.url.startsWith(`https://localhost:${tls.port}/hooks/build/`));
    const subscribed = await until(
      () => hooks(key),
      (list) => ours(list).length === 1,
    );
    expect(ours(subscribed)[0].event).toBe("agent.prompt.finished");
    expect(subscribed).toContainEqual(users);

    const unlinked = await call(client, "account_unlink_service", { service: "build" });
    expect(unlinked.isError, JSON.stringify(unlinked.content)).toBeFalsy();
    expect(unlinked.structuredContent).toMatchObject({ service: "build", unlinked: true });
    const after = await hooks(key);
    expect(ours(after)).toEqual([]);
    expect(after).toEqual([users]);
    expect(http.stderr()).toMatch(/already has a webhook for project\.credit_limit\.reached that is not this server's/);
    expect(http.stderr()).not.toContain(key);
  });
});
