import { createHash } from "node:crypto";
import { InvalidToken } from "./issuer.js";

/** What RFC 7662 answers for an active token (the fields this server reads). */
export interface Introspected {
  active: boolean;
  iss?: string;
  sub?: string;
  aud?: string | string[];
  exp?: number;
  scope?: string;
  client_id?: string;
}

export interface IntrospectionOptions {
  url: string;
  clientId: string;
  clientSecret: string;
  /** Answers kept at once; past it the oldest goes. */
  cacheSize?: number;
}

/** How long an answer is reused at most: a token revoked at the authorization server stops working within this. */
const CACHE_MS = 30_000;

/**
 * RFC 7662 introspection for opaque access tokens. Answers are cached by a hash of the token (never
 * the token itself) for at most 30 s and never past the token's expiry.
 */
export class Introspection {
  private readonly cache = new Map<string, { until: number; answer: Introspected }>();

  constructor(private readonly options: IntrospectionOptions) {}

  async introspect(token: string): Promise<Introspected> {
    const key = createHash("sha256").update(token).digest("base64url");
    const now = Date.now();
    const hit = this.cache.get(key);
    if (hit && hit.until > now) return hit.answer;
    this.cache.delete(key);
    const basic = Buffer.from(
      `${encodeURIComponent(this.options.clientId)}:${encodeURIComponent(this.options.clientSecret)}`,
    ).toString("base64");
    const response = await fetch(this.options.url, {
      method: "POST",
      headers: {
        authorization: `Basic ${basic}`,
        "content-type": "application/x-www-form-urlencoded",
        accept: "application/json",
      },
      body: new URLSearchParams({ token, token_type_hint: "access_token" }),
      signal: AbortSignal.timeout(5000),
      redirect: "error",
    });
    if (!response.ok) throw new Error(`the introspection endpoint answered HTTP ${response.status}`);
    const answer = (await response.json()) as Introspected;
    if (answer.active !== true) throw new InvalidToken("The access token is not active (revoked, expired or unknown)");
    const until = Math.min(now + CACHE_MS, (answer.exp ?? 0) * 1000);
    if (until > now) {
      if (this.cache.size >= (this.options.cacheSize ?? 10_000)) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(key, { until, answer });
    }
    return answer;
  }
}
