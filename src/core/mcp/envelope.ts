import {
  CLIENT_CAPABILITIES_META_KEY,
  type ClientCapabilities,
  type McpServer,
  type ServerContext,
} from "@modelcontextprotocol/server";

type EnvelopeCapabilities = ClientCapabilities & { extensions?: Record<string, unknown> };

/**
 * The client capabilities a 2026-07-28 request carries in its `_meta` envelope (under the SDK's
 * own key); undefined for a 2025 request, whose client declared them at initialize.
 */
export function envelopeCapabilities(ctx: ServerContext): EnvelopeCapabilities | undefined {
  const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  return envelope?.[CLIENT_CAPABILITIES_META_KEY] as EnvelopeCapabilities | undefined;
}

/** MCP Apps (ext-apps): the client declared the UI extension, so views are worth announcing. */
const UI_EXTENSION = "io.modelcontextprotocol/ui";
export function supportsViews(server: McpServer, ctx: ServerContext): boolean {
  const caps = envelopeCapabilities(ctx) ?? (server.server.getClientCapabilities() as EnvelopeCapabilities | undefined);
  return caps?.extensions?.[UI_EXTENSION] !== undefined;
}
