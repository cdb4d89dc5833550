import type { BuildContext } from "./context.js";
import { checkFigmaToken, validateFigmaToken } from "./figma-token.js";
import { ApiError, type BuildRoutes } from "./routes.js";
import { iso, type FigmaAccount, type Json, type SimProject } from "./state.js";
import { bodyOf } from "./validation.js";

/**
 * The Figma connection of a project (reference §13): connect, status (with an optional live
 * re-check), disconnect, and POST /figma/validate without a project. Every live check (connect,
 * validate, status?verify=true, launch) counts against the same 10 checks per real minute.
 * Token markers are listed in index.ts; `expiring` passes when connected and fails every later
 * re-check, which never disconnects.
 */

interface FigmaLink {
  /** absent when launch connected it (launch keeps only the account) */
  token?: string;
  connectedAt: number;
}

const links = new WeakMap<SimProject, FigmaLink>();

export function registerFigmaRoutes(ctx: BuildContext, routes: BuildRoutes): void {
  routes.onProject("POST", "/figma/connect", (p, req) => connect(ctx, p, bodyOf(req)));
  routes.onProject("GET", "/figma/status", (p, req) => status(ctx, p, req.query.get("verify") === "true"));
  routes.onProject("DELETE", "/figma/connect", (p) => disconnect(p));
  routes.on("POST", "/figma/validate", (req) => validate(ctx, bodyOf(req)));
}

/** Checked before anything is stored: a failure changes nothing. Connecting again replaces the account. */
function connect(ctx: BuildContext, p: SimProject, body: Json) {
  const token = validateFigmaToken(body.token, "token");
  const account = checkFigmaToken(ctx, token);
  p.figma = account;
  links.set(p, { token, connectedAt: ctx.simNow() });
  return { connected: true, account: { ...account } };
}

function status(ctx: BuildContext, p: SimProject, verify: boolean) {
  if (!p.figma) return { connected: false, account: null, connectedAt: null };
  const link = links.get(p) ?? { connectedAt: p.createdAt };
  const answer: Json = { connected: true, account: { ...p.figma }, connectedAt: iso(link.connectedAt) };
  if (!verify) return answer;
  // A launch-connected token is not kept here: its re-check is a plain one (it counts, and passes).
  const outcome = recheck(ctx, link.token ?? `figd_launch_connected_${p.figma.id}`);
  return { ...answer, ...outcome };
}

/** A live re-check reports its failure in the answer; only the account's rate limit is an error. */
function recheck(ctx: BuildContext, token: string): { tokenValid: boolean; tokenError?: string } {
  try {
    checkFigmaToken(ctx, token);
  } catch (err) {
    if (err instanceof ApiError && err.status !== 429) return { tokenValid: false, tokenError: err.message };
    throw err;
  }
  if (token.includes("expiring")) return { tokenValid: false, tokenError: "Figma rejected the token: it has expired" };
  return { tokenValid: true };
}

/** Idempotent: 200 even when nothing was connected. */
function disconnect(p: SimProject) {
  delete p.figma;
  links.delete(p);
  return { disconnected: true, message: "Figma disconnected; the stored token was deleted" };
}

/**
 * A verdict on the token is `valid: false` with the reason (errorCode, errorMessage: our choice);
 * Figma being unreachable or throttling is no verdict and stays an error, as on connect.
 */
function validate(
  ctx: BuildContext,
  body: Json,
): { valid: boolean; account?: FigmaAccount; errorCode?: string; errorMessage?: string } {
  const token = validateFigmaToken(body.token, "token");
  try {
    return { valid: true, account: { ...checkFigmaToken(ctx, token) } };
  } catch (err) {
    if (err instanceof ApiError && (err.code === "FIGMA_TOKEN_INVALID" || err.code === "FIGMA_TOKEN_FORBIDDEN")) {
      return { valid: false, errorCode: err.code, errorMessage: err.message };
    }
    throw err;
  }
}
