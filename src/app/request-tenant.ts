import type { Config } from "../config.js";
import type { Identity } from "../core/auth/resource-server.js";
import { RequestRefused } from "../core/http/guards.js";
import type { App } from "../server.js";
import { ISSUER, SUBJECT } from "./credentials.js";

/** The longest key a header may carry: no real key comes close, and a longer value is refused by name. */
const MAX_KEY_LENGTH = 1024;

/** A request's tenant: the keys it brings (ENV.credentials=caller) and its signed-in user (ENV.auth=oauth). */
export function tenantCredentials(
  headers: Readonly<Record<string, string[] | undefined>>,
  identity: Identity | undefined,
  app: App,
  config: Config,
): Record<string, string> {
  const keys = app.credentials === "caller" ? callerKeys(headers, app, !config.httpToken && !identity) : {};
  return identity ? { ...keys, [ISSUER]: identity.issuer, [SUBJECT]: identity.subject } : keys;
}

/**
 * The upstream keys a request brings (per-user mode): one header per service, or, for a service
 * that declares a `bearerKeyPrefix`, `Authorization: Bearer <key>` when the bearer is not the
 * server's own token.
 */
function callerKeys(
  headers: Readonly<Record<string, string[] | undefined>>,
  app: App,
  bearerMayCarryKey: boolean,
): Record<string, string> {
  const keys: Record<string, string> = {};
  for (const { service, header } of app.credentialHeaders) {
    const values = headers[header] ?? [];
    const name = header.replace(/(^|-)([a-z])/g, (_, dash: string, c: string) => dash + c.toUpperCase());
    // Node would join two of them into "kA, kB" and that would go upstream as the key.
    if (values.length > 1)
      throw new RequestRefused(400, `${name} was sent ${values.length} times; send it once, with one key.`);
    const key = values[0]?.trim();
    if (key && key.length > MAX_KEY_LENGTH) {
      throw new RequestRefused(
        400,
        `${name} is ${key.length} characters long, over the ${MAX_KEY_LENGTH.toLocaleString("en-US")}-character ` +
          "limit for a key; send the key alone.",
      );
    }
    if (key) keys[service] = key;
  }
  const authorization = headers.authorization ?? [];
  if (bearerMayCarryKey && authorization.length > 1)
    throw new RequestRefused(400, `Authorization was sent ${authorization.length} times; send it once.`);
  const bearer = /^Bearer\s+(\S+)$/i.exec(String(authorization[0] ?? "").trim())?.[1];
  if (!bearerMayCarryKey || !bearer) return keys;
  const owner = app.credentialHeaders.find((h) => h.bearerKeyPrefix && bearer.startsWith(h.bearerKeyPrefix));
  if (owner && !keys[owner.service]) keys[owner.service] = bearer;
  return keys;
}

/** ENV.auth=oauth: the resource server, warmed up (issuer discovery) so a misconfiguration shows at start. */
export async function oauthGate(config: Config, app: App) {
  const [{ ResourceServer }, { createOAuthGate }, { scopeForKind, READ_SCOPE, SCOPES }] = await Promise.all([
    import("../core/auth/resource-server.js"),
    import("../core/http/oauth-gate.js"),
    import("../core/auth/scopes.js"),
  ]);
  const toolScopes = new Map(app.runtime.definition.tools.map((t) => [t.name, scopeForKind(t.kind)]));
  const used = new Set([READ_SCOPE, ...toolScopes.values()]);
  const server = new ResourceServer({
    scopes: SCOPES.filter((s) => used.has(s)),
    publicUrl: config.publicUrl!,
    issuers: config.authIssuers,
    audience: config.authAudience,
    documentationUrl: config.authDocsUrl ?? OAUTH_DOCS_URL,
    introspection: config.introspectionUrl
      ? { url: config.introspectionUrl, clientId: config.authClientId!, clientSecret: config.authClientSecret! }
      : undefined,
  });
  const { logger } = app.runtime;
  for (const { issuer, error } of await server.discover()) {
    if (error)
      logger.warn("OAuth: issuer metadata not reachable yet; tokens from it are refused (503) until it is", {
        issuer,
        error,
      });
  }
  return createOAuthGate(server, (name) => toolScopes.get(name), logger);
}

const OAUTH_DOCS_URL = "https://github.com/switchboard-mcp/switchboard-mcp/blob/main/docs/deployment.md#oauth";
