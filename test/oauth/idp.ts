// A real OpenID provider (oidc-provider, OpenID Certified) on loopback for the OAuth tests: resource
// indicators (RFC 8707) with JWT access tokens (RFC 9068) per resource, PKCE, its development
// sign-in and consent pages (any login name is a user; that name is the token's subject), and one
// pre-registered public client.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import Provider from "oidc-provider";
import { exportJWK, generateKeyPair } from "jose";

export const CLIENT_ID = "switchboard-e2e";
export const ALL_SCOPES = "switchboard:read switchboard:write switchboard:spend";

export interface Idp {
  issuer: string;
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

/** `resources`: the resource indicators the provider mints tokens for (audience = the indicator). */
export async function startIdp(options: { redirectUri: string; resources: string[] }): Promise<Idp> {
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
      },
    ],
    scopes: ["openid", "offline_access", ...ALL_SCOPES.split(" ")],
    pkce: { required: () => true },
    findAccount: async (_ctx: unknown, id: string) => ({ accountId: id, claims: async () => ({ sub: id }) }),
    features: {
      devInteractions: { enabled: true },
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
  const server: Server = createServer(provider.callback());
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  return {
    issuer,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
