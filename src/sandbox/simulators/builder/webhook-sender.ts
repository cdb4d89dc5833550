import { Agent } from "undici";

/**
 * The simulator's real deliveries: an HTTPS POST of the documented payload with the subscription's
 * headers, to subscriptions on this machine only (a test's own server or TLS terminator; nothing
 * leaves the host). `ca` is a test CA the sandbox alone trusts for these requests. Faults make the
 * next deliveries go missing, late, twice, or with a forged secret (the reference rules none out).
 */
export type WebhookFault =
  | { kind: "drop"; times?: number }
  | { kind: "late"; ms: number; times?: number }
  | { kind: "duplicate"; times?: number }
  | { kind: "forge"; times?: number };

export interface SentAttempt {
  at: number;
  fault?: WebhookFault["kind"];
  status?: number;
  error?: string;
}

interface Outgoing {
  url: string;
  headers: Record<string, string>;
  body: unknown;
  /** Filled in as the attempts end. */
  attempts: SentAttempt[];
}

const TIMEOUT_MS = 5000;
const LOOPBACK = new Set(["localhost", "127.0.0.1", "[::1]"]);

export class WebhookSender {
  /** Its own agent, CA or not: dist/'s undici entry (scripts/build.mjs) has no top-level request(). */
  private readonly dispatcher: Agent;
  private readonly faults: Array<WebhookFault & { left: number }> = [];
  private readonly pending = new Set<Promise<void>>();

  constructor(ca?: string) {
    this.dispatcher = new Agent(ca ? { connect: { ca } } : {});
  }

  /** Whether a subscription's URL gets real deliveries (https on a loopback host). */
  static reaches(url: string): boolean {
    try {
      const u = new URL(url);
      return u.protocol === "https:" && LOOPBACK.has(u.hostname);
    } catch {
      return false;
    }
  }

  inject(fault: WebhookFault): void {
    this.faults.push({ ...fault, left: fault.times ?? 1 });
  }

  send(out: Outgoing): void {
    if (!WebhookSender.reaches(out.url)) return;
    const fault = this.faults[0];
    if (fault && --fault.left <= 0) this.faults.shift();
    const kind = fault?.kind;
    if (kind === "drop") {
      out.attempts.push({ at: Date.now(), fault: "drop" });
      return;
    }
    const headers =
      kind === "forge"
        ? Object.fromEntries(Object.keys(out.headers).map((k) => [k, "forged-secret-value-0000"]))
        : out.headers;
    const delay = fault?.kind === "late" ? fault.ms : 0;
    const times = kind === "duplicate" ? 2 : 1;
    for (let i = 0; i < times; i++) this.track(this.post(out, headers, delay, kind));
  }

  /** Resolves once every delivery started so far got its answer (or failed). */
  async settled(): Promise<void> {
    while (this.pending.size) await Promise.all([...this.pending]);
  }

  close(): void {
    void this.dispatcher.close().catch(() => undefined);
  }

  private track(p: Promise<void>): void {
    this.pending.add(p);
    void p.finally(() => this.pending.delete(p));
  }

  private async post(
    out: Outgoing,
    headers: Record<string, string>,
    delayMs: number,
    fault: WebhookFault["kind"] | undefined,
  ): Promise<void> {
    if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs).unref());
    const attempt: SentAttempt = { at: Date.now(), ...(fault ? { fault } : {}) };
    try {
      const url = new URL(out.url);
      const res = await this.dispatcher.request({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: "POST",
        headers: { ...headers, "content-type": "application/json" },
        body: JSON.stringify(out.body),
        headersTimeout: TIMEOUT_MS,
        bodyTimeout: TIMEOUT_MS,
      });
      await res.body.dump();
      attempt.status = res.statusCode;
    } catch (err) {
      attempt.error = err instanceof Error ? err.message : String(err);
    }
    out.attempts.push(attempt);
  }
}
