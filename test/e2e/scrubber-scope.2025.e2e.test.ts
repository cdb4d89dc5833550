// Issue 18 item 12, issue 23 item 8: a secret value one caller supplies is scrubbed from the outputs
// of the call that supplied it and of its own project, never from everybody's answers. A secret
// may be any word ("document"): kept process-wide it broke every caller's views (their inline
// script no longer matched the sha256 in their CSP) and censored ordinary words in later answers.
import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Sandbox } from "../../src/sandbox/index.js";
import { connectStdio, ok, sandboxEnv, testSandbox, text, type StdioConnection } from "../harness.js";

const VIEWS = ["build-console", "fit-card", "fleet-map"].map((v) => `ui://switchboard/${v}.html`);

/** The view's HTML, and whether its inline script and style still match the hashes its CSP names. */
async function readView(conn: StdioConnection, uri: string): Promise<{ html: string; intact: boolean }> {
  const { contents } = await conn.client.readResource({ uri });
  const html = String((contents[0] as { text: string }).text);
  const csp = /http-equiv="Content-Security-Policy" content="([^"]+)"/.exec(html)?.[1] ?? "";
  const hash = (s: string) => `'sha256-${createHash("sha256").update(s, "utf8").digest("base64")}'`;
  const script = /<script>([\s\S]*)<\/script>/.exec(html)?.[1] ?? "";
  const style = /<style>([\s\S]*?)<\/style>/.exec(html)?.[1] ?? "";
  return { html, intact: csp.includes(`script-src ${hash(script)}`) && csp.includes(`style-src ${hash(style)}`) };
}

describe("caller-supplied secrets stay with their call and their project", () => {
  let sandbox: Sandbox;
  let conn: StdioConnection;
  const before = new Map<string, string>();

  beforeAll(async () => {
    sandbox = await testSandbox();
    conn = await connectStdio(sandboxEnv(sandbox, { BUILD_CONFIRM_SPEND: "never" }));
    for (const uri of VIEWS) {
      const view = await readView(conn, uri);
      expect(view.intact, uri).toBe(true);
      before.set(uri, view.html);
    }
  });
  afterAll(async () => {
    await conn?.close();
    await sandbox?.close();
  });

  it("a launch with the secret value `document` leaves every view byte for byte as built", async () => {
    const launched = await ok<{ projectId: string }>(conn.client, "build_launch_project", {
      projectId: "poison-check",
      prompt: "A small page [minutes=5]",
      secrets: [{ secretName: "WORD", secretValue: "document" }],
    });
    expect(launched.projectId).toMatch(/^poison-check/);
    for (const uri of VIEWS) {
      const view = await readView(conn, uri);
      expect(view.html.includes("[redacted]"), uri).toBe(false);
      expect(view.intact, uri).toBe(true);
      expect(view.html === before.get(uri), uri).toBe(true);
    }
  });

  it("a secret value that is a common word is not redacted from other projects' answers", async () => {
    const own = await conn.client.callTool({
      name: "build_set_secret",
      arguments: {
        projectId: "acme-storefront",
        secretName: "MODE",
        secretValue: "production",
        environment: "production",
      },
    });
    expect(own.isError).toBeFalsy();
    // Another project: its own secret's environment, and its details, keep the word.
    const other = await ok<{ environment: string }>(conn.client, "build_set_secret", {
      projectId: "booking-app",
      secretName: "TIER",
      secretValue: "tier-value-1234",
      environment: "production",
    });
    expect(other.environment).toBe("production");
    const details = await conn.client.callTool({ name: "build_get_project", arguments: { projectId: "booking-app" } });
    expect(JSON.stringify(details)).toContain('"environment":"production"');
    expect(JSON.stringify(details)).not.toContain("[redacted]");
  });

  it("build_get_env_names shows its labels and names, and its values redact nothing later", async () => {
    const env = await conn.client.callTool({
      name: "build_get_env_names",
      arguments: { projectId: "internal-dashboard" },
    });
    expect(env.isError).toBeFalsy();
    expect(text(env)).toMatch(/- development: NODE_ENV, NEXT_PUBLIC_APP_URL/);
    expect(text(env)).toMatch(/- production: NODE_ENV/);
    expect(text(env)).not.toContain("[redacted]");
    // NODE_ENV=development and =production were in that .env: the words still pass everywhere.
    const set = await conn.client.callTool({
      name: "build_set_secret",
      arguments: {
        projectId: "internal-dashboard",
        secretName: "LATER",
        secretValue: "later-value-5678",
        environment: "development",
      },
    });
    expect(text(set)).toMatch(/\(development\)/);
    const limits = await conn.client.callTool({
      name: "build_set_credit_limits",
      arguments: { projectId: "acme-storefront", maxInfrastructureCreditsPerMonth: 500 },
    });
    expect(JSON.stringify(limits)).not.toContain("[redacted]");
    // A secret-like .env value (DATABASE_URL carries credentials) is still scrubbed where that project echoes it.
    const dev = sandbox.build.storedSecretValue("internal-dashboard", "DATABASE_URL")!;
    expect(JSON.stringify(env)).not.toContain(dev);
  });
});
