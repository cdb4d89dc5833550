// OAuth and linked keys on the hosted topology: two replicas behind nginx sharing one Redis, a
// real OpenID provider (oidc-provider) and headless Chromium. A key linked through one replica is
// used by the other, sealed in Redis (never in clear), survives a restart of every replica, and a
// second user sees none of the first's links, tasks or resources.
import type { Browser } from "playwright-core";
import { haveChromium, launchChromium } from "../browser.js";
import type { Client } from "@modelcontextprotocol/client";
import { afterAll, beforeAll, expect, it } from "vitest";
import { freePort } from "../../scripts/cluster.mjs";
import { call, rpc2026, text, until } from "../harness.js";
import { connectWithOAuth, linkKeyInBrowser, REDIRECT_URI, TestOAuthProvider } from "../oauth/client.js";
import { startIdp, type Idp } from "../oauth/idp.js";
import { describeCluster, startTestCluster, type TestCluster } from "./harness.js";

const TASKS = { extensions: { "io.modelcontextprotocol/tasks": {} } };
const URL_ELICITATION = { capabilities: { elicitation: { form: {}, url: {} } } };

describeCluster("OAuth and linked keys across replicas (MCP_AUTH=oauth, MCP_CREDENTIALS=linked)", () => {
  let cluster: TestCluster;
  let idp: Idp;
  let browser: Browser;
  let publicUrl: string;
  const clients: Client[] = [];

  beforeAll(async () => {
    if (!haveChromium) return;
    const port = await freePort();
    publicUrl = `http://127.0.0.1:${port}/mcp`;
    [idp, browser] = await Promise.all([
      startIdp({ redirectUri: REDIRECT_URI, resources: [publicUrl] }),
      launchChromium(),
    ]);
    cluster = await startTestCluster({
      replicas: 2,
      port,
      credentials: "caller",
      sandboxEnv: { SANDBOX_ACCOUNTS: "2" },
      env: {
        MCP_CREDENTIALS: "linked",
        MCP_AUTH: "oauth",
        MCP_PUBLIC_URL: publicUrl,
        MCP_AUTH_ISSUER: idp.issuer,
        BUILD_CONFIRM_SPEND: "never",
      },
      logLevel: "debug",
    });
  });
  afterAll(async () => {
    await Promise.allSettled(clients.map((c) => c.close()));
    await cluster?.stop();
    await browser?.close();
    await idp?.close();
  });

  async function user(
    name: string,
    era: "legacy" | "modern",
    key: string | undefined,
    provider = new TestOAuthProvider(),
  ) {
    const client = await connectWithOAuth(publicUrl, provider, browser, name, era, URL_ELICITATION);
    clients.push(client);
    const links: string[] = [];
    client.setRequestHandler("elicitation/create", async (request) => {
      const params = request.params as { mode?: string; url?: string };
      if (params.mode !== "url" || !params.url || !key) return { action: "decline" };
      links.push(params.url);
      expect(await linkKeyInBrowser(browser, params.url, key)).toMatch(/is linked/);
      return { action: "accept" };
    });
    return { client, provider, links };
  }

  it("links a key through the balancer, keeps it sealed in Redis, and keeps users apart", async ({ skip }) => {
    if (!haveChromium) skip();
    const [keyA] = cluster.sandbox!.accountKeys.build;
    const alice = await user("alice", "modern", keyA);
    expect((await call(alice.client, "build_get_account")).isError).toBeFalsy();
    expect(alice.links).toHaveLength(1);
    // Every call after the link, whichever replica answers it, acts with the key.
    for (let i = 0; i < 4; i++) expect((await call(alice.client, "build_get_account")).isError).toBeFalsy();
    expect(alice.links).toHaveLength(1);

    const dump = JSON.stringify(await cluster.redis.dump());
    expect(dump).toMatch(/sb:vault:t_/);
    for (const key of cluster.sandbox!.accountKeys.build) expect(dump).not.toContain(key);

    // Bob: no links, no way to read alice's account, none of her tasks.
    const bob = await user("bob", "legacy", undefined);
    const listed = await call(bob.client, "account_linked_services");
    expect(
      (listed.structuredContent as { services: Array<{ linked: boolean }> }).services.every((s) => !s.linked),
    ).toBe(true);
    const read = await bob.client.readResource({ uri: "build://account" }).catch((e: Error) => e);
    expect(String(read instanceof Error ? read.message : JSON.stringify(read))).toMatch(
      /No project build service key is linked/,
    );

    const bearer = (p: TestOAuthProvider) => ({ authorization: `Bearer ${p.accessToken}` });
    const task = (
      await rpc2026(
        publicUrl,
        "tools/call",
        { name: "build_wait", arguments: { projectId: "acme-storefront", until: "agent", timeoutSeconds: 5 } },
        { headers: bearer(alice.provider), capabilities: TASKS },
      )
    ).body.result;
    expect(task?.resultType).toBe("task");
    expect(
      (
        await rpc2026(
          publicUrl,
          "tasks/get",
          { taskId: task.taskId },
          { headers: bearer(alice.provider), capabilities: TASKS },
        )
      ).body.result?.taskId,
    ).toBe(task.taskId);
    expect(
      (
        await rpc2026(
          publicUrl,
          "tasks/get",
          { taskId: task.taskId },
          { headers: bearer(bob.provider), capabilities: TASKS },
        )
      ).body.error?.message,
    ).toMatch(/Task not found/);
  });

  it("lets a resource read on one replica use a key linked through another", async ({ skip }) => {
    if (!haveChromium) skip();
    const [, keyB] = cluster.sandbox!.accountKeys.build;
    const dora = await user("dora", "modern", undefined);
    const headers = { authorization: `Bearer ${dora.provider.accessToken}` };
    const [r1, r2] = cluster.replicas;
    const readOn = async (replica: (typeof cluster.replicas)[number]) =>
      (await rpc2026(replica.url, "resources/read", { uri: "build://account" }, { headers })).body;
    // Both replicas know dora's tenant (without a key) before she links one.
    for (const replica of [r1, r2])
      expect(JSON.stringify(await readOn(replica))).toMatch(/No project build service key is linked/);
    const asked = (
      await rpc2026(
        r1.url,
        "tools/call",
        { name: "build_get_account", arguments: {} },
        { headers, capabilities: { elicitation: { url: {} } } },
      )
    ).body.result;
    expect(asked?.resultType).toBe("input_required");
    const [request] = Object.values(asked.inputRequests as Record<string, { params: { mode: string; url: string } }>);
    expect(request.params.mode).toBe("url");
    expect(await linkKeyInBrowser(browser, request.params.url, keyB)).toMatch(/is linked/);
    const read = await readOn(r2);
    expect(read.error).toBeUndefined();
    expect(read.result.contents[0].text).toMatch(/credits/);
  });

  it("refuses a used connect link after a Redis restart, keeps tickets out of nginx's log, says key lost", async ({
    skip,
  }) => {
    if (!haveChromium) skip();
    const [keyA, keyB] = cluster.sandbox!.accountKeys.build;
    const alice = await user("alice-replay", "modern", keyA);
    expect((await call(alice.client, "build_get_account")).isError).toBeFalsy();
    const [link] = alice.links;
    const headers = { authorization: `Bearer ${alice.provider.accessToken}` };
    const account = (url: string) =>
      rpc2026(url, "tools/call", { name: "build_get_account", arguments: {} }, { headers });
    // Both replicas act with her key before the restart (so each knows she had one).
    for (const replica of cluster.replicas) expect((await account(replica.url)).body.result?.isError).toBeFalsy();
    // Mallory holds Alice's used link (a browser history, a log) and opens it with a fresh cookie.
    const before = await openForm(link);
    expect(before.status).toBe(200);
    await cluster.redis.restart("SIGKILL");
    for (const replica of cluster.replicas)
      await until(
        async () => (await replica.readyz()).status,
        (s) => s === 200,
        20_000,
      );
    // The form she opened before the restart, sent after it with another key: refused, nothing linked.
    const posted = await postForm(link, before, keyB);
    expect(posted.text).toMatch(/made before the server restarted its store/);
    expect(posted.status).toBe(400);
    // Opened again after the restart: refused at once.
    const after = await openForm(link);
    expect(after.status).toBe(400);
    expect(after.text).toMatch(/made before the server restarted its store/);
    const linked = await call(alice.client, "account_linked_services");
    expect(JSON.stringify(linked.structuredContent)).not.toContain(keyB.slice(-4));
    // Her next call (no URL mode here): her key was lost with Redis, and she is told to link it again.
    const next = (await account(cluster.replicas[0].url)).body.result;
    expect(next?.isError).toBe(true);
    expect(next.content[0].text).toMatch(/no longer linked: the server's store restarted and lost it/);
    expect(cluster.nginxLog!()).toMatch(/GET \/connect\/build /);
    expect(cluster.nginxLog!()).not.toMatch(/ticket=/);
  });

  it("keeps a linked key through a restart of every replica", async ({ skip }) => {
    if (!haveChromium) skip();
    const [keyA] = cluster.sandbox!.accountKeys.build;
    const provider = new TestOAuthProvider();
    const before = await user("carol", "legacy", keyA, provider);
    expect((await call(before.client, "build_get_account")).isError).toBeFalsy();
    expect(before.links).toHaveLength(1);
    await before.client.close();
    for (const replica of cluster.replicas) {
      await replica.kill("SIGTERM");
      await replica.start();
    }
    // The same user (same token) on fresh processes: the key is still there, no new link.
    const after = await user("carol", "modern", undefined, provider);
    const account = await call(after.client, "build_get_account");
    expect(account.isError, text(account)).toBeFalsy();
    for (const replica of cluster.replicas)
      for (const key of cluster.sandbox!.accountKeys.build) expect(replica.output()).not.toContain(key);
  });
});

/** A connect page opened with plain HTTP, as anyone holding the link can: its status, text, cookie and CSRF token. */
async function openForm(link: string) {
  const res = await fetch(link);
  const text = await res.text();
  const cookie = (res.headers.get("set-cookie") ?? "").split(";")[0];
  const csrf = /name="csrf" value="([^"]+)"/.exec(text)?.[1] ?? "";
  return { status: res.status, text, cookie, csrf };
}

async function postForm(link: string, form: { cookie: string; csrf: string }, key: string) {
  const url = new URL(link);
  const res = await fetch(`${url.origin}${url.pathname}`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", cookie: form.cookie },
    body: new URLSearchParams({ ticket: url.searchParams.get("ticket")!, csrf: form.csrf, key }),
  });
  return { status: res.status, text: await res.text() };
}
