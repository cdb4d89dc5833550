import type { BuildContext } from "./context.js";
import { fail } from "./routes.js";
import { MINUTE, SANDBOX_APPS_DOMAIN, given, isObject, sha1, type FigmaAccount } from "./state.js";

/**
 * The Figma token of launch's `figma.token` (reference §3, §13): the shape is checked first, then
 * Figma itself is asked, at most 10 times per real minute per account. Token markers are listed in
 * index.ts. A bad token creates and charges nothing.
 */

const FIGMA_CHECKS_PER_MINUTE = 10;
const MIN_TOKEN_LENGTH = 20;

/** `figma` must be an object with a non-empty token that looks like one (no whitespace, not a URL, not too short). */
export function validateFigmaShape(value: unknown): string | undefined {
  if (!given(value)) return undefined;
  if (!isObject(value)) fail(400, "INVALID_FIGMA", "figma must be an object");
  return validateFigmaToken(value.token, "figma.token");
}

/** The token's own shape, wherever it is sent (launch's figma.token, figma/connect and figma/validate's token). */
export function validateFigmaToken(token: unknown, field: string): string {
  if (typeof token !== "string" || token.trim() === "") fail(400, "MISSING_FIGMA_TOKEN", `${field} is required`);
  if (/\s/.test(token) || token.includes("://") || token.length < MIN_TOKEN_LENGTH) {
    fail(
      400,
      "FIGMA_TOKEN_MALFORMED",
      `${field} does not look like a Figma personal access token (they start with figd_)`,
    );
  }
  return token;
}

/** The live check against Figma, rate-limited to 10 checks per real minute. */
export function checkFigmaToken(ctx: BuildContext, token: string): FigmaAccount {
  const realNow = ctx.now();
  ctx.figmaChecks = ctx.figmaChecks.filter((t) => realNow - t < MINUTE);
  if (ctx.figmaChecks.length >= FIGMA_CHECKS_PER_MINUTE) {
    fail(429, "RATE_LIMITED", `At most ${FIGMA_CHECKS_PER_MINUTE} Figma token checks per minute; retry shortly`);
  }
  ctx.figmaChecks.push(realNow);
  if (token.includes("invalid"))
    fail(400, "FIGMA_TOKEN_INVALID", "Figma rejected the token (wrong, expired or revoked)");
  if (token.includes("noscope"))
    fail(400, "FIGMA_TOKEN_FORBIDDEN", "The token lacks the current_user:read or file_content:read scope");
  if (token.includes("unreachable")) fail(400, "FIGMA_UNREACHABLE", "Figma could not be reached; retry later");
  if (token.includes("ratelimited"))
    fail(400, "FIGMA_RATE_LIMITED", "Figma is rate-limiting the token check; retry shortly");
  const h = sha1(token);
  return {
    id: h.slice(0, 12).replace(/[a-f]/g, (c) => String(c.charCodeAt(0) % 10)),
    handle: `designer-${h.slice(12, 16)}`,
    email: `designer-${h.slice(12, 16)}@example.com`,
    imgUrl: `https://avatars.${SANDBOX_APPS_DOMAIN}/${h.slice(0, 12)}.png`,
  };
}
