import type { Logger } from "../../core/base/logger.js";
import type { PushEndpoint } from "../../core/service/service.js";
import type { Poller } from "../../core/upstream/poller.js";
import { UpstreamError } from "../../core/upstream/upstream.js";
import { WEBHOOK_EVENTS, type Webhook, type WebhooksClient } from "./api/webhooks.js";
import { delivery } from "./webhook-payload.js";

/** After a failed subscription (not a 409), the next wait tries again after this long. */
const RETRY_MS = 5 * 60_000;
/** A poll that saw a run end first still matches a delivery arriving this soon after. */
const GRACE_MS = 3000;
/** Projects whose last delivery time is remembered. */
const MAX_REMEMBERED = 1000;
/** The note a replica that found a miss sends the tenant's instances on the others (PushEndpoint.tell). */
const MISSED = "missed";

type Subscription = "none" | "subscribing" | "ours" | "theirs" | "failed";

/**
 * BUILD_WEBHOOKS=on, one tenant (docs/deployment.md "Webhooks"). On its first wait the account's
 * agent.prompt.finished and project.credit_limit.reached webhooks are subscribed to this tenant's
 * address, never replacing one the account already has. A delivery is a hint: the waits on its
 * project read their status once more now and end by the usual completion rules. From the first
 * delivery on, agent polls slow to BUILD_WEBHOOK_POLL_MS; a run whose end a poll saw with no
 * delivery within the grace period puts them back to the normal interval until the next one, and
 * has every agent wait of the tenant read at once (docs/deployment.md, the worst case).
 */
export class BuildPush {
  private subscription: Subscription = "none";
  private retryAt = 0;
  private healthy = false;
  private readonly delivered = new Map<string, number>();
  /** Ends a poll saw first, by project: a delivery within the grace period still matches. */
  private readonly pending = new Map<string, { since: number; timer: NodeJS.Timeout }>();
  private readonly creditListeners = new Map<string, Set<(data: Record<string, unknown>) => void>>();
  /** Projects an agent wait of this tenant follows now (with how many waits). */
  private readonly watched = new Map<string, number>();
  private readonly unlisten: Array<() => void>;
  /** The pollers a hint pokes (set once they exist). */
  pollers: Array<Poller<unknown>> = [];

  constructor(
    private readonly endpoint: PushEndpoint,
    private readonly webhooks: () => WebhooksClient,
    private readonly intervals: { normalMs: number; slowMs: number },
    private readonly logger: Logger,
  ) {
    this.unlisten = [
      endpoint.listen((body) => this.received(body)),
      endpoint.hear((note) => note === MISSED && this.slowPollsEnd()),
    ];
  }

  /** The agent poller's interval now (PollerOptions.pace). */
  readonly pace = (): number => (this.healthy ? this.intervals.slowMs : this.intervals.normalMs);

  /** At the start of every wait: subscribes on the tenant's first one, in the background. */
  ensure(): void {
    if (this.subscription === "subscribing" || this.subscription === "ours" || this.subscription === "theirs") return;
    if (this.subscription === "failed" && Date.now() < this.retryAt) return;
    this.subscription = "subscribing";
    void this.subscribe().then(
      (s) => {
        this.subscription = s;
      },
      (err: unknown) => {
        this.subscription = "failed";
        this.retryAt = Date.now() + RETRY_MS;
        this.logger.warn("build webhooks: could not subscribe; waits keep polling", {
          error: err instanceof Error ? err.message : String(err),
        });
      },
    );
  }

  /**
   * An agent wait ended after having seen the run going (`since`: when it first did). A delivery
   * for the project since then, or within the grace period after, is a match (also the first one,
   * before push is known to work: under load a poll can see the end before its delivery arrives).
   * While push is healthy, none within the grace period is a miss: polls go back to the normal
   * interval until the next delivery.
   */
  ended(projectId: string, since: number): void {
    if ((this.delivered.get(projectId) ?? 0) >= since) {
      this.endpoint.count("matched");
      return;
    }
    if (this.pending.has(projectId)) return;
    const healthy = this.healthy;
    const timer = setTimeout(() => {
      this.pending.delete(projectId);
      if (healthy) this.missed(projectId);
    }, GRACE_MS);
    timer.unref();
    this.pending.set(projectId, { since, timer });
  }

  /** An agent wait follows `projectId` until the returned function is called (see `missed`). */
  watch(projectId: string): () => void {
    this.watched.set(projectId, (this.watched.get(projectId) ?? 0) + 1);
    return () => {
      const left = (this.watched.get(projectId) ?? 1) - 1;
      if (left > 0) this.watched.set(projectId, left);
      else this.watched.delete(projectId);
    };
  }

  /** Follows project.credit_limit.reached deliveries for a project (while a wait runs). */
  onCreditLimit(projectId: string, listener: (data: Record<string, unknown>) => void): () => void {
    const set = this.creditListeners.get(projectId) ?? new Set();
    this.creditListeners.set(projectId, set.add(listener));
    return () => {
      set.delete(listener);
      if (set.size === 0) this.creditListeners.delete(projectId);
    };
  }

  /** The key is being unlinked: removes the subscriptions this server made (its URL), no other. */
  async unsubscribe(): Promise<void> {
    const hooks = (await this.webhooks().list()).webhooks ?? [];
    for (const w of hooks.filter((h) => h.url === this.endpoint.url)) await this.webhooks().remove(w.id);
    this.subscription = "none";
    this.healthy = false;
  }

  close(): void {
    for (const stop of this.unlisten) stop();
    for (const { timer } of this.pending.values()) clearTimeout(timer);
  }

  /**
   * A run ended with no delivery. Every other agent wait of the tenant, on every replica, reads once
   * now and polls at the normal interval from there, instead of at the end of the slow interval it
   * was in: only waits whose runs ended before this was found can wait longer than polling alone would.
   */
  private missed(projectId: string): void {
    this.endpoint.count("missed");
    if (!this.healthy) return;
    this.logger.info("build webhooks: a run ended without a delivery; polling at the normal interval again", {
      projectId,
    });
    this.slowPollsEnd();
    this.endpoint.tell(MISSED);
  }

  /** Back to the normal interval (until the next delivery), each followed project read once now. */
  private slowPollsEnd(): void {
    if (!this.healthy) return;
    this.healthy = false;
    for (const key of this.watched.keys()) for (const poller of this.pollers) poller.poke?.(key);
  }

  private received(body: unknown): void {
    const parsed = delivery.safeParse(body);
    if (!parsed.success) return;
    const { event, data } = parsed.data;
    if (event === "agent.prompt.finished") {
      this.delivered.delete(data.projectId);
      this.delivered.set(data.projectId, Date.now());
      if (this.delivered.size > MAX_REMEMBERED) this.delivered.delete(this.delivered.keys().next().value!);
      const late = this.pending.get(data.projectId);
      if (late) {
        clearTimeout(late.timer);
        this.pending.delete(data.projectId);
        this.endpoint.count("matched");
      }
      // A delivery that passed the secret check: this account's deliveries reach every replica.
      this.healthy = true;
    } else {
      for (const listener of [...(this.creditListeners.get(data.projectId) ?? [])]) listener(data);
    }
    for (const poller of this.pollers) poller.poke?.(data.projectId);
  }

  private async subscribe(): Promise<Subscription> {
    const { url, headers } = this.endpoint;
    let result: Subscription = "ours";
    for (const event of WEBHOOK_EVENTS) {
      try {
        await this.webhooks().subscribe({ url, event, headers });
        continue;
      } catch (err) {
        if (!(err instanceof UpstreamError) || err.code !== "WEBHOOK_EVENT_ALREADY_EXISTS") throw err;
      }
      const existing = ((await this.webhooks().list()).webhooks ?? []).find((w) => w.event === event);
      if (existing && existing.url === url) {
        if (!sameHeaders(existing, headers)) await this.replaceOurs(existing, event);
        continue;
      }
      // The account's own webhook (or another server's): never replaced, never deleted.
      if (event === "agent.prompt.finished") result = "theirs";
      this.logger.info(
        `build webhooks: the account already has a webhook for ${event} that is not this server's; ` +
          "it is left as it is" +
          (event === "agent.prompt.finished" ? " and waits for this account keep polling" : ""),
      );
    }
    return result;
  }

  /** Our own address with an older secret (the state key changed): re-made with the current one. */
  private async replaceOurs(existing: Webhook, event: (typeof WEBHOOK_EVENTS)[number]): Promise<void> {
    await this.webhooks().remove(existing.id);
    await this.webhooks().subscribe({ url: this.endpoint.url, event, headers: this.endpoint.headers });
  }
}

function sameHeaders(w: Webhook, headers: Record<string, string>): boolean {
  return Object.entries(headers).every(([k, v]) => w.headers?.[k] === v);
}
