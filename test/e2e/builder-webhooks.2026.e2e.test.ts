import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Sandbox } from "../../src/sandbox/index.js";
import {
  call,
  connectStdio,
  ok,
  retryStart,
  sandboxEnv,
  testSandbox,
  text,
  until,
  type StdioConnection,
} from "../harness.js";

const API = "/api/v1/vcaas";
const PUT = `PUT ${API}/webhooks`;
const DELETE = `DELETE ${API}/webhooks/:webhookId`;

/** Long enough for the scrubber, and one no scrubber could catch: neither may ever come back. */
const LONG_SECRET = "Bearer whsec_e2e_0123456789abcdef";
const SHORT_SECRET = "q7z";

interface WebhookView {
  id: string;
  url: string;
  event: string;
  headerNames: string[];
}

describe("build_webhooks: subscribe, list, delete, deliveries", () => {
  let sandbox: Sandbox;
  let conn: StdioConnection;
  const hits = (key: string) => sandbox.build.router.count(key);
  const expectNoHeaderValues = (result: unknown) => {
    const json = JSON.stringify(result);
    expect(json).not.toContain(LONG_SECRET);
    expect(json).not.toContain("whsec_e2e");
    expect(json).not.toContain(SHORT_SECRET);
  };

  beforeAll(async () => {
    sandbox = await testSandbox();
    conn = await retryStart(() => connectStdio(sandboxEnv(sandbox)));
  });
  afterAll(async () => {
    await conn?.close();
    await sandbox?.close();
  });

  let finished: WebhookView;

  it("adds a webhook with secret headers, showing only their names", async () => {
    const result = await call(conn.client, "build_add_webhook", {
      url: "https://hooks.example.com/build",
      event: "agent.prompt.finished",
      headers: { Authorization: LONG_SECRET, "X-Tag": SHORT_SECRET },
    });
    expect(result.isError).toBeFalsy();
    expectNoHeaderValues(result);
    finished = result.structuredContent as unknown as WebhookView;
    expect(finished).toMatchObject({
      id: expect.stringMatching(/^[0-9a-f]{24}$/),
      event: "agent.prompt.finished",
      url: "https://hooks.example.com/build",
      headerNames: ["Authorization", "X-Tag"],
    });
    expect(text(result)).toBe(
      `Webhook ${finished.id} added: agent.prompt.finished -> "https://hooks.example.com/build" with headers ` +
        "Authorization, X-Tag (values not shown).",
    );

    const list = await call(conn.client, "build_list_webhooks");
    expectNoHeaderValues(list);
    expect((list.structuredContent as { webhooks: WebhookView[] }).webhooks).toEqual([
      expect.objectContaining({
        id: finished.id,
        headerNames: ["Authorization", "X-Tag"],
        createdAt: expect.any(String),
      }),
    ]);
    expect(text(list)).toMatch(
      new RegExp(
        /^1 webhook\(s\):\n- [0-9a-f]{24}: agent\.prompt\.finished -> /.source +
          /"https:\/\/hooks\.example\.com\/build" \(headers: Authorization, X-Tag\)/.source,
      ),
    );
  });

  it("refuses plain http, unknown events and bad header names before anything is sent", async () => {
    const before = hits(PUT);
    const http = await call(conn.client, "build_add_webhook", {
      url: "http://hooks.example.com/x",
      event: "project.credit_limit.reached",
    });
    expect(text(http)).toMatch(
      /Invalid arguments for build_add_webhook: url: url must be an https:\/\/ URL \(HTTPS only\)/,
    );
    const event = await call(conn.client, "build_add_webhook", {
      url: "https://hooks.example.com/x",
      event: "project.deleted",
    });
    expect(text(event)).toMatch(/event: /);
    const header = await call(conn.client, "build_add_webhook", {
      url: "https://hooks.example.com/x",
      event: "project.credit_limit.reached",
      headers: { "Bad Header": "v" },
    });
    expect(text(header)).toMatch(/headers: each name must be an HTTP header name/);
    expect(text(header)).not.toContain("Bad Header");
    const newline = await call(conn.client, "build_add_webhook", {
      url: "https://hooks.example.com/x",
      event: "project.credit_limit.reached",
      headers: { "X-A": "a\r\nX-B: b" },
    });
    expect(text(newline)).toMatch(/values must not contain line breaks/);
    expect(hits(PUT)).toBe(before);
  });

  it("explains a second webhook for the same event", async () => {
    const again = await call(conn.client, "build_add_webhook", {
      url: "https://other.example.com/hook",
      event: "agent.prompt.finished",
      headers: { "X-Tag": SHORT_SECRET },
    });
    expect(again.isError).toBe(true);
    expect(text(again)).toMatch(
      new RegExp(
        /409[\s\S]*WEBHOOK_EVENT_ALREADY_EXISTS[\s\S]*build_list_webhooks[\s\S]*/.source +
          /delete it \(build_delete_webhook\), then add it again/.source,
      ),
    );
    expectNoHeaderValues(again);
  });

  it("records a delivery (and sends nothing off this machine) when a prompt finishes", async () => {
    const prompt = "Add a footer with the opening hours [minutes=1]";
    await ok(conn.client, "build_start_agent", { projectId: "spring-campaign", prompt, wait: true });
    const deliveries = await until(
      async () => sandbox.build.webhookDeliveries().filter((d) => d.body.event === "agent.prompt.finished"),
      (d) => d.length > 0,
    );
    expect(deliveries).toEqual([
      {
        webhookId: finished.id,
        url: "https://hooks.example.com/build",
        headers: { Authorization: LONG_SECRET, "X-Tag": SHORT_SECRET },
        body: {
          event: "agent.prompt.finished",
          timestamp: expect.any(String),
          data: { projectId: "spring-campaign", status: "done", prompt },
        },
        // Real POSTs go only to https URLs on this machine (test/e2e/builder-push.2026.e2e.test.ts).
        attempts: [],
      },
    ]);
  });

  it("deletes, reads {success} or {deleted}, and explains a second delete", async () => {
    const deleted = await call(conn.client, "build_delete_webhook", { webhookId: finished.id });
    expect(deleted.structuredContent).toMatchObject({ webhookId: finished.id, deleted: true, success: true });
    expect(text(deleted)).toBe(`Webhook ${finished.id} deleted.`);
    expect(await ok(conn.client, "build_list_webhooks")).toEqual({ webhooks: [] });

    const before = hits(DELETE);
    const gone = await call(conn.client, "build_delete_webhook", { webhookId: finished.id });
    expect(gone.isError).toBe(true);
    expect(text(gone)).toMatch(/404[\s\S]*WEBHOOK_NOT_FOUND[\s\S]*may already be deleted/);
    expect(hits(DELETE)).toBe(before + 1);

    // The reference client's shape: {deleted: boolean}.
    const answer = (deletedFlag: boolean) => ({
      kind: "respond" as const,
      response: { status: 200, body: { errors: null, data: { deleted: deletedFlag } } },
    });
    sandbox.build.router.injectFault({ method: "DELETE", path: /\/webhooks\/[^/]+$/, action: answer(true) });
    expect(await ok(conn.client, "build_delete_webhook", { webhookId: "0123456789abcdef01234567" })).toMatchObject({
      deleted: true,
    });
    sandbox.build.router.injectFault({ method: "DELETE", path: /\/webhooks\/[^/]+$/, action: answer(false) });
    const unconfirmed = await call(conn.client, "build_delete_webhook", { webhookId: "0123456789abcdef01234567" });
    expect(unconfirmed.structuredContent).toMatchObject({ deleted: false });
    expect(text(unconfirmed)).toMatch(/did not confirm deleting webhook/);
  });

  it("lets a new URL take the event once the old webhook is gone", async () => {
    const fresh = await ok<WebhookView>(conn.client, "build_add_webhook", {
      url: "https://new.example.com/hook",
      event: "agent.prompt.finished",
    });
    expect(fresh).toMatchObject({ url: "https://new.example.com/hook", headerNames: [] });
    expect(fresh.id).not.toBe(finished.id);
  });
});
