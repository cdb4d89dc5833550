import { defineTool } from "../deps.js";
import { maskSecrets } from "../mask.js";
import { quote } from "../render.js";
import * as s from "../schemas.js";

function keyLine(k: Record<string, unknown>): string {
  const parts: string[] = [];
  if (typeof k.key === "string") parts.push(`key ${k.key}`);
  if (Array.isArray(k.scopes)) parts.push(`scopes ${k.scopes.map(String).join(", ") || "none"}`);
  if ("last_used_at" in k) parts.push(k.last_used_at ? `last used ${String(k.last_used_at)}` : "never used");
  const hook = k.webhook;
  if (hook && typeof hook === "object" && !Array.isArray(hook)) {
    const h = hook as Record<string, unknown>;
    const secret = typeof h.signing_secret === "string" ? ` (signing secret ${h.signing_secret})` : "";
    parts.push(`webhook ${typeof h.url === "string" ? h.url : "?"}${secret}`);
  }
  const name = k.name !== undefined ? ` ${quote(k.name, 60)}` : "";
  return `- ${String(k._id ?? "(no _id)")}${name}${parts.length ? `: ${parts.join("; ")}` : ""}`;
}

export function keyTools() {
  return [
    defineTool({
      name: "drones_list_api_keys",
      upstream: "GET /api/api-keys",
      title: "List API keys",
      description:
        "The drone service's API keys, with whatever fields it sends (shape not shown; the text " +
        "names key, scopes, last use and webhook when present). Key values and other secrets are " +
        "masked to a prefix and the last four characters (dfk_live_…a1b2), never returned whole.",
      toolset: "drones",
      kind: "read",
      input: {},
      output: s.apiKeyList,
      run: async (_input, ctx) => {
        const { value, masked } = maskSecrets(await ctx.deps.client.listApiKeys(ctx.signal));
        return { api_keys: value, count: value.length, maskedValues: masked };
      },
      render: (r) =>
        r.count === 0
          ? "No API keys."
          : `${r.count} API key(s); secrets masked (${r.maskedValues} ` +
            `value(s)):\n${r.api_keys.map(keyLine).join("\n")}`,
    }),
  ];
}
