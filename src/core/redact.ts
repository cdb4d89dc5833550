/**
 * Secret hygiene in one place. Two layers:
 * - known secrets (configured API keys, values the caller sent as secretValue or design.token)
 *   are registered and replaced wherever they appear in text;
 * - fields whose name says they hold a secret are dropped from any object before it leaves.
 */
const SECRET_FIELD = /^(secretValue|token|apiKey|api_key|password|authorization)$/i;
/** Shorter values would blank out ordinary words in every session's output. */
const MIN_SECRET_LENGTH = 8;
/** Caller-supplied secrets are kept for scrubbing until this many newer ones arrive. */
const MAX_SECRETS = 1000;

export class SecretRegistry {
  private readonly secrets = new Set<string>();

  add(value: string | undefined): void {
    if (!value || value.length < MIN_SECRET_LENGTH) return;
    this.secrets.delete(value);
    this.secrets.add(value);
    if (this.secrets.size > MAX_SECRETS) this.secrets.delete(this.secrets.values().next().value!);
  }

  /** Replaces every registered secret in a string. */
  scrubText(text: string): string {
    let out = text;
    for (const secret of this.secrets) {
      if (out.includes(secret)) out = out.split(secret).join("[redacted]");
    }
    return out;
  }

  /** Deep copy without secret-named fields and with registered secrets scrubbed from strings. */
  scrub<T>(value: T): T {
    return scrubValue(value, this, 0) as T;
  }
}

function scrubValue(value: unknown, registry: SecretRegistry, depth: number): unknown {
  if (typeof value === "string") return registry.scrubText(value);
  if (value === null || typeof value !== "object" || depth > 64) return value;
  if (Array.isArray(value)) return value.map((v) => scrubValue(v, registry, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    if (SECRET_FIELD.test(key) && typeof v === "string") continue;
    out[key] = scrubValue(v, registry, depth + 1);
  }
  return out;
}
