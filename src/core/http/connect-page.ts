import { createHash, randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { NonceStore } from "../tools/confirm.js";
import type { Logger } from "../base/logger.js";
import { type AttemptCounter, STALE_TICKET, TICKET_TTL_MS, type Ticket, type TicketSigner } from "../vault/tickets.js";
import type { Vault } from "../vault/vault.js";
import { telemetry } from "../base/telemetry.js";

interface ConnectService {
  name: string;
  /** As the user knows it, capitalized. */
  displayName: string;
  /** Where to find the key and what it looks like. */
  keyHint?: string;
}

export interface ConnectPageOptions {
  /** ENV.publicUrl: a form post must come from its origin; https there makes the cookie Secure. */
  publicUrl: string;
  services: readonly ConnectService[];
  tickets: TicketSigner;
  nonces: NonceStore;
  /** Keys tried per link, counted across replicas (at most MAX_ATTEMPTS checked upstream per link). */
  attempts: AttemptCounter;
  vault: Vault;
  /** A cheap upstream read with the key: undefined when it works, else what to tell the user. */
  verifyKey(service: string, key: string, signal: AbortSignal): Promise<string | undefined>;
  /** Told when a key was linked (the call that asked for it may go on). */
  onLinked?(ticket: Ticket): void;
  logger: Logger;
}

const MAX_FORM_BYTES = 8 * 1024;
const MAX_ATTEMPTS = 5;
const COOKIE = "sb_connect";

/**
 * GET/POST /connect/<service>: where a signed-in user links an upstream key, in their browser,
 * never through the chat. Reached only with a signed, single-use, short-lived ticket (the link a
 * URL-mode elicitation carries). Plain server-rendered HTML: a strict CSP (no script at all, no
 * external resource), a CSRF token bound to a cookie and the ticket, labels and focus styles for
 * the keyboard, light and dark. The key is checked with a cheap upstream read before it is kept.
 */
export function connectPages(
  options: ConnectPageOptions,
): (req: IncomingMessage, res: ServerResponse, url: URL) => Promise<boolean> {
  const byName = new Map(options.services.map((s) => [s.name, s]));
  const secure = new URL(options.publicUrl).protocol === "https:";
  const publicOrigin = new URL(options.publicUrl).origin;

  return async (req, res, url) => {
    const m = /^\/connect\/([a-z][a-z0-9_-]{0,31})$/.exec(url.pathname);
    if (!m) return false;
    const service = byName.get(m[1]);
    if (!service) {
      send(res, 404, page("Unknown service", `<p role="alert">There is no service named ${esc(m[1])} here.</p>`));
      return true;
    }
    if (req.method === "GET") {
      const ticket = await current(options.tickets.open(url.searchParams.get("ticket"), service.name));
      if ("refused" in ticket) {
        send(res, 400, page("Link not valid", `<p role="alert">${esc(ticket.refused)}</p>`));
        return true;
      }
      const cookie = randomBytes(18).toString("base64url");
      const setCookie =
        `${COOKIE}=${cookie}; Path=/connect; HttpOnly; SameSite=Strict; ` +
        `Max-Age=${TICKET_TTL_MS / 1000}${secure ? "; Secure" : ""}`;
      send(
        res,
        200,
        form(service, ticket, url.searchParams.get("ticket")!, options.tickets.csrf(ticket.nonce, cookie)),
        { "set-cookie": setCookie },
      );
      return true;
    }
    if (req.method !== "POST") {
      send(res, 405, page("Not allowed", "<p>Use the form.</p>"), { allow: "GET, POST" });
      return true;
    }
    await submit(req, res, service);
    return true;
  };

  /**
   * The ticket while its store generation is the current one. Checked on the page and before the key
   * is checked upstream; the single-use consume below is the authoritative check.
   */
  async function current(ticket: Ticket | { refused: string }): Promise<Ticket | { refused: string }> {
    if ("refused" in ticket) return ticket;
    return ticket.generation === (await options.nonces.generation()) ? ticket : { refused: STALE_TICKET };
  }

  async function submit(req: IncomingMessage, res: ServerResponse, service: ConnectService): Promise<void> {
    // A form posted from anywhere but this server's own page is refused (with the CSRF token below).
    const origin = req.headers.origin;
    if (origin !== undefined && origin !== publicOrigin)
      return send(res, 403, page("Not allowed", '<p role="alert">This form can only be sent from its own page.</p>'));
    const body = await readForm(req);
    if (!body) return send(res, 413, page("Too large", '<p role="alert">The form was too large.</p>'));
    const raw = body.get("ticket");
    const ticket = await current(options.tickets.open(raw, service.name));
    if ("refused" in ticket)
      return send(res, 400, page("Link not valid", `<p role="alert">${esc(ticket.refused)}</p>`));
    const cookie = cookieOf(req);
    if (!cookie || body.get("csrf") !== options.tickets.csrf(ticket.nonce, cookie)) {
      return send(
        res,
        403,
        page(
          "Session expired",
          '<p role="alert">This page was open too long or in another browser. ' +
            "Open the link from your chat app again.</p>",
        ),
      );
    }
    if ((await options.attempts.add(`link-try:${ticket.nonce}`, TICKET_TTL_MS)) > MAX_ATTEMPTS) {
      tried("too_many");
      return send(
        res,
        429,
        page(
          "Too many attempts",
          '<p role="alert">Too many keys were tried with this link. ' +
            "Call the tool again in your chat app for a new one.</p>",
        ),
      );
    }
    const key = (body.get("key") ?? "").trim();
    if (key.length < 8 || key.length > 1024 || /\s/.test(key)) {
      tried("malformed");
      return send(
        res,
        400,
        form(
          service,
          ticket,
          raw!,
          body.get("csrf")!,
          "That does not look like an API key: paste the whole key, without spaces.",
        ),
      );
    }
    const problem = await options
      .verifyKey(service.name, key, AbortSignal.timeout(15_000))
      .catch(() => `${service.displayName} could not be reached to check the key; try again in a moment.`);
    tried(problem ? "refused" : "accepted");
    if (problem) return send(res, 400, form(service, ticket, raw!, body.get("csrf")!, problem));
    const use = await options.nonces.consume(`link:${ticket.nonce}`, ticket.generation, TICKET_TTL_MS);
    if (use === "stale") return send(res, 400, page("Link not valid", `<p role="alert">${esc(STALE_TICKET)}</p>`));
    if (use !== "first") {
      return send(
        res,
        409,
        page(
          "Link already used",
          '<p role="alert">This link was already used. Call the tool again in your chat app if you need a new one.</p>',
        ),
      );
    }
    await options.vault.link(ticket.tenant, service.name, key);
    options.logger.info("connect: a key was linked", { service: service.name, elicitationId: ticket.elicitationId });
    options.onLinked?.(ticket);
    send(
      res,
      200,
      page(
        `${service.displayName} key linked`,
        `<p role="status">Your ${esc(service.displayName)} key ending in <strong>${esc(key.slice(-4))}</strong> is ` +
          "linked. You can close this tab and go back to your chat.</p>",
      ),
    );
  }
}

function form(service: ConnectService, ticket: Ticket, raw: string, csrf: string, error?: string): string {
  const minutes = Math.max(1, Math.round((ticket.expires - Date.now()) / 60_000));
  return page(
    `Link your ${service.displayName} key`,
    `<p>Signed in as <strong>${esc(ticket.who)}</strong>. The key you enter here stays between this page and the
server: it never goes through your chat or the AI model. It is stored encrypted and used only for your requests.</p>
${error ? `<p class="error" role="alert" id="key-error">${esc(error)}</p>` : ""}
<form method="post" autocomplete="off">
  <input type="hidden" name="ticket" value="${esc(raw)}">
  <input type="hidden" name="csrf" value="${esc(csrf)}">
  <label for="key">${esc(service.displayName)} API key</label>
  ${service.keyHint ? `<p class="small" id="key-hint">${esc(service.keyHint)}</p>` : ""}
  <input id="key" name="key" type="password" required minlength="8" maxlength="1024" autofocus
    spellcheck="false" autocapitalize="off"${describedBy(service, error)}>
  <button type="submit">Check and link</button>
</form>
<p class="small">This link works once, for about ${minutes} more minute${minutes === 1 ? "" : "s"}.
To remove the key later, ask your assistant to unlink it.</p>`,
  );
}

function describedBy(service: ConnectService, error?: string): string {
  const ids = [...(error ? ["key-error"] : []), ...(service.keyHint ? ["key-hint"] : [])];
  return `${error ? ' aria-invalid="true"' : ""}${ids.length ? ` aria-describedby="${ids.join(" ")}"` : ""}`;
}

const STYLE = `:root{color-scheme:light dark;--bg:#fff;--fg:#1a1a1a;--muted:#555;--accent:#0b57d0;--err:#b3261e;
--line:#999}
@media (prefers-color-scheme:dark){:root{--bg:#121212;--fg:#eee;--muted:#bbb;--accent:#8ab4f8;--err:#f2b8b5;
--line:#777}}
body{font:16px/1.5 system-ui,sans-serif;background:var(--bg);color:var(--fg);max-width:34rem;margin:3rem auto;
padding:0 1rem}
h1{font-size:1.4rem}label{display:block;font-weight:600;margin:1rem 0 .25rem}
input[type=password]{width:100%;box-sizing:border-box;padding:.6rem;font:inherit;border:1px solid var(--line);
border-radius:6px;background:var(--bg);color:var(--fg)}
button{margin-top:1rem;padding:.6rem 1.2rem;font:inherit;border:0;border-radius:6px;background:var(--accent);
color:var(--bg);cursor:pointer}
:focus-visible{outline:3px solid var(--accent);outline-offset:2px}.error{color:var(--err)}
.small{color:var(--muted);font-size:.875rem}#key-hint{margin:0 0 .4rem}`;

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${esc(title)}</title><style>${STYLE}</style></head>
<body><main><h1>${esc(title)}</h1>
${body}
</main></body></html>`;
}

/** No script, nothing from elsewhere, no framing, forms only back here; the inline style is pinned by its hash. */
const CSP = [
  "default-src 'none'",
  `style-src 'sha256-${createHash("sha256").update(STYLE).digest("base64")}'`,
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join("; ");

function send(res: ServerResponse, status: number, html: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, {
    "content-type": "text/html; charset=utf-8",
    "content-security-policy": CSP,
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    // same-origin: the browser still sends Origin on the form post (no-referrer makes it "null").
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
    ...headers,
  });
  res.end(html);
}

function esc(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function cookieOf(req: IncomingMessage): string | undefined {
  for (const part of (req.headers.cookie ?? "").split(";")) {
    const [name, value] = part.trim().split("=");
    if (name === COOKIE && value) return value;
  }
  return undefined;
}

/** An urlencoded form of at most 8 KiB, read within 15 s; undefined past either. */
function readForm(req: IncomingMessage): Promise<URLSearchParams | undefined> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const timer = setTimeout(() => done(undefined), 15_000);
    const done = (value: URLSearchParams | undefined) => {
      clearTimeout(timer);
      req.removeAllListeners("data");
      if (!value) req.pause();
      resolve(value);
    };
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_FORM_BYTES) return done(undefined);
      chunks.push(chunk);
    });
    req.once("end", () => done(new URLSearchParams(Buffer.concat(chunks).toString("utf8"))));
    req.once("error", () => done(undefined));
  });
}

/** One key tried with a connect link: switchboard.linked_key.attempts by outcome. */
function tried(outcome: "too_many" | "malformed" | "refused" | "accepted"): void {
  telemetry.add("linked.attempts", 1, { outcome });
}
