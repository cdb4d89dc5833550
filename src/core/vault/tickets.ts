import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";

/** What a link to the connect page is good for: one tenant, one service, one elicitation, a few minutes. */
export interface Ticket {
  /** The tenant (owner id) the key will be linked to. */
  tenant: string;
  service: string;
  elicitationId: string;
  /** Milliseconds since the epoch. */
  expires: number;
  /** Single use: consumed when a key is linked with it. */
  nonce: string;
  /** Shown on the page so the user can tell whose account they link to (the token's subject). */
  who: string;
  /**
   * The nonce store's generation when it was minted: a store that restarted since may have lost the
   * marker of its use, so the link is refused rather than trusted (as confirmations are).
   */
  generation: string;
}

/** A ticket of another store generation: the store restarted since it was minted. */
export const STALE_TICKET =
  "This link was made before the server restarted its store, so it no longer works: " +
  "call the tool again in your chat app for a new one.";

/** Counts attempts per name for a while (wrong keys tried with one link), on every replica at once. */
export interface AttemptCounter {
  /** Counts one more attempt of `name` and answers how many were made within `ttlMs` of the first. */
  add(name: string, ttlMs: number): Promise<number>;
}

/** In process (one replica, or no Redis): bounded, the oldest name forgotten first. */
export class MemoryAttemptCounter implements AttemptCounter {
  private readonly counts = new Map<string, { n: number; until: number }>();

  constructor(private readonly max = 10_000) {}

  async add(name: string, ttlMs: number): Promise<number> {
    const now = Date.now();
    const entry = this.counts.get(name);
    const next = entry && entry.until > now ? { n: entry.n + 1, until: entry.until } : { n: 1, until: now + ttlMs };
    this.counts.delete(name);
    if (this.counts.size >= this.max) this.counts.delete(this.counts.keys().next().value!);
    this.counts.set(name, next);
    return next.n;
  }
}

/** How long a link stays good: long enough to find a key in another tab, short enough to be useless later. */
export const TICKET_TTL_MS = 10 * 60_000;

/**
 * Signed (HMAC-SHA256 under a key derived from ENV.stateKey), not encrypted: it holds no secret,
 * and any replica can check it. The signature covers every field, so none can be changed.
 */
export class TicketSigner {
  constructor(private readonly key: Buffer) {}

  mint(fields: Omit<Ticket, "expires" | "nonce">, now = Date.now()): string {
    const ticket: Ticket = { ...fields, expires: now + TICKET_TTL_MS, nonce: randomBytes(16).toString("base64url") };
    const body = Buffer.from(JSON.stringify(ticket)).toString("base64url");
    return `${body}.${this.sign(body)}`;
  }

  /** The ticket, or a reason it is refused (tampered, expired, for another service). */
  open(raw: string | null | undefined, service: string, now = Date.now()): Ticket | { refused: string } {
    const [body, signature, extra] = (raw ?? "").split(".");
    if (!body || !signature || extra !== undefined || raw!.length > 2048)
      return { refused: "This link is incomplete: open the whole link your chat app gave you." };
    const expected = Buffer.from(this.sign(body));
    const given = Buffer.from(signature);
    if (expected.length !== given.length || !timingSafeEqual(expected, given))
      return { refused: "This link is not valid: ask your chat app for a new one by calling the tool again." };
    const ticket = JSON.parse(Buffer.from(body, "base64url").toString("utf8")) as Ticket;
    if (ticket.service !== service) return { refused: "This link is for another service." };
    if (ticket.expires < now)
      return { refused: "This link expired: call the tool again in your chat app for a new one." };
    if (typeof ticket.generation !== "string") return { refused: STALE_TICKET };
    return ticket;
  }

  /** The CSRF token of a form: bound to the ticket and to the browser's cookie. */
  csrf(ticketNonce: string, cookie: string): string {
    return this.sign(`csrf:${ticketNonce}:${cookie}`);
  }

  private sign(value: string): string {
    return createHmac("sha256", this.key).update(value).digest("base64url");
  }
}
