import type { BuildContext } from "./context.js";
import { chargeProject } from "./credits.js";
import { fail, type BuildRoutes } from "./routes.js";
import { MINUTE, type Json, type SimProject } from "./state.js";
import { bodyOf, validHostname } from "./validation.js";
import { customDomainView } from "./views.js";

/** The custom domain: pending_validation for 10 minutes, then pending_deployment until a deployment has succeeded. */

const DOMAIN_VALIDATION = 10 * MINUTE;

export function registerDomainRoutes(ctx: BuildContext, routes: BuildRoutes): void {
  routes.onProject("PUT", "/domain", (p, req) => putDomain(ctx, p, bodyOf(req)));
  routes.onProject("DELETE", "/domain", (p) => deleteDomain(p));
  ctx.onAdvance((p, now) => advanceDomain(p, now));
}

/** Putting the hostname the project already has is free and changes nothing. */
function putDomain(ctx: BuildContext, p: SimProject, body: Json) {
  const hostname = validHostname(body.hostname);
  if (!hostname) fail(400, "INVALID_HOSTNAME", "hostname must be a domain name such as shop.example.com");
  if (p.customDomain?.hostname !== hostname) {
    chargeProject(ctx, p, "ADD_CUSTOM_DOMAIN");
    addCustomDomain(p, hostname, ctx.simNow());
  }
  return customDomainView(p);
}

export function addCustomDomain(p: SimProject, hostname: string, at: number): void {
  p.customDomain = { hostname, status: "pending_validation", sslStatus: "pending", validatedAt: at + DOMAIN_VALIDATION };
}

function deleteDomain(p: SimProject) {
  if (!p.customDomain) fail(404, "DOMAIN_NOT_FOUND", `${p.projectId} has no custom domain`);
  const { hostname } = p.customDomain;
  p.customDomain = null;
  return { hostname, deleted: true };
}

function advanceDomain(p: SimProject, now: number): void {
  const d = p.customDomain;
  if (!d || d.status === "active" || d.validatedAt > now) return;
  d.status = p.lastSuccessfulDeployAt !== null ? "active" : "pending_deployment";
  d.sslStatus = d.status === "active" ? "active" : "pending";
}
