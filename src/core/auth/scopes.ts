import type { ToolKind } from "../tools/tool.js";

export const READ_SCOPE = "switchboard:read";
const WRITE_SCOPE = "switchboard:write";
const SPEND_SCOPE = "switchboard:spend";
export const SCOPES = [READ_SCOPE, WRITE_SCOPE, SPEND_SCOPE];

/** The scope a tool needs, from what it does: reads, writes that spend nothing, spending. */
export function scopeForKind(kind: ToolKind): string {
  if (kind === "read") return READ_SCOPE;
  return kind === "spend" ? SPEND_SCOPE : WRITE_SCOPE;
}

/** Methods that read data (resources, prompts, completions): they need the read scope. */
const READ_METHODS = new Set([
  "resources/list",
  "resources/read",
  "resources/templates/list",
  "resources/subscribe",
  // 2026-07-28: a listen stream carries resource and list changes, so it reads too.
  "subscriptions/listen",
  "prompts/list",
  "prompts/get",
  "completion/complete",
]);

/**
 * The scope one MCP request needs, or undefined when any valid token will do (initialize,
 * tools/list, tasks/*, notifications: the protocol's plumbing, the same for everyone).
 * A tools/call of a tool this server does not have needs the read scope (the SDK then refuses it).
 */
export function scopeForRequest(
  method: string | undefined,
  toolName: string | undefined,
  toolScope: (name: string) => string | undefined,
): string | undefined {
  if (method === "tools/call") return (toolName !== undefined && toolScope(toolName)) || READ_SCOPE;
  return method !== undefined && READ_METHODS.has(method) ? READ_SCOPE : undefined;
}

/** Every scope a body (one message or a 2025 batch) needs. */
export function scopesForBody(body: unknown, toolScope: (name: string) => string | undefined): string[] {
  const needed = new Set<string>();
  for (const message of Array.isArray(body) ? body : [body]) {
    const m = message as { method?: unknown; params?: { name?: unknown } } | null;
    if (!m || typeof m.method !== "string") continue;
    const scope = scopeForRequest(m.method, typeof m.params?.name === "string" ? m.params.name : undefined, toolScope);
    if (scope) needed.add(scope);
  }
  return [...needed];
}

/** The scopes an access token grants: `scope` (RFC 9068, space-separated) or `scp` (Entra ID, Okta). */
export function grantedScopes(claims: { scope?: unknown; scp?: unknown }): string[] {
  const raw = claims.scope ?? claims.scp;
  if (typeof raw === "string") return raw.split(" ").filter(Boolean);
  return Array.isArray(raw) ? raw.filter((s): s is string => typeof s === "string") : [];
}
