// The MCP Server Card (SEP-2127; modelcontextprotocol/experimental-ext-server-card): what a client
// reads before it connects, at GET <MCP endpoint>/server-card. Built from the facts server.json is
// built from (LISTING, the version), the revisions the first answer offers, and how this server
// runs: the endpoint's URL, and what a caller must send (a token, keys, or OAuth).
import { createHash } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { SUPPORTED_PROTOCOL_VERSIONS } from "@modelcontextprotocol/server";
import { credentialHeader, type Config } from "./config.js";
import { protectedResourceMetadataUrl } from "./core/auth/resource-server.js";
import { MODERN_REVISION } from "./core/mcp/era.js";
import type { ServiceDeclaration } from "./core/service/service.js";
import { LISTING } from "./instructions.js";
import { VERSION } from "./version.js";
import { ENV } from "./core/base/settings.js";

const SERVER_CARD_PATH = "/mcp/server-card";
export const SERVER_CARD_SCHEMA = "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json";
/** The `_meta` key under which the card says how callers are authorized (the card has no field for it). */
export const AUTHORIZATION_META = `${LISTING.name.split("/")[0]}/authorization`;
const MEDIA_TYPE = "application/mcp-server-card+json";

/** The card for the MCP endpoint at `endpoint` (ENV.publicUrl, or the URL a request reached). */
export function serverCard(
  config: Config,
  services: readonly ServiceDeclaration<any>[],
  endpoint: string,
): Record<string, unknown> {
  const remote: Record<string, unknown> = {
    type: "streamable-http",
    url: endpoint,
    supportedProtocolVersions: [...SUPPORTED_PROTOCOL_VERSIONS, MODERN_REVISION],
  };
  const headers = [];
  if (config.auth === "token")
    headers.push({
      name: "Authorization",
      description: `The token this server's operator gave you (${ENV.httpToken})`,
      isRequired: true,
      isSecret: true,
      value: "Bearer {token}",
      variables: { token: { description: "The token", isRequired: true, isSecret: true } },
    });
  if (config.credentials === "caller")
    for (const s of services.filter((s) => config.services.has(s.name)))
      headers.push({
        name: credentialHeader(s.name),
        description: `Your API key of the ${s.title}, for its tools`,
        isRequired: false,
        isSecret: true,
      });
  if (headers.length) remote.headers = headers;
  const oauth =
    config.auth === "oauth" && config.publicUrl
      ? {
          [AUTHORIZATION_META]: {
            type: "oauth2",
            required: true,
            protectedResourceMetadata: protectedResourceMetadataUrl(config.publicUrl),
            authorizationServers: config.authIssuers,
          },
        }
      : undefined;
  return {
    $schema: SERVER_CARD_SCHEMA,
    name: LISTING.name,
    version: VERSION,
    title: LISTING.title,
    description: LISTING.description,
    repository: LISTING.repository,
    websiteUrl: LISTING.repository.url,
    remotes: [remote],
    ...(oauth ? { _meta: oauth } : {}),
  };
}

const CORS = {
  "access-control-allow-origin": "*",
  "access-control-allow-methods": "GET",
  "access-control-allow-headers": "Content-Type, If-None-Match",
  "access-control-expose-headers": "ETag",
};

/** GET/HEAD/OPTIONS of SERVER_CARD_PATH, public (no token), cacheable, with an ETag; false for any other path. */
export function serverCardPage(config: Config, services: readonly ServiceDeclaration<any>[]) {
  return async (req: IncomingMessage, res: ServerResponse, url: URL): Promise<boolean> => {
    if (url.pathname !== SERVER_CARD_PATH) return false;
    if (req.method === "OPTIONS") {
      res.writeHead(204, CORS).end();
      return true;
    }
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { allow: "GET, HEAD, OPTIONS", ...CORS }).end();
      return true;
    }
    const proto = req.headers["x-forwarded-proto"] === "https" ? "https" : "http";
    const endpoint = config.publicUrl ?? `${proto}://${req.headers.host}/mcp`;
    const body = JSON.stringify(serverCard(config, services, endpoint));
    const etag = `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"`;
    const headers = { ...CORS, "cache-control": "public, max-age=3600", etag };
    if (req.headers["if-none-match"] === etag) {
      res.writeHead(304, headers).end();
      return true;
    }
    res.writeHead(200, { ...headers, "content-type": MEDIA_TYPE }).end(req.method === "HEAD" ? undefined : body);
    return true;
  };
}
