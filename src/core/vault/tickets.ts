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
}

/** How long a link stays good: long enough to find a key in another tab, short enough to be useless later. */
export const TICKET_TTL_MS = 10 * 60_000;

/**
 * Signed (HMAC-SHA256 under a key derived from MCP_STATE_KEY), not encrypted: it holds no secret,
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
