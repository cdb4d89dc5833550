import type { BuildContext } from "./context.js";
import { fail, type BuildRoutes } from "./routes.js";
import { iso, type Json, type Secret, type SimProject } from "./state.js";
import { bodyOf, validateSecretFields } from "./validation.js";
import { secretView } from "./views.js";

/**
 * Project secrets; values are never returned. The reference has no update endpoint and does not
 * say what a duplicate name does: every POST creates a secret with its own _id (the newest of a
 * name is the one in the .env).
 */
export function registerSecretRoutes(ctx: BuildContext, routes: BuildRoutes): void {
  routes.onProject("POST", "/secrets", (p, req) => putSecret(ctx, p, bodyOf(req)));
  routes.onProject("DELETE", "/secrets/:secretId", (p, req) => deleteSecret(p, req.params.secretId));
}

function putSecret(ctx: BuildContext, p: SimProject, body: Json) {
  const input = validateSecretFields(body, "secret");
  const secret: Secret = { _id: ctx.newId(), ...input };
  p.secrets.push(secret);
  return { ...secretView(secret), createdAt: iso(ctx.simNow()) };
}

function deleteSecret(p: SimProject, secretId: string) {
  const index = p.secrets.findIndex((s) => s._id === secretId);
  if (index < 0) fail(404, "SECRET_NOT_FOUND", `Secret ${secretId} does not exist in ${p.projectId}`);
  p.secrets.splice(index, 1);
  return { success: true };
}
