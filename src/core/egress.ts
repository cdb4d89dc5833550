/**
 * The one scrubbing step every byte leaving the server passes: tool results, resource contents and
 * lists, prompts, errors, progress and task status lines, MCP log messages and stderr. It runs
 * before any truncation, so a secret cut in half cannot slip through.
 *
 * Two kinds of known secrets are replaced wherever they appear:
 * - configured ones (API keys, the HTTP token): registered at start and never evicted;
 * - caller-supplied ones (a secretValue, a Figma token, an import code): kept in a bounded set,
 *   oldest dropped first, which can never push out a configured one.
 * Fields whose name says they hold a secret are dropped from objects.
 */
const SECRET_FIELD = /^(secretValue|token|apiKey|api_key|password|authorization|importCode)$/i;
/** Shorter values would blank out ordinary words in every session's output. */
const MIN_SECRET_LENGTH = 8;
const MAX_CALLER_SECRETS = 1000;
const REDACTED = "[redacted]";

export class Egress {
  private readonly configured = new Set<string>();
  private readonly supplied = new Set<string>();

  /** A secret of the deployment itself (an API key from the environment): never forgotten. */
  addConfigured(value: string | undefined): void {
    if (value && value.length >= MIN_SECRET_LENGTH) this.configured.add(value);
  }

  /** A scrubber for one tenant: every secret of this one, plus the tenant's own keys, never forgotten. */
  derive(tenantSecrets: Iterable<string>): Egress {
    const child = new Egress();
    for (const value of [...this.configured, ...tenantSecrets]) child.addConfigured(value);
    return child;
  }

  /** A secret a caller sent (a secretValue, a token): remembered among the latest 1,000. */
  addSupplied(value: string | undefined): void {
    if (!value || value.length < MIN_SECRET_LENGTH || this.configured.has(value)) return;
    this.supplied.delete(value);
    this.supplied.add(value);
    if (this.supplied.size > MAX_CALLER_SECRETS) this.supplied.delete(this.supplied.values().next().value!);
  }

  /** Replaces every known secret in a string. */
  text(text: string): string {
    let out = text;
    for (const set of [this.configured, this.supplied]) {
      for (const secret of set) if (out.includes(secret)) out = out.split(secret).join(REDACTED);
    }
    return out;
  }

  /** Deep copy without secret-named fields, every string scrubbed. `__proto__` keys stay plain data. */
  json<T>(value: T): T {
    return scrub(value, this, 0) as T;
  }
}

function scrub(value: unknown, egress: Egress, depth: number): unknown {
  if (typeof value === "string") return egress.text(value);
  if (value === null || typeof value !== "object" || depth > 64) return value;
  if (Array.isArray(value)) return value.map((v) => scrub(v, egress, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    if (SECRET_FIELD.test(key) && typeof v === "string") continue;
    Object.defineProperty(out, key, { value: scrub(v, egress, depth + 1), enumerable: true, writable: true, configurable: true });
  }
  return out;
}
