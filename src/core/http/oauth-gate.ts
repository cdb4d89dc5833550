import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "../base/logger.js";
import type { Identity, Refusal, ResourceServer } from "../auth/resource-server.js";
import { scopeForRequest, scopesForBody } from "../auth/scopes.js";
import { closeAfterAnswer, plain } from "./guards.js";
import type { UnauthThrottle } from "./limits.js";

/** ENV.auth=oauth at the HTTP layer: the metadata documents, the bearer check, and scopes per request. */
export interface OAuthGate {
  /** Answers GET/HEAD/OPTIONS of the protected resource metadata; false for any other request. */
  serveMetadata(req: IncomingMessage, res: ServerResponse, pathname: string): boolean;
  /**
   * The caller, or undefined once a 401/403/429/503 has been sent. A token not verified lately
   * takes its share of ENV.unauthRate (`throttle`) before it is checked, and gives it back if valid.
   */
  authenticate(req: IncomingMessage, res: ServerResponse, throttle: UnauthThrottle): Promise<Identity | undefined>;
  /** After the body is read: false once a 403 insufficient_scope has been sent. */
  authorize(identity: Identity, res: ServerResponse, body: unknown): boolean;
}

const header = (req: IncomingMessage, name: string) => {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
};

export function createOAuthGate(
  server: ResourceServer,
  toolScope: (name: string) => string | undefined,
  logger: Logger,
): OAuthGate {
  const refuse = (res: ServerResponse, refusal: Refusal) => {
    if (refusal.status === 401) closeAfterAnswer(res);
    plain(res, refusal.status, refusal.body, refusal.headers);
  };
  // 2026-07-28 requests name their method and tool in headers: decided before the body is read.
  const headerScopes = (req: IncomingMessage) => {
    const scope = scopeForRequest(header(req, "mcp-method"), header(req, "mcp-name"), toolScope);
    return scope ? [scope] : [];
  };
  return {
    serveMetadata(req, res, pathname) {
      const doc = server.metadataFor(pathname);
      if (!doc) return false;
      const cors = {
        "access-control-allow-origin": "*",
        "access-control-allow-methods": "GET, HEAD, OPTIONS",
        "cache-control": "public, max-age=3600",
      };
      if (req.method === "OPTIONS") {
        res
          .writeHead(204, {
            ...cors,
            "access-control-allow-headers": header(req, "access-control-request-headers") ?? "*",
          })
          .end();
      } else if (req.method !== "GET" && req.method !== "HEAD") {
        plain(res, 405, { error: "method_not_allowed" }, { allow: "GET, HEAD, OPTIONS", ...cors });
      } else {
        plain(res, 200, doc, cors);
      }
      return true;
    },
    async authenticate(req, res, throttle) {
      const authorization = header(req, "authorization");
      try {
        let identity = server.known(authorization);
        if (!identity) {
          if (!throttle.take(res, "a valid OAuth access token (Authorization: Bearer <token>)")) return;
          identity = await server.authenticate(authorization);
          throttle.refund();
        }
        const refusal = server.authorize(identity, headerScopes(req));
        if (refusal) return void refuse(res, refusal);
        return identity;
      } catch (err) {
        const refusal = server.unauthorized(err);
        if (refusal.status === 503)
          logger.warn("OAuth: a token could not be checked", { error: (err as Error).message });
        return void refuse(res, refusal);
      }
    },
    authorize(identity, res, body) {
      const refusal = server.authorize(identity, scopesForBody(body, toolScope));
      if (refusal) refuse(res, refusal);
      return refusal === undefined;
    },
  };
}
