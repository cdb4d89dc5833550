import { z } from "zod";
import { trimLine } from "../../../core/base/text.js";
import { defineTool } from "../deps.js";
import * as s from "../schemas.js";

/**
 * Figma connection of a project (reference §13; all free). The token is a secret: it is registered
 * before it leaves and never echoed. What makes a token malformed beyond "whitespace, a URL, too
 * short" is not stated, so only those two visible rules are checked here (no length, no prefix:
 * organization tokens also work).
 */
const token = z
  .string()
  .min(1, "token is required")
  .refine((t) => !/\s/.test(t), "token must not contain whitespace: copy the whole token")
  .refine((t) => !/^[a-z][a-z0-9+.-]*:\/\//i.test(t), "token must be the token itself, not a URL")
  .describe("Figma personal access token (figd_…)");

const account = z.looseObject({
  id: z.string().optional(),
  handle: z.string().optional(),
  email: z.string().optional(),
  imgUrl: z.string().optional(),
});

function who(a: z.infer<typeof account> | null | undefined): string {
  if (!a) return "an unnamed account";
  const handle = a.handle ? `"${trimLine(a.handle, 60)}"` : a.id ? `id ${a.id}` : "an unnamed account";
  return a.email ? `${handle} (${trimLine(a.email, 80)})` : handle;
}

export function figmaTools() {
  return [
    defineTool({
      name: "build_connect_figma",
      upstream: "POST …/figma/connect",
      title: "Connect Figma",
      description:
        "Connect a Figma account to a project so its agent can read designs (free). Connect before " +
        "the run that needs it; the token is checked first and never shown again.",
      toolset: "build_figma",
      kind: "write",
      input: { projectId: s.projectId, token },
      output: z.looseObject({ projectId: z.string(), connected: z.boolean(), account: account.optional() }),
      verify: ({ projectId }) => `call build_get_figma_status for "${projectId}"`,
      run: async ({ projectId, token }, ctx) => {
        ctx.secret(token);
        const data = await ctx.deps.client.figma.connect(projectId, token, ctx.signal);
        return { ...data, projectId, connected: data.connected ?? true };
      },
      render: (r) =>
        `Figma connected to ${r.projectId} as ${who(r.account)}. The token is stored by the service and not shown.`,
    }),

    defineTool({
      name: "build_get_figma_status",
      upstream: "GET …/figma/status",
      title: "Figma status",
      description:
        "Whether a project has Figma connected, and as whom. verify: true re-checks the token live " +
        "with Figma (once, when the user asks; never in a poll).",
      toolset: "build_figma",
      kind: "read",
      input: { projectId: s.projectId, verify: z.boolean().optional() },
      output: z.looseObject({
        projectId: z.string(),
        connected: z.boolean(),
        account: account.nullable().optional(),
        connectedAt: z.string().nullable().optional(),
        tokenValid: z.boolean().optional(),
        tokenError: z.string().optional(),
      }),
      run: async ({ projectId, verify }, ctx) => {
        const data = await ctx.deps.client.figma.getStatus(projectId, verify, ctx.signal);
        return { ...data, projectId, connected: data.connected === true };
      },
      render: (r) => {
        if (!r.connected) return `Figma is not connected to ${r.projectId}.`;
        const since = r.connectedAt ? ` since ${r.connectedAt}` : "";
        const check =
          r.tokenValid === true
            ? " The live check passed."
            : r.tokenValid === false
              ? ` The live check failed${r.tokenError ? `: "${trimLine(r.tokenError, 200)}"` : ""}. ` +
                `It is still connected; reconnect with a new token (build_connect_figma).`
              : "";
        return `Figma is connected to ${r.projectId} as ${who(r.account)}${since}.${check}`;
      },
    }),

    defineTool({
      name: "build_disconnect_figma",
      upstream: "DELETE …/figma/connect",
      title: "Disconnect Figma",
      description: "Remove a project's stored Figma token. Safe to repeat (succeeds when nothing is connected).",
      toolset: "build_figma",
      kind: "destructive",
      destroys: ({ projectId }) => `The Figma token stored for project ${projectId} is deleted.`,
      input: { projectId: s.projectId },
      output: z.looseObject({ projectId: z.string(), disconnected: z.boolean() }),
      verify: ({ projectId }) => `call build_get_figma_status for "${projectId}" (disconnecting again is safe)`,
      run: async ({ projectId }, ctx) => {
        const data = await ctx.deps.client.figma.disconnect(projectId, ctx.signal);
        return { ...data, projectId, disconnected: data.disconnected ?? true };
      },
      render: (r) => `Figma is disconnected from ${r.projectId}.`,
    }),

    defineTool({
      name: "build_validate_figma_token",
      upstream: "POST /figma/validate",
      title: "Check Figma token",
      description:
        "Check a Figma token before any project exists; stores nothing. At most 10 checks per minute per account.",
      toolset: "build_figma",
      // A POST that changes nothing (it is not retried either: a repeat spends the per-minute allowance).
      kind: "read",
      idempotent: false,
      input: { token },
      output: z.looseObject({ valid: z.boolean(), account: account.optional() }),
      run: async ({ token }, ctx) => {
        ctx.secret(token);
        const data = await ctx.deps.client.figma.validateToken(token, ctx.signal);
        return { ...data, valid: data.valid === true };
      },
      render: (r) => {
        if (r.valid) return `The token is valid: it belongs to ${who(r.account)}.`;
        const reason = typeof r.errorMessage === "string" ? ` ("${trimLine(r.errorMessage, 200)}")` : "";
        return (
          `Figma does not accept this token${reason}; ` +
          "create a new one with scopes current_user:read and file_content:read."
        );
      },
    }),
  ];
}
