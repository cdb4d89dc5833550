import type { BuildContext } from "./context.js";
import { fail } from "./routes.js";
import { MINUTE, SANDBOX_APPS_DOMAIN, sha1, type DesignAccount } from "./state.js";

/** The design tool connection (launch's `design.token`). Token markers are listed in index.ts. */

const DESIGN_CHECKS_PER_MINUTE = 10;

/** The remote part of the design check, rate-limited to 10 checks per real minute. */
export function checkDesignToken(ctx: BuildContext, token: string): DesignAccount {
  const realNow = ctx.now();
  ctx.designChecks = ctx.designChecks.filter((t) => realNow - t < MINUTE);
  if (ctx.designChecks.length >= DESIGN_CHECKS_PER_MINUTE) {
    fail(429, "RATE_LIMITED", `At most ${DESIGN_CHECKS_PER_MINUTE} design token checks per minute; retry shortly`);
  }
  ctx.designChecks.push(realNow);
  if (token.includes("invalid")) fail(400, "DESIGN_TOKEN_INVALID", "The design tool rejected the token");
  if (token.includes("noscope")) fail(400, "DESIGN_TOKEN_FORBIDDEN", "The token lacks the file read scope");
  if (token.includes("unreachable")) fail(400, "DESIGN_UNREACHABLE", "The design tool could not be reached; retry later");
  if (token.includes("ratelimited")) {
    fail(400, "DESIGN_RATE_LIMITED", "The design tool is rate-limiting the check; retry shortly");
  }
  const h = sha1(token);
  return {
    id: `dsgn_user_${h.slice(0, 12)}`,
    handle: `designer-${h.slice(12, 16)}`,
    email: `designer-${h.slice(12, 16)}@example.com`,
    imgUrl: `https://avatars.${SANDBOX_APPS_DOMAIN}/${h.slice(0, 12)}.png`,
  };
}
