import { z } from "zod";
import { trimLine } from "../../../core/base/text.js";
import type { ToolContext } from "../../../core/tools/tool.js";
import { defineTool } from "../deps.js";
import { WEBHOOK_EVENTS, type Webhook } from "../api/webhooks.js";
import * as s from "../schemas.js";

/**
 * Account webhooks (reference §14; all free): one subscription per event for the whole account.
 * Header values often carry a shared secret: they are registered as secrets and never echoed, only
 * their names are shown (short values would escape the scrubber, so they are dropped outright).
 */
const headerName = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

const webhookView = z.looseObject({
  id: z.string(),
  url: z.string().optional(),
  event: z.string().optional(),
  createdAt: z.string().optional(),
  updatedAt: z.string().optional(),
  headerNames: z.array(z.string()).describe("Header values are never shown"),
});

/** The upstream echoes headers with their values: keep the names only. */
function hideHeaders(webhook: Webhook, ctx: ToolContext): z.infer<typeof webhookView> {
  const { headers, ...rest } = webhook;
  const names = headers && typeof headers === "object" ? Object.keys(headers) : [];
  for (const name of names) {
    const value = headers![name];
    if (typeof value === "string") ctx.secret(value);
  }
  return { ...rest, id: String(webhook.id ?? ""), headerNames: names };
}

const line = (w: z.infer<typeof webhookView>) => {
  const headers = w.headerNames.length ? ` (headers: ${w.headerNames.join(", ")})` : "";
  const since = w.createdAt ? `, since ${w.createdAt}` : "";
  return `- ${w.id}: ${w.event ?? "?"} -> "${trimLine(w.url, 200)}"${headers}${since}`;
};

export function webhookTools() {
  return [
    defineTool({
      name: "build_add_webhook",
      upstream: "PUT /webhooks",
      title: "Add webhook",
      description:
        "Subscribe an HTTPS URL to an account-wide event (one webhook per event; deliveries carry " +
        "data.projectId). To change its URL, delete it first.",
      toolset: "build_webhooks",
      kind: "write",
      input: {
        url: z
          .string()
          .url({ message: "url must be an https:// URL", abort: true })
          .regex(/^https:\/\//i, "url must be an https:// URL (HTTPS only)"),
        event: z.enum(WEBHOOK_EVENTS),
        headers: z
          .record(z.string(), z.string())
          .refine((h) => Object.keys(h).every((name) => headerName.test(name)), "each name must be an HTTP header name")
          .refine(
            (h) => Object.values(h).every((value) => !/[\r\n]/.test(value)),
            "header values must not contain line breaks",
          )
          .optional()
          .describe("Sent with each delivery; values kept secret"),
      },
      output: webhookView,
      verify: ({ event }) => `call build_list_webhooks and look for event ${event}`,
      run: async ({ url, event, headers }, ctx) => {
        for (const value of Object.values(headers ?? {})) ctx.secret(value);
        const data = await ctx.deps.client.webhooks.subscribe(
          { url, event, ...(headers ? { headers } : {}) },
          ctx.signal,
        );
        return hideHeaders({ url, event, ...data, headers: data.headers ?? headers }, ctx);
      },
      render: (w) => {
        const headers = w.headerNames.length ? ` with headers ${w.headerNames.join(", ")} (values not shown)` : "";
        return `Webhook ${w.id} added: ${w.event} -> "${trimLine(w.url, 200)}"${headers}.`;
      },
    }),

    defineTool({
      name: "build_list_webhooks",
      upstream: "GET /webhooks",
      title: "List webhooks",
      description: "The account's webhook subscriptions (header values are not shown).",
      toolset: "build_webhooks",
      kind: "read",
      input: {},
      output: z.object({ webhooks: z.array(webhookView) }),
      run: async (_input, ctx) => {
        const data = await ctx.deps.client.webhooks.list(ctx.signal);
        return { webhooks: (data.webhooks ?? []).map((w) => hideHeaders(w, ctx)) };
      },
      render: (r) =>
        r.webhooks.length ? `${r.webhooks.length} webhook(s):\n${r.webhooks.map(line).join("\n")}` : "No webhooks.",
    }),

    defineTool({
      name: "build_delete_webhook",
      upstream: "DELETE /webhooks/{webhookId}",
      title: "Delete webhook",
      description: "Delete a webhook by its id (from build_list_webhooks).",
      toolset: "build_webhooks",
      kind: "destructive",
      destroys: ({ webhookId }) => `Webhook ${webhookId} is deleted: its event is no longer delivered.`,
      input: { webhookId: s.pathId("webhookId") },
      output: z.looseObject({ webhookId: z.string(), deleted: z.boolean() }),
      verify: ({ webhookId }) => `call build_list_webhooks and look for ${webhookId}`,
      run: async ({ webhookId }, ctx) => {
        const data = await ctx.deps.client.webhooks.remove(webhookId, ctx.signal);
        // [L] answers {success: true}, [RC] reads {deleted}: either one says it.
        const deleted =
          typeof data.deleted === "boolean" ? data.deleted : typeof data.success === "boolean" ? data.success : true;
        return { ...data, webhookId, deleted };
      },
      render: (r) =>
        r.deleted
          ? `Webhook ${r.webhookId} deleted.`
          : `The service did not confirm deleting webhook ${r.webhookId}; check build_list_webhooks.`,
    }),
  ];
}
