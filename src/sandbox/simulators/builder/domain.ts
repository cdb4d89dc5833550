import type { BuildContext } from "./context.js";
import { chargeProject } from "./credits.js";
import { fail, type BuildRoutes } from "./routes.js";
import { MINUTE, sha1, type Json, type SimProject } from "./state.js";
import { bodyOf, validHostname } from "./validation.js";
import { customDomainView } from "./views.js";

/**
 * The custom domain (reference §9): PUT needs a deployment with status success (404 NO_DEPLOYMENT),
 * answers {success, hostname, status, dnsRecordsToAdd}; the domain is pending_validation for 10
 * minutes (assumed), then active. Assumed where §9 is silent: every PUT is charged and replaces the
 * domain; a hostname of two labels (an apex such as example.com) is 400 INVALID_HOSTNAME (§9 asks
 * for a subdomain; the code is ours); DELETE without a domain answers as with one.
 */

const DOMAIN_VALIDATION = 10 * MINUTE;

export function registerDomainRoutes(ctx: BuildContext, routes: BuildRoutes): void {
  routes.onProject("PUT", "/domain", (p, req) => putDomain(ctx, p, bodyOf(req)));
  routes.onProject("DELETE", "/domain", (p) => deleteDomain(p));
  ctx.onAdvance((p, now) => advanceDomain(p, now));
}

function putDomain(ctx: BuildContext, p: SimProject, body: Json) {
  if (typeof body.hostname !== "string" || body.hostname.trim() === "")
    fail(400, "MISSING_HOSTNAME", "hostname is required");
  const hostname = validHostname(body.hostname);
  if (!hostname) fail(400, "INVALID_HOSTNAME", "hostname must be a domain name such as shop.example.com");
  if (hostname.split(".").length < 3) {
    fail(
      400,
      "INVALID_HOSTNAME",
      `${hostname} is an apex domain: use a subdomain such as www.${hostname} ` +
        "and redirect the apex at your DNS provider",
    );
  }
  requireDeployment(p);
  chargeProject(ctx, p, "ADD_CUSTOM_DOMAIN");
  addCustomDomain(p, hostname, ctx.simNow());
  const { hostname: host, status, dnsRecordsToAdd } = customDomainView(p);
  return { success: true, hostname: host, status, dnsRecordsToAdd };
}

function requireDeployment(p: SimProject): void {
  if (p.lastSuccessfulDeployAt === null)
    fail(404, "NO_DEPLOYMENT", `${p.projectId} has no deployment with status success yet; deploy it first`);
}

export function addCustomDomain(p: SimProject, hostname: string, at: number): void {
  const token = sha1(`domain:${p.projectId}:${hostname}:${at}`).slice(0, 32);
  p.customDomain = {
    hostname,
    status: "pending_validation",
    sslStatus: "initializing",
    validatedAt: at + DOMAIN_VALIDATION,
    token,
  };
}

function deleteDomain(p: SimProject) {
  requireDeployment(p);
  p.customDomain = null;
  return { message: "Custom domain removed" };
}

function advanceDomain(p: SimProject, now: number): void {
  const d = p.customDomain;
  if (!d || d.status === "active" || d.validatedAt > now) return;
  d.status = p.lastSuccessfulDeployAt !== null ? "active" : "pending_deployment";
  d.sslStatus = d.status === "active" ? "active" : "initializing";
}
