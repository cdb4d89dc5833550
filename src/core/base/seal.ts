import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from "node:crypto";

/**
 * The keys hosted mode derives from ENV.stateKey, one per purpose (HKDF), so a replica needs one
 * secret: encryption of what a task keeps at rest, tenant ids, and confirmation signatures. Without
 * ENV.stateKey each process draws a random key: fine for one process, useless across replicas.
 */
export class Sealer {
  private readonly encryptionKey: Buffer;
  private readonly tenantKey: Buffer;
  private readonly callKey: Buffer;
  readonly requestStateKey: Buffer;
  /** Signs the single-use links to the connect page (core/vault/tickets.ts). */
  readonly linkKey: Buffer;
  /** Names tenants' webhook paths and derives their delivery secrets (core/http/hooks.ts). */
  readonly hookKey: Buffer;

  constructor(secret: string | undefined) {
    const root = secret ? Buffer.from(secret, "utf8") : randomBytes(32);
    const derive = (purpose: string) => Buffer.from(hkdfSync("sha256", root, "switchboard-mcp", purpose, 32));
    this.encryptionKey = derive("state-encryption");
    this.tenantKey = derive("tenant-id");
    this.requestStateKey = derive("request-state");
    this.linkKey = derive("link-ticket");
    this.hookKey = derive("webhook");
    this.callKey = derive("call-fingerprint");
  }

  /** A keyed hash that names a call (its caller, tool and arguments) without revealing them. */
  fingerprint(text: string): string {
    return createHmac("sha256", this.callKey).update(text).digest("base64url");
  }

  /** AES-256-GCM; the associated data binds the blob to its place (a task id), so blobs cannot be swapped. */
  seal(value: unknown, boundTo: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.encryptionKey, iv);
    cipher.setAAD(Buffer.from(boundTo));
    const body = Buffer.concat([cipher.update(JSON.stringify(value), "utf8"), cipher.final()]);
    return `v1.${Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64url")}`;
  }

  /** Throws when the blob was tampered with, moved, or sealed under another key. */
  open<T>(sealed: string, boundTo: string): T {
    if (!sealed.startsWith("v1.")) throw new Error("unknown sealed-state version");
    const raw = Buffer.from(sealed.slice(3), "base64url");
    const decipher = createDecipheriv("aes-256-gcm", this.encryptionKey, raw.subarray(0, 12));
    decipher.setAAD(Buffer.from(boundTo));
    decipher.setAuthTag(raw.subarray(12, 28));
    return JSON.parse(Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString("utf8")) as T;
  }

  /**
   * A tenant is the identity behind the credentials: a keyed hash of every key the caller sent, so
   * the same keys give the same tenant on every replica and the id reveals nothing of them.
   */
  tenantId(credentials: Readonly<Record<string, string>>): string {
    const canonical = Object.keys(credentials)
      .sort()
      .map((service) => `${service}=${credentials[service]}`)
      .join("\n");
    return `t_${createHmac("sha256", this.tenantKey).update(canonical).digest("base64url").slice(0, 22)}`;
  }
}
