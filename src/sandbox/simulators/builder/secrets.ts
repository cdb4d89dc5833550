import type { BuildContext } from "./context.js";
import { fail, type BuildRoutes } from "./routes.js";
import type { Json, Secret, SimProject } from "./state.js";
import { bodyOf, validateSecretFields } from "./validation.js";
import { secretView } from "./views.js";

/** Project secrets: POST creates or updates by name; values are never returned. */
export function registerSecretRoutes(ctx: BuildContext, routes: BuildRoutes): void {
  routes.onProject("POST", "/secrets", (p, req) => putSecret(ctx, p, bodyOf(req)));
  routes.onProject("DELETE", "/secrets/:secretId", (p, req) => deleteSecret(p, req.params.secretId));
}

function putSecret(ctx: BuildContext, p: SimProject, body: Json) {
  const input = validateSecretFields(body, "secret");
  const existing = p.secrets.find((s) => s.secretName === input.secretName);
  if (existing) {
    existing.secretValue = input.secretValue;
    existing.environment = input.environment;
    return secretView(existing);
  }
  const secret: Secret = { _id: ctx.newId(), ...input };
  p.secrets.push(secret);
  return secretView(secret);
}

function deleteSecret(p: SimProject, secretId: string) {
  const index = p.secrets.findIndex((s) => s._id === secretId);
  if (index < 0) fail(404, "SECRET_NOT_FOUND", `Secret ${secretId} does not exist in ${p.projectId}`);
  p.secrets.splice(index, 1);
  return { _id: secretId, deleted: true };
}
