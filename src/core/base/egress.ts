/**
 * The one scrubbing step every byte leaving the server passes: tool results, resource contents and
 * lists, prompts, errors, progress and task status lines, MCP log messages and stderr. It runs
 * before any truncation, so a secret cut in half cannot slip through.
 *
 * Two kinds of known secrets are replaced:
 * - configured ones (API keys, the HTTP token, a tenant's own keys): everywhere, never forgotten;
 * - caller-supplied ones (a secretValue, a Figma token, an import code): only where they can
 *   appear, never process-wide. A value a caller supplies scrubs the outputs of the call that
 *   supplied it (`forCall`) and, for the tenant that supplied it, every later output about the
 *   record it belongs to (a project: its details, logs, files), kept among the latest 1,000. A
 *   secret value may be any word (`document`): scrubbing it from every answer of every caller
 *   censored ordinary text and broke the views' script hashes.
 * Fields whose name says they hold a secret are dropped from objects.
 */
const SECRET_FIELD = /^(secretValue|token|apiKey|api_key|password|authorization|importCode)$/i;
/** Shorter values would blank out ordinary words in the outputs they scrub. */
const MIN_SECRET_LENGTH = 8;
const MAX_RECORD_SECRETS = 1000;
/** A secret cut by a snippet's "…" leaves at least this much of itself to be recognised by. */
const MIN_CUT_PREFIX = 4;
const REDACTED = "[redacted]";

/** Caller-supplied secrets of one tenant by the record they belong to, the latest 1,000 in all. */
class RecordSecrets {
  private readonly byRecord = new Map<string, Set<string>>();
  private count = 0;

  add(record: string, value: string): void {
    const set = this.byRecord.get(record) ?? new Set<string>();
    this.byRecord.delete(record);
    this.byRecord.set(record, set);
    if (set.has(value)) return;
    set.add(value);
    this.count++;
    while (this.count > MAX_RECORD_SECRETS) {
      const [oldest, values] = this.byRecord.entries().next().value!;
      const first = values.values().next().value!;
      values.delete(first);
      this.count--;
      if (values.size === 0) this.byRecord.delete(oldest);
    }
  }

  of(record: string | undefined): ReadonlySet<string> | undefined {
    return record === undefined ? undefined : this.byRecord.get(record);
  }
}

export class Egress {
  protected readonly configured: Set<string>;
  protected readonly records: RecordSecrets;

  constructor(configured?: Set<string>, records?: RecordSecrets) {
    this.configured = configured ?? new Set();
    this.records = records ?? new RecordSecrets();
  }

  /** A secret of the deployment itself (an API key from the environment): never forgotten. */
  addConfigured(value: string | undefined): void {
    if (value && value.length >= MIN_SECRET_LENGTH) this.configured.add(value);
  }

  /** A scrubber for one tenant: every configured secret plus the tenant's own keys; its own records. */
  derive(tenantSecrets: Iterable<string>): Egress {
    const child = new Egress();
    for (const value of [...this.configured, ...tenantSecrets]) child.addConfigured(value);
    return child;
  }

  /**
   * The scrubber of one call (or one resource read): what this tenant always scrubs, the secrets
   * already supplied for `record`, and those the call itself supplies.
   */
  forCall(record?: string): CallEgress {
    return new CallEgress(this.configured, this.records, record);
  }

  /** Replaces every known secret in a string. */
  text(text: string): string {
    return replaceAll(text, this.configured);
  }

  /** Deep copy without secret-named fields, every string scrubbed. `__proto__` keys stay plain data. */
  json<T>(value: T): T {
    return scrub(value, this, 0) as T;
  }
}

/** One call's scrubber: see Egress.forCall. */
export class CallEgress extends Egress {
  private readonly supplied = new Set<string>();

  constructor(
    configured: Set<string>,
    records: RecordSecrets,
    private readonly record: string | undefined,
  ) {
    super(configured, records);
  }

  /** A secret the caller sent in this call: scrubbed from this call's outputs and, later, its record's. */
  addSupplied(value: string | undefined): void {
    if (!value || value.length < MIN_SECRET_LENGTH || this.configured.has(value)) return;
    this.supplied.add(value);
    if (this.record !== undefined) this.records.add(this.record, value);
  }

  override text(text: string): string {
    let out = super.text(text);
    const recorded = this.records.of(this.record);
    if (recorded?.size) out = replaceCut(replaceAll(out, recorded), recorded);
    if (this.supplied.size) out = replaceCut(replaceAll(out, this.supplied), this.supplied);
    return out;
  }
}

function replaceAll(text: string, secrets: Iterable<string>): string {
  let out = text;
  for (const secret of secrets) if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  return out;
}

/** An upstream snippet cut mid-secret ("…tlm_caller_sec…") still hides what is left of it. */
function replaceCut(text: string, secrets: Iterable<string>): string {
  if (!text.includes("…")) return text;
  let out = text;
  for (const secret of secrets) {
    for (let n = secret.length - 1; n >= MIN_CUT_PREFIX; n--) {
      const cut = `${secret.slice(0, n)}…`;
      if (out.includes(cut)) out = out.split(cut).join(`${REDACTED}…`);
    }
  }
  return out;
}

function scrub(value: unknown, egress: Egress, depth: number): unknown {
  if (typeof value === "string") return egress.text(value);
  if (value === null || typeof value !== "object" || depth > 64) return value;
  if (Array.isArray(value)) return value.map((v) => scrub(v, egress, depth + 1));
  const out: Record<string, unknown> = {};
  const source = value as Record<string, unknown>;
  for (const key of Object.keys(source)) {
    const v = source[key];
    if (typeof v === "string" && SECRET_FIELD.test(key)) continue;
    const clean = scrub(v, egress, depth + 1);
    // Only `__proto__` needs defining (an assignment would set the copy's prototype); the rest is assigned.
    if (key === "__proto__")
      Object.defineProperty(out, key, { value: clean, enumerable: true, writable: true, configurable: true });
    else out[key] = clean;
  }
  return out;
}
