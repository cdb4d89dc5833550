// A real OpenID provider (oidc-provider, OpenID Certified) on loopback for the OAuth tests: resource
// indicators (RFC 8707) with JWT access tokens (RFC 9068) per resource, PKCE, its development
// sign-in page (any login name is a user; that name is the token's subject), a consent page where
// the user ticks the scopes they grant, one pre-registered public client, and dynamic client
// registration (RFC 7591); optionally clients identified by a Client ID Metadata Document (an https
// client_id the provider fetches, see cimd.ts). Every client is held to the scopes it registered with (oidc-provider
// refuses any other static scope: "requested scope is not allowed").
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import Provider from "oidc-provider";
import { exportJWK, generateKeyPair } from "jose";
import { fetchTrusting } from "./cimd.js";

export const CLIENT_ID = "switchboard-e2e";
export const ALL_SCOPES = "switchboard:read switchboard:write switchboard:spend";

/** The confidential client of `startIdp({ serviceClient: true })`: client credentials, and introspection. */
export const SERVICE_CLIENT = { id: "switchboard-service", secret: "service-client-secret-for-tests-only" };

export interface Idp {
  issuer: string;
  /** Requests the provider received so far whose path starts with `prefix` (e.g. "/token/introspection"). */
  requests(prefix: string): number;
  close(): Promise<void>;
}

/** Any port nothing listens on right now (the server under test must know its public URL before it starts). */
export async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/**
 * `resources`: the resource indicators the provider mints tokens for (audience = the indicator).
 * `serviceClient`: also a confidential client (SERVICE_CLIENT) that gets tokens by client
 * credentials (no browser) and may introspect (RFC 7662, at /token/introspection).
 * `metadataDocuments`: also accept clients whose client_id is the https URL of their metadata
 * document (oidc-provider's experimental feature, draft 02), fetched trusting `ca` only.
 */
export async function startIdp(options: {
  redirectUri: string;
  resources: string[];
  serviceClient?: boolean;
  metadataDocuments?: { ca: string };
}): Promise<Idp> {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const { privateKey } = await generateKeyPair("RS256", { extractable: true });
  const signing = { ...(await exportJWK(privateKey)), kid: "e2e-1", alg: "RS256", use: "sig" };
  const provider = new Provider(issuer, {
    jwks: { keys: [signing as never] },
    clients: [
      {
        client_id: CLIENT_ID,
        token_endpoint_auth_method: "none",
        redirect_uris: [options.redirectUri],
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
        scope: `openid offline_access ${ALL_SCOPES}`,
      },
      ...(options.serviceClient
        ? [
            {
              client_id: SERVICE_CLIENT.id,
              client_secret: SERVICE_CLIENT.secret,
              token_endpoint_auth_method: "client_secret_basic",
              redirect_uris: [],
              grant_types: ["client_credentials"],
              response_types: [],
            },
          ]
        : []),
    ],
    scopes: ["openid", "offline_access", ...ALL_SCOPES.split(" ")],
    pkce: { required: () => true },
    findAccount: async (_ctx: unknown, id: string) => ({ accountId: id, claims: async () => ({ sub: id }) }),
    ...(options.metadataDocuments ? { fetch: fetchTrusting(options.metadataDocuments.ca) } : {}),
    features: {
      devInteractions: { enabled: true },
      registration: { enabled: true },
      ...(options.metadataDocuments ? { clientIdMetadataDocument: { enabled: true, ack: "draft-02" } } : {}),
      ...(options.serviceClient
        ? {
            clientCredentials: { enabled: true },
            introspection: { enabled: true, allowedPolicy: async () => true },
          }
        : {}),
      resourceIndicators: {
        enabled: true,
        defaultResource: async () => undefined,
        useGrantedResource: async () => true,
        getResourceServerInfo: async (_ctx: unknown, resource: string) => {
          if (!options.resources.includes(resource)) throw new Error(`unknown resource ${resource}`);
          return {
            scope: ALL_SCOPES,
            audience: resource,
            accessTokenFormat: "jwt",
            accessTokenTTL: 600,
            jwt: { sign: { alg: "RS256" } },
          };
        },
      },
    },
    ttl: { AccessToken: 600, AuthorizationCode: 60, Grant: 3600, Interaction: 600, Session: 3600 },
  } as never);
  provider.proxy = false;
  const seen: string[] = [];
  const handle = provider.callback();
  const server: Server = createServer((req, res) => {
    seen.push(req.url ?? "");
    consent(provider, req, res).then(
      (answered) => answered || handle(req, res),
      (err: Error) => res.writeHead(500, { "content-type": "text/plain" }).end(err.stack),
    );
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  return {
    issuer,
    requests: (prefix) => seen.filter((path) => path.startsWith(prefix)).length,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/**
 * The consent step, in place of the development one (which grants everything asked): a checkbox
 * per scope of ours the client asked for, each ticked; what the user unticks is refused, and the
 * token carries only what was ticked. Each consent makes a new grant, so a scope refused once can
 * be granted at a later step-up. True when it answered the request.
 */
async function consent(provider: Provider, req: IncomingMessage, res: ServerResponse): Promise<boolean> {
  const match = /^\/interaction\/([\w-]+)(\/grant)?$/.exec(req.url ?? "");
  if (!match) return false;
  const details = await provider.interactionDetails(req, res);
  if (details.prompt.name !== "consent") return false;
  const asked = String(details.params.scope ?? "").split(" ");
  const ours = ALL_SCOPES.split(" ").filter((s) => asked.includes(s));
  if (req.method === "GET" && !match[2]) {
    const boxes = ours.map((s) => `<label><input type="checkbox" name="scope" value="${s}" checked> ${s}</label><br>`);
    res
      .writeHead(200, { "content-type": "text/html" })
      .end(
        `<!doctype html><title>Authorize</title><form method="post" action="/interaction/${match[1]}/grant">` +
          `<input type="hidden" name="prompt" value="consent">${boxes.join("")}` +
          '<button type="submit">Continue</button></form>',
      );
    return true;
  }
  if (req.method !== "POST" || !match[2]) return false;
  let body = "";
  for await (const chunk of req) body += chunk;
  const ticked = new URLSearchParams(body).getAll("scope");
  const resource = String(details.params.resource);
  const grant = new provider.Grant({
    accountId: details.session!.accountId,
    clientId: String(details.params.client_id),
  });
  // Our scopes are static scopes of this provider too (that is what holds a client to its
  // registration), so the grant names them both as scopes and as the resource's.
  const granted = ours.filter((s) => ticked.includes(s));
  const refused = ours.filter((s) => !ticked.includes(s));
  const oidc = [...asked.filter((s) => s === "openid" || s === "offline_access"), ...granted];
  if (oidc.length) grant.addOIDCScope(oidc.join(" "));
  if (granted.length) grant.addResourceScope(resource, granted.join(" "));
  if (refused.length) {
    grant.rejectOIDCScope(refused.join(" "));
    grant.rejectResourceScope(resource, refused.join(" "));
  }
  await provider.interactionFinished(
    req,
    res,
    { consent: { grantId: await grant.save() } },
    { mergeWithLastSubmission: true },
  );
  return true;
}

/** An access token for `resource` by client credentials (startIdp with `serviceClient`): a real JWT of the provider. */
export async function serviceToken(idp: Idp, resource: string, scope = ALL_SCOPES): Promise<string> {
  const basic = Buffer.from(`${SERVICE_CLIENT.id}:${SERVICE_CLIENT.secret}`).toString("base64");
  const res = await fetch(`${idp.issuer}/token`, {
    method: "POST",
    headers: { authorization: `Basic ${basic}`, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ grant_type: "client_credentials", resource, scope }),
  });
  const body = (await res.json()) as { access_token?: string };
  if (!body.access_token) throw new Error(`no access token from the provider: ${JSON.stringify(body)}`);
  return body.access_token;
}
