import { createHash } from "node:crypto";
import { decodeJwt } from "jose";
import { Introspection, type IntrospectionOptions } from "./introspect.js";
import { InvalidToken, TrustedIssuer } from "./issuer.js";
import { grantedScopes, SCOPES } from "./scopes.js";
import { telemetry } from "../base/telemetry.js";

interface OAuthSettings {
  /** The MCP endpoint as clients reach it: the protected resource's identifier (RFC 8707). */
  publicUrl: string;
  issuers: string[];
  /** The audience tokens must carry; defaults to publicUrl. */
  audience?: string;
  introspection?: IntrospectionOptions;
  documentationUrl?: string;
  /** The scopes this server's tools need (in SCOPES order): the metadata's list and the sign-in challenge. */
  scopes?: string[];
}

/** Who called: the token's issuer and subject are the tenant; its scopes decide what it may call. */
export interface Identity {
  issuer: string;
  subject: string;
  scopes: string[];
  clientId?: string;
  /** Seconds since the epoch. */
  expiresAt: number;
}

/** A refusal ready to send: status, WWW-Authenticate challenge and an OAuth error body. */
export interface Refusal {
  status: 401 | 403 | 503;
  headers: Record<string, string>;
  body: { error: string; error_description: string };
}

/**
 * How long a verified token is taken as verified without a new check (a signature, an
 * introspection): its requests skip the cost and ENV.unauthRate. Never past the token's expiry;
 * a token revoked at an introspecting authorization server stops working within this.
 */
const VERIFIED_MS = 30_000;
/** Verified tokens remembered at once (each a hash and an identity); past it the oldest goes. */
const MAX_VERIFIED = 10_000;

const bearerToken = (authorization: string | undefined) =>
  /^Bearer\s+([A-Za-z0-9\-._~+/]+=*)\s*$/i.exec(authorization ?? "")?.[1];

const quoted = (value: string) => `"${value.replace(/[\\"]/g, "\\$&").replace(/[^\x20-\x7e]/g, " ")}"`;

/**
 * This server as an OAuth 2.1 resource server (MCP authorization, 2026-07-28): it publishes its
 * protected resource metadata (RFC 9728), checks bearer access tokens locally against the trusted
 * issuers' published keys (or by RFC 7662 introspection for opaque tokens), and answers what a
 * client needs to (re)authorize: 401 with the metadata URL, 403 insufficient_scope with the scope.
 * Tokens are never passed on to anyone: the upstreams see only the keys their users linked.
 */
export class ResourceServer {
  readonly resource: string;
  /** The path-aware metadata URL (RFC 9728 section 3.1), named in every challenge. */
  readonly metadataUrl: string;
  private readonly metadataPaths: Set<string>;
  private readonly issuers: Map<string, TrustedIssuer>;
  private readonly audiences: string[];
  private readonly introspection?: Introspection;
  private readonly scopes: string[];
  /** Verified tokens by their SHA-256 (never the token itself), until when they are taken as verified. */
  private readonly verified = new Map<string, { until: number; identity: Identity }>();
  /** Tokens checked at a cost (a signature verified, an introspection asked), for tests and diagnostics. */
  checks = 0;

  constructor(private readonly settings: OAuthSettings) {
    this.resource = new URL(settings.publicUrl).href;
    this.metadataUrl = protectedResourceMetadataUrl(settings.publicUrl);
    this.metadataPaths = new Set([new URL(this.metadataUrl).pathname, "/.well-known/oauth-protected-resource"]);
    this.issuers = new Map(settings.issuers.map((i) => [i, new TrustedIssuer(i)]));
    const audience = settings.audience ?? settings.publicUrl;
    // A trailing slash is the same resource to most authorization servers' resource indicators.
    this.audiences = [...new Set([audience, audience.replace(/\/+$/, ""), `${audience.replace(/\/+$/, "")}/`])];
    this.introspection = settings.introspection && new Introspection(settings.introspection);
    this.scopes = settings.scopes ?? SCOPES;
  }

  /** RFC 9728 metadata for a GET of one of the well-known paths, else undefined. */
  metadataFor(pathname: string): Record<string, unknown> | undefined {
    if (!this.metadataPaths.has(pathname)) return undefined;
    return {
      resource: this.resource,
      authorization_servers: [...this.issuers.keys()],
      scopes_supported: this.scopes,
      bearer_methods_supported: ["header"],
      resource_name: "Switchboard MCP",
      ...(this.settings.documentationUrl ? { resource_documentation: this.settings.documentationUrl } : {}),
    };
  }

  /** Warms discovery at start, so the first request does not pay for it and a wrong issuer shows in the log. */
  async discover(): Promise<Array<{ issuer: string; error?: string }>> {
    return Promise.all(
      [...this.issuers.values()].map((i) =>
        i.metadata().then(
          () => ({ issuer: i.issuer }),
          (err: Error) => ({ issuer: i.issuer, error: err.message }),
        ),
      ),
    );
  }

  /** The caller behind a token verified within VERIFIED_MS, without checking it again; else undefined. */
  known(authorization: string | undefined): Identity | undefined {
    const token = bearerToken(authorization);
    if (!token) return undefined;
    const key = tokenHash(token);
    const hit = this.verified.get(key);
    if (hit && hit.until > Date.now()) return hit.identity;
    if (hit) this.verified.delete(key);
    return undefined;
  }

  /** The caller behind an Authorization header; throws InvalidToken (401) or another Error (503). */
  async authenticate(authorization: string | undefined): Promise<Identity> {
    const token = bearerToken(authorization);
    if (!token) throw new InvalidToken(authorization ? "The Authorization header is not a bearer token" : "");
    const identity = await this.check(token);
    const until = Math.min(Date.now() + VERIFIED_MS, identity.expiresAt * 1000);
    if (until > Date.now()) {
      if (this.verified.size >= MAX_VERIFIED) this.verified.delete(this.verified.keys().next().value!);
      this.verified.set(tokenHash(token), { until, identity });
    }
    return identity;
  }

  private check(token: string): Promise<Identity> {
    if (token.split(".").length === 3) return this.fromJwt(token);
    if (this.introspection) {
      this.checks++;
      return this.fromIntrospection(token);
    }
    throw new InvalidToken("The access token is not a JWT and this server has no introspection endpoint");
  }

  private async fromJwt(token: string): Promise<Identity> {
    let iss: unknown;
    try {
      iss = decodeJwt(token).iss;
    } catch {
      throw new InvalidToken("The access token is malformed");
    }
    const issuer = typeof iss === "string" ? this.issuers.get(iss) : undefined;
    if (!issuer) throw new InvalidToken("The access token comes from an issuer this server does not trust");
    this.checks++;
    const claims = await issuer.verify(token, this.audiences);
    // An empty subject would make every such token one tenant: (issuer, "").
    if (typeof claims.sub !== "string" || claims.sub === "")
      throw new InvalidToken("The access token names no subject (its sub claim is empty)");
    return {
      issuer: issuer.issuer,
      subject: claims.sub,
      scopes: grantedScopes(claims as { scope?: unknown; scp?: unknown }),
      clientId:
        typeof claims.client_id === "string"
          ? claims.client_id
          : typeof claims.azp === "string"
            ? claims.azp
            : undefined,
      expiresAt: claims.exp!,
    };
  }

  private async fromIntrospection(token: string): Promise<Identity> {
    const answer = await this.introspection!.introspect(token);
    const issuer = answer.iss ?? (this.issuers.size === 1 ? [...this.issuers.keys()][0] : undefined);
    if (!issuer || !this.issuers.has(issuer))
      throw new InvalidToken("The access token comes from an issuer this server does not trust");
    const audiences = answer.aud === undefined ? [] : Array.isArray(answer.aud) ? answer.aud : [answer.aud];
    if (!audiences.some((a) => this.audiences.includes(a)))
      throw new InvalidToken(
        "The access token was issued for another resource (audience); request one for this server",
      );
    if (!answer.sub) throw new InvalidToken("The introspected token names no subject");
    if (!answer.exp || answer.exp * 1000 < Date.now()) throw new InvalidToken("The access token expired");
    return {
      issuer,
      subject: answer.sub,
      scopes: grantedScopes(answer),
      clientId: answer.client_id,
      expiresAt: answer.exp,
    };
  }

  /**
   * 401: no token, or one that is not valid here. The challenge names every scope of this server,
   * not just what the request in hand needs: a client that registers itself (dynamic client
   * registration) registers with the first challenge's scope (MCP's scope selection: the challenge,
   * else scopes_supported), and a provider that holds it to its registration would refuse every
   * later step-up. The user may still grant less at the provider; a 403 then asks for the rest.
   */
  unauthorized(err: unknown): Refusal {
    if (!(err instanceof InvalidToken)) {
      telemetry.add("oauth.rejections", 1, { status: 503, reason: "issuer_unavailable" });
      return {
        status: 503,
        headers: { "retry-after": "5" },
        body: {
          error: "temporarily_unavailable",
          error_description: "The authorization server's keys could not be fetched; retry shortly",
        },
      };
    }
    const description = err.message;
    telemetry.add("oauth.rejections", 1, { status: 401, reason: description ? "invalid_token" : "no_token" });
    const params = [
      ...(description ? [`error="invalid_token"`, `error_description=${quoted(description)}`] : []),
      `resource_metadata=${quoted(this.metadataUrl)}`,
      `scope=${quoted(this.scopes.join(" "))}`,
    ];
    return {
      status: 401,
      headers: { "www-authenticate": `Bearer ${params.join(", ")}` },
      body: {
        error: "invalid_token",
        error_description:
          description ||
          "This endpoint needs an OAuth access token: discover the authorization server from the resource_metadata URL",
      },
    };
  }

  /** 403 when the token lacks a scope the request needs; undefined when it has them all. */
  authorize(identity: Identity, needed: string[]): Refusal | undefined {
    const missing = needed.filter((s) => !identity.scopes.includes(s));
    if (missing.length === 0) return undefined;
    // Step-up: ask for what the token already has of ours plus what is missing, so no grant is lost.
    const scope = [...new Set([...identity.scopes.filter((s) => this.scopes.includes(s)), ...needed])].join(" ");
    const description = `This call needs the ${missing.join(" and ")} scope; authorize again with scope "${scope}"`;
    telemetry.add("oauth.rejections", 1, { status: 403, reason: "insufficient_scope" });
    return {
      status: 403,
      headers: {
        "www-authenticate":
          `Bearer error="insufficient_scope", scope=${quoted(scope)}, ` +
          `resource_metadata=${quoted(this.metadataUrl)}, error_description=${quoted(description)}`,
      },
      body: { error: "insufficient_scope", error_description: description },
    };
  }
}

/** The path-aware URL of the protected resource metadata of the resource at `publicUrl` (RFC 9728 section 3.1). */
export function protectedResourceMetadataUrl(publicUrl: string): string {
  const url = new URL(publicUrl);
  return new URL(`/.well-known/oauth-protected-resource${url.pathname.replace(/\/+$/, "")}`, url.origin).href;
}

const tokenHash = (token: string) => createHash("sha256").update(token).digest("base64url");
