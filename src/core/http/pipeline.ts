import type { IncomingMessage, ServerResponse } from "node:http";
import type { Identity } from "../auth/resource-server.js";
import type { TenantRuntime } from "../mcp/runtime.js";
import {
  type BodyPolicy,
  closeAfterAnswer,
  hostAllowed,
  originAllowed,
  plain,
  readJson,
  RequestRefused,
} from "./guards.js";
import type { OAuthGate } from "./oauth-gate.js";
import type { UnauthThrottle } from "./limits.js";

/**
 * The steps of an HTTP request to /mcp before its era is looked at, in order: guards (what its
 * headers and path decide), auth (bearer token or OAuth), body (read, then scopes), tenant (which
 * runtime it acts for). Each step is a function of the request and what it is given; what a step
 * finds goes to the next as an argument, nothing is kept on the request. transport.ts runs them
 * (`handle`); the era router (router.ts) takes the result, an `Admitted` request.
 */

/** One request in the pipeline: node's request and response, and its parsed URL. */
export interface Exchange {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly url: URL;
}

/** An answer a step gives instead of passing the request on. */
export interface Refusal {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

/** A JSON-RPC error answer (no id: it answers no message in particular). */
export const rpcRefusal = (status: number, code: number, message: string, headers?: Record<string, string>) =>
  ({ status, body: { jsonrpc: "2.0", error: { code, message }, id: null }, headers }) satisfies Refusal;

export function send(res: ServerResponse, refusal: Refusal): void {
  plain(res, refusal.status, refusal.body, refusal.headers);
}

/**
 * The handoff to the era router: a request that passed every step, its body (undefined unless a
 * POST), who sent it (OAuth), the tenant it acts for (pinned until the response closes), and a
 * signal aborted when the client leaves before its answer went out.
 */
export interface Admitted extends Exchange {
  readonly body: unknown;
  readonly identity?: Identity;
  readonly tenant: TenantRuntime;
  readonly signal: AbortSignal;
}

// Guards: decided from the request line and headers alone, before any byte of the body is read.

/** DNS rebinding: a loopback bind answers its loopback names and the ones the operator lists. */
export function checkHost(req: IncomingMessage, loopbackOnly: boolean, allowedHosts?: readonly string[]) {
  return hostAllowed(req.headers.host, loopbackOnly, allowedHosts)
    ? undefined
    : ({ status: 403, body: { error: "Host not allowed" } } satisfies Refusal);
}

/** A browser's request from an origin not on the allow-list (a request without Origin is not a browser's). */
export function checkOrigin(req: IncomingMessage, allowedOrigins: string[]) {
  const origin = req.headers.origin;
  return origin === undefined || originAllowed(origin, allowedOrigins)
    ? undefined
    : ({ status: 403, body: { error: "Origin not allowed" } } satisfies Refusal);
}

/** Anything but /mcp past the pages and probes. */
export function checkEndpoint(url: URL) {
  return url.pathname === "/mcp"
    ? undefined
    : ({ status: 404, body: { error: "Not found; the MCP endpoint is /mcp" } } satisfies Refusal);
}

/** What the auth step checks: ENV.httpToken's bearer token, or ENV.auth=oauth's gate (either, or none). */
export interface AuthPolicy {
  tokenOk?: (authorization: string | undefined) => boolean;
  oauth?: OAuthGate;
  /** 401 (429 over ENV.unauthRate) for a request without the token, at almost no cost. */
  refuseUnauthenticated(res: ServerResponse): void;
  unauthenticated: UnauthThrottle;
}

/**
 * The caller: `{}` when no OAuth is set (a token, if set, was valid), `{ identity }` with OAuth;
 * undefined once 401/403/429/503 has been sent, before any byte of the body was read.
 */
export async function authenticate(ex: Exchange, auth: AuthPolicy): Promise<{ identity?: Identity } | undefined> {
  if (auth.tokenOk && !auth.tokenOk(ex.req.headers.authorization)) return void auth.refuseUnauthenticated(ex.res);
  if (!auth.oauth) return {};
  const identity = await auth.oauth.authenticate(ex.req, ex.res, auth.unauthenticated);
  return identity && { identity };
}

/** How a body is read: its size limit, deadline and shared budget, and the OAuth scopes it needs. */
export interface BodyRules {
  maxBytes: number;
  policy: BodyPolicy;
  oauth?: OAuthGate;
}

/**
 * A POST's JSON body (`{ body: undefined }` for GET and DELETE); undefined once an error has been
 * sent: too large, too slow, over the budget, not JSON, an empty batch, or (OAuth) a scope missing.
 */
export async function readBody(
  ex: Exchange,
  rules: BodyRules,
  identity: Identity | undefined,
): Promise<{ body: unknown } | undefined> {
  if (ex.req.method !== "POST") return { body: undefined };
  const read = await readJson(ex.req, rules.maxBytes, rules.policy);
  if (read.error) {
    if (read.closeWith) closeAfterAnswer(ex.res, read.closeWith);
    return void send(ex.res, rpcRefusal(read.status, read.code, read.error));
  }
  const body = read.value;
  if (Array.isArray(body) && body.length === 0)
    return void send(ex.res, rpcRefusal(400, -32600, "Invalid request: an empty batch"));
  if (identity && !rules.oauth!.authorize(identity, ex.res, body)) return;
  return { body };
}

/**
 * Per-user mode: the tenant of the keys in the request's headers and its user. Single-account
 * mode: the one runtime. A `RequestRefused` (keys it will not use) becomes its answer.
 */
export type TenantFinder = (
  headers: Readonly<Record<string, string[] | undefined>>,
  identity?: Identity,
) => TenantRuntime;

export function findTenant(req: IncomingMessage, find: TenantFinder, identity?: Identity) {
  try {
    return { tenant: find(req.headersDistinct, identity) };
  } catch (err) {
    if (err instanceof RequestRefused) return { refusal: rpcRefusal(err.status, -32000, err.message) };
    throw err;
  }
}
