import { createRemoteJWKSet, errors as joseErrors, jwtVerify, type JWTPayload, type RemoteJWKSet } from "jose";

/** What this server reads from an authorization server's RFC 8414 / OpenID Connect metadata. */
interface IssuerMetadata {
  issuer: string;
  jwks_uri?: string;
  introspection_endpoint?: string;
  scopes_supported?: string[];
}

/** Signatures an access token may carry: asymmetric only (an HMAC key would be shared with us). */
const ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"];
/** Clock difference tolerated on exp/nbf/iat between this server and the issuer. */
const CLOCK_SKEW_SECONDS = 60;
/** A failed discovery is retried no sooner than this, so a flood of bad tokens cannot hammer the issuer. */
const DISCOVERY_RETRY_MS = 10_000;
const FETCH_TIMEOUT_MS = 5000;

/** A token refused for a reason the caller can fix (401 invalid_token); the message says which. */
export class InvalidToken extends Error {}

/**
 * One trusted authorization server: its metadata, discovered once from the issuer URL (RFC 8414
 * first, then OpenID Connect discovery) and its signing keys (jose's remote JWKS: cached, refetched
 * when a token names a key id it has not seen, so key rotation needs no restart).
 */
export class TrustedIssuer {
  private discovered?: Promise<IssuerMetadata>;
  private failedAt = 0;
  private keys?: RemoteJWKSet;

  constructor(readonly issuer: string) {}

  metadata(): Promise<IssuerMetadata> {
    if (!this.discovered || (this.failedAt && Date.now() - this.failedAt > DISCOVERY_RETRY_MS)) {
      this.failedAt = 0;
      this.discovered = discover(this.issuer).catch((err: Error) => {
        this.failedAt = Date.now();
        throw err;
      });
    }
    return this.discovered;
  }

  /** Verifies signature, issuer, audience, expiry (with skew); returns the claims. */
  async verify(token: string, audience: string[]): Promise<JWTPayload> {
    const meta = await this.metadata();
    if (!meta.jwks_uri)
      throw new Error(`the metadata of ${this.issuer} names no jwks_uri: JWT access tokens cannot be checked`);
    this.keys ??= createRemoteJWKSet(new URL(meta.jwks_uri), {
      timeoutDuration: FETCH_TIMEOUT_MS,
      cooldownDuration: 30_000,
      cacheMaxAge: 10 * 60_000,
    });
    try {
      const { payload } = await jwtVerify(token, this.keys, {
        issuer: this.issuer,
        audience,
        algorithms: ALGORITHMS,
        clockTolerance: CLOCK_SKEW_SECONDS,
        requiredClaims: ["exp", "sub"],
      });
      return payload;
    } catch (err) {
      throw tokenError(err);
    }
  }
}

function tokenError(err: unknown): Error {
  if (err instanceof joseErrors.JWTExpired) return new InvalidToken("The access token expired");
  if (err instanceof joseErrors.JWTClaimValidationFailed) {
    if (err.claim === "aud")
      return new InvalidToken(
        "The access token was issued for another resource (audience); request one for this server",
      );
    return new InvalidToken(`The access token's ${err.claim} claim is not acceptable`);
  }
  if (err instanceof joseErrors.JWKSNoMatchingKey)
    return new InvalidToken("The access token was signed with a key the issuer does not publish");
  if (err instanceof joseErrors.JOSEError && !(err instanceof joseErrors.JWKSTimeout))
    return new InvalidToken("The access token's signature or format is invalid");
  return err instanceof Error ? err : new Error(String(err));
}

/** RFC 8414 section 3 (path inserted), then OpenID Connect discovery (path appended, then inserted). */
export function discoveryUrls(issuer: string): string[] {
  const url = new URL(issuer);
  const path = url.pathname.replace(/\/+$/, "");
  const at = (p: string) => new URL(p, url.origin).href;
  return [
    at(`/.well-known/oauth-authorization-server${path}`),
    at(`${path}/.well-known/openid-configuration`),
    ...(path ? [at(`/.well-known/openid-configuration${path}`)] : []),
  ];
}

async function discover(issuer: string): Promise<IssuerMetadata> {
  const tried: string[] = [];
  for (const url of discoveryUrls(issuer)) {
    let response: Response;
    try {
      response = await fetch(url, {
        headers: { accept: "application/json" },
        signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
        redirect: "error",
      });
    } catch (err) {
      tried.push(`${url}: ${(err as Error).message}`);
      continue;
    }
    if (!response.ok) {
      tried.push(`${url}: HTTP ${response.status}`);
      await response.body?.cancel();
      continue;
    }
    const meta = (await response.json()) as IssuerMetadata;
    // RFC 8414 section 3.3: the document must name the issuer it was fetched for (mix-up defence).
    if (meta.issuer !== issuer) throw new Error(`the metadata at ${url} names issuer ${meta.issuer}, not ${issuer}`);
    return meta;
  }
  throw new Error(`no authorization server metadata for ${issuer} (${tried.join("; ")})`);
}
