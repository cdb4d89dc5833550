/**
 * Masking of secret-looking values in upstream answers (the API key listing sends full keys and
 * webhook signing secrets). A masked value keeps a short prefix and the last four characters,
 * enough to tell keys apart and nothing more: "dfk_live_7Hq2…jYa" -> "dfk_live_…0jYa".
 *
 * A string is masked when
 * - its field name says it is a secret (key, secret, token, password, credential, signature, and
 *   compounds like signing_secret, api_key, accessToken), or it sits anywhere below such a field;
 * - or the value looks like one: a known key prefix (dfk_live_, whsec_, sk_live_, ghp_, ...) or any
 *   `word_live_`/`word_test_` prefix, a JWT, a "Bearer ..." credential, or a long run of letters
 *   and digits mixing upper case, lower case and digits (not in id fields);
 * - URLs keep their shape: only an embedded password and secret-named query values are masked.
 */

const ELLIPSIS = "…";
const FULL_MASK = "****";

/** Longest first, so "github_pat_" wins over shorter overlaps. */
const KNOWN_PREFIXES = [
  "github_pat_",
  "dfk_live_",
  "dfk_test_",
  "sk_live_",
  "sk_test_",
  "rk_live_",
  "rk_test_",
  "pk_live_",
  "pk_test_",
  "sk-proj-",
  "whsec_",
  "glpat-",
  "xoxb-",
  "xoxp-",
  "xoxa-",
  "ghp_",
  "gho_",
  "ghs_",
  "ghu_",
  "sk-",
  "SG.",
  "AKIA",
];
const GENERIC_PREFIX = /^[A-Za-z]{2,12}_(?:live|test|prod|sandbox|secret|key)_/;
const KEY_BODY = /^[A-Za-z0-9_\-+/=.]+$/;
const JWT = /^eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*$/;
const BEARER = /^(Bearer|Basic|Token)\s+(\S+)$/i;

const SECRET_WORDS =
  "key|keys|secret|secrets|token|tokens|password|passwd|pwd|passphrase|credential|credentials|" +
  "signature|sig|apikey|privatekey";
const SECRET_NAME_SNAKE = new RegExp(`(?:^|[_\\-.])(?:${SECRET_WORDS})$`, "i");
const SECRET_NAME_CAMEL = /[a-z0-9](?:Key|Keys|Secret|Secrets|Token|Tokens|Password|Credential|Credentials|Signature)$/;
const SECRET_NAME_WHOLE = /^(?:apikey|secretkey|accesskey|privatekey|authorization|auth|pass)$/i;
const ID_NAME = /(?:^|_)id$|[a-z]Id$|^uuid$/i;

/** Whether a field of this name holds a secret. */
export function isSecretField(name: string): boolean {
  return SECRET_NAME_SNAKE.test(name) || SECRET_NAME_CAMEL.test(name) || SECRET_NAME_WHOLE.test(name);
}

function knownPrefix(value: string): string | undefined {
  const known = KNOWN_PREFIXES.find((p) => value.startsWith(p));
  if (known) return known;
  return GENERIC_PREFIX.exec(value)?.[0];
}

/** Whether a value looks like a key or token by its shape alone. */
export function looksLikeSecret(value: string, fieldName = ""): boolean {
  const v = value.trim();
  if (BEARER.test(v)) return true;
  if (JWT.test(v)) return true;
  const prefix = knownPrefix(v);
  if (prefix && v.length - prefix.length >= 8 && KEY_BODY.test(v.slice(prefix.length))) return true;
  if (ID_NAME.test(fieldName)) return false;
  return v.length >= 24 && KEY_BODY.test(v) && /[A-Z]/.test(v) && /[a-z]/.test(v) && /[0-9]/.test(v);
}

/** The masked form of one secret value: known prefix (or first four characters) + "…" + last four. */
export function maskSecret(value: string): string {
  if (value.length === 0 || value.includes(ELLIPSIS) || /\*{4}/.test(value)) return value;
  const bearer = BEARER.exec(value.trim());
  if (bearer) return `${bearer[1]} ${maskSecret(bearer[2])}`;
  const prefix = knownPrefix(value);
  if (prefix) {
    const rest = value.slice(prefix.length);
    return rest.length >= 8 ? `${prefix}${ELLIPSIS}${rest.slice(-4)}` : `${prefix}${ELLIPSIS}`;
  }
  if (value.length >= 16) return `${value.slice(0, 4)}${ELLIPSIS}${value.slice(-4)}`;
  return FULL_MASK;
}

/** Masks the password and secret-named query values of a URL; undefined when nothing needed it. */
function maskUrl(value: string): string | undefined {
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  let changed = false;
  if (url.password) {
    url.password = FULL_MASK;
    changed = true;
  }
  for (const [name, v] of [...url.searchParams]) {
    if (v && (isSecretField(name) || looksLikeSecret(v, name))) {
      url.searchParams.set(name, maskSecret(v));
      changed = true;
    }
  }
  return changed ? url.toString().replaceAll(encodeURIComponent(ELLIPSIS), ELLIPSIS) : undefined;
}

interface MaskResult<T> {
  value: T;
  /** How many string values were masked. */
  masked: number;
}

/** Deep copy with every secret-looking string masked, wherever it sits. */
export function maskSecrets<T>(value: T): MaskResult<T> {
  let masked = 0;
  const walk = (v: unknown, name: string, underSecret: boolean, depth: number): unknown => {
    if (typeof v === "string") {
      if (v.length === 0) return v;
      if (underSecret || isSecretField(name) || looksLikeSecret(v, name)) {
        const out = maskSecret(v);
        if (out !== v) masked++;
        return out;
      }
      const url = maskUrl(v);
      if (url !== undefined) {
        masked++;
        return url;
      }
      return v;
    }
    if (v === null || typeof v !== "object" || depth > 64) return v;
    const secret = underSecret || isSecretField(name);
    if (Array.isArray(v)) return v.map((item) => walk(item, name, secret, depth + 1));
    const out: Record<string, unknown> = {};
    for (const [k, item] of Object.entries(v)) out[k] = walk(item, k, secret, depth + 1);
    return out;
  };
  const result = walk(value, "", false, 0) as T;
  return { value: result, masked };
}
