import {
  CLIENT_CAPABILITIES_META_KEY,
  type ClientCapabilities,
  type ServerContext,
} from "@modelcontextprotocol/server";

export type EnvelopeCapabilities = ClientCapabilities & { extensions?: Record<string, unknown> };

/**
 * The client capabilities a 2026-07-28 request carries in its `_meta` envelope (under the SDK's
 * own key); undefined for a 2025 request, whose client declared them at initialize.
 */
export function envelopeCapabilities(ctx: ServerContext): EnvelopeCapabilities | undefined {
  const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  return envelope?.[CLIENT_CAPABILITIES_META_KEY] as EnvelopeCapabilities | undefined;
}
