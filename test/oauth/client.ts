// The client side of the OAuth tests: the SDK v2 client's own OAuth (authorization code + PKCE,
// discovery from the server's 401), as a pre-registered public client, one that registers itself
// (dynamic client registration, as a chat app's connector does) or one known by its metadata
// document's URL (CIMD), and headless Chromium (playwright-core) doing what a user does at the
// identity provider: sign in, consent.
import {
  type Client,
  StreamableHTTPClientTransport,
  UnauthorizedError,
  type OAuthClientProvider,
} from "@modelcontextprotocol/client";
import type { Browser, Page } from "playwright-core";
import { newClient, type Era } from "../harness.js";
import { CLIENT_ID } from "./idp.js";

type ClientInformation = Awaited<ReturnType<OAuthClientProvider["clientInformation"]>>;

export const REDIRECT_URI = "http://127.0.0.1:1/oauth/callback";

type Tokens = Awaited<ReturnType<OAuthClientProvider["tokens"]>>;

/**
 * Everything a client keeps between runs of the flow, in memory. `resource` forces the RFC 8707
 * resource it asks for; `dynamic` registers the client at the provider (RFC 7591) instead of using
 * the pre-registered one. `refuse`: the scopes the user unticks at the provider's next consent.
 */
export class TestOAuthProvider implements OAuthClientProvider {
  redirects: URL[] = [];
  refuse: string[] = [];
  /** What the provider answered the registration (dynamic), or the pre-registered client. */
  registered?: ClientInformation;
  private stored?: Tokens;
  private verifier?: string;
  private discovery?: unknown;
  private readonly pinnedResource?: string;

  /** `metadataUrl`: the client identifies itself by the metadata document there (CIMD), not by a registration. */
  readonly clientMetadataUrl?: string;

  constructor(options: { resource?: string; dynamic?: boolean; metadataUrl?: string } = {}) {
    this.pinnedResource = options.resource;
    this.clientMetadataUrl = options.metadataUrl;
    if (!options.dynamic && !options.metadataUrl) this.registered = { client_id: CLIENT_ID };
  }

  get redirectUrl() {
    return REDIRECT_URI;
  }
  get clientMetadata() {
    return {
      client_name: "switchboard e2e",
      redirect_uris: [REDIRECT_URI],
      token_endpoint_auth_method: "none",
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
    };
  }
  clientInformation() {
    return this.registered;
  }
  saveClientInformation(info: NonNullable<ClientInformation>) {
    this.registered = info;
  }
  tokens() {
    return this.stored;
  }
  saveTokens(tokens: Tokens) {
    this.stored = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.redirects.push(url);
  }
  saveCodeVerifier(v: string) {
    this.verifier = v;
  }
  codeVerifier() {
    if (!this.verifier) throw new Error("no code verifier");
    return this.verifier;
  }
  saveDiscoveryState(state: unknown) {
    this.discovery = state;
  }
  discoveryState() {
    return this.discovery as never;
  }
  async validateResourceURL(serverUrl: string | URL, resource?: string): Promise<URL | undefined> {
    return new URL(this.pinnedResource ?? resource ?? String(serverUrl));
  }
  get accessToken(): string | undefined {
    return this.stored?.access_token;
  }
  get grantedScope(): string | undefined {
    return this.stored?.scope;
  }
}

/**
 * At the identity provider: sign in as `user` (the dev login takes any password), consent with
 * every scope ticked but those in `refuse`, and return the callback's query.
 */
export async function authorizeInBrowser(
  browser: Browser,
  url: URL,
  user: string,
  refuse: string[] = [],
): Promise<URLSearchParams> {
  const context = await browser.newContext();
  const page: Page = await context.newPage();
  try {
    let callback: string | undefined;
    await page.route(`${REDIRECT_URI}**`, (route) => {
      callback = route.request().url();
      return route.fulfill({ status: 200, contentType: "text/plain", body: "signed in" });
    });
    // A provider that refuses the request at once redirects there before any page; Chromium then
    // blocks the callback's port 1 before the route sees it, so the redirect is read off the answer.
    page.on("response", (response) => {
      const location = response.headers().location;
      if (location?.startsWith(REDIRECT_URI)) callback ??= location;
    });
    await page.goto(url.href).catch((err: Error) => {
      if (!callback) throw err;
    });
    for (let step = 0; step < 6 && !callback; step++) {
      const login = page.locator('input[name="login"]');
      const consent = page.locator('input[name="prompt"][value="consent"]');
      await Promise.race([
        login.waitFor({ timeout: 30_000 }),
        consent.waitFor({ state: "attached", timeout: 30_000 }),
        page.waitForURL(`${REDIRECT_URI}**`, { timeout: 30_000 }),
      ]).catch(() => undefined);
      if (callback) break;
      if (await login.count()) {
        await login.fill(user);
        await page.locator('input[name="password"]').fill("any-password");
        await Promise.all([page.waitForLoadState(), page.locator("button[type=submit]").click()]);
      } else if (await consent.count()) {
        for (const scope of refuse) {
          const box = page.locator(`input[name="scope"][value="${scope}"]`);
          if (await box.count()) await box.uncheck();
        }
        await Promise.all([page.waitForLoadState(), page.locator("button[type=submit]").click()]);
      }
    }
    if (!callback)
      throw new Error(
        "the authorization flow did not reach the callback; last page: " +
          `${page.url()}\n${(await page.content()).slice(0, 2000)}`,
      );
    return new URL(callback).searchParams;
  } finally {
    await context.close();
  }
}

/**
 * Connects an SDK client with OAuth: the first connect meets the 401, discovers the authorization
 * server, and sends the user to it; the browser signs in; finishAuth trades the code; connect again.
 */
export async function connectWithOAuth(
  url: string,
  provider: TestOAuthProvider,
  browser: Browser,
  user: string,
  era: Era,
  options: ConstructorParameters<typeof Client>[1] = {},
  fetchFn?: typeof fetch,
): Promise<Client> {
  const transport = () =>
    new StreamableHTTPClientTransport(new URL(url), { authProvider: provider, ...(fetchFn ? { fetch: fetchFn } : {}) });
  let client = newClient(options, era);
  try {
    await client.connect(transport());
    return client;
  } catch (err) {
    if (!(err instanceof UnauthorizedError)) throw err;
  }
  await completeRedirect(url, provider, browser, user);
  client = newClient(options, era);
  await client.connect(transport());
  return client;
}

/** After an UnauthorizedError (first sign-in or a step-up): the browser leg and the code exchange. */
export async function completeRedirect(
  url: string,
  provider: TestOAuthProvider,
  browser: Browser,
  user: string,
): Promise<void> {
  const redirect = provider.redirects.at(-1);
  if (!redirect) throw new Error("the client was not sent to the authorization server");
  const params = await authorizeInBrowser(browser, redirect, user, provider.refuse);
  provider.refuse = [];
  const error = params.get("error");
  if (error) throw new Error(`the provider refused: ${error}: ${params.get("error_description")}`);
  await new StreamableHTTPClientTransport(new URL(url), { authProvider: provider }).finishAuth(params);
}

/** What a user does with a connect link: open it, paste the key, submit; returns what the page then says. */
export async function linkKeyInBrowser(browser: Browser, url: string, key: string): Promise<string> {
  const context = await browser.newContext();
  const page = await context.newPage();
  try {
    const response = await page.goto(url);
    const csp = response?.headers()["content-security-policy"] ?? "";
    if (!/default-src 'none'/.test(csp)) throw new Error(`the connect page has no strict CSP: ${csp}`);
    await page.locator("#key").fill(key);
    await page.keyboard.press("Enter");
    await page
      .locator("[role=status], [role=alert]")
      .first()
      .waitFor({ timeout: 30_000 })
      .catch(async (err: Error) => {
        throw new Error(`${err.message}\nat ${page.url()}:\n${await page.content()}`);
      });
    // biome-ignore lint/performance/useDomNodeTextContent: playwright's innerText is the text as shown
    return (await page.locator("main").innerText()).trim();
  } finally {
    await context.close();
  }
}
