import { Redis } from "ioredis";
import type { Logger } from "../base/logger.js";
import { telemetry } from "../base/telemetry.js";
import { defineScripts, type Scripts } from "./redis-scripts.js";

/** Every key and channel of ours starts with this, so one Redis can be shared with other software. */
export const KEY_PREFIX = "sb:";
const P = KEY_PREFIX;

interface RedisStateOptions {
  url: string;
  replicaId: string;
  logger: Logger;
  /** How long a replica's claim on a task or a poll lasts without renewal. */
  leaseMs: number;
}

/**
 * Shared state on Redis for replicas: one command connection, one subscriber connection. Commands
 * fail at once while Redis is away (no offline queue), so nothing waits forever on it; both
 * connections reconnect on their own, and the subscriber subscribes again.
 */
export class RedisState {
  readonly cmd: Redis;
  private readonly sub: Redis;
  private readonly handlers = new Map<string, Set<(message: string) => void>>();
  readonly replicaId: string;
  readonly leaseMs: number;
  /** Commands sent, for the benchmark's "Redis round trips per call". */
  roundTrips = 0;
  /** Called when the command connection is back after an outage (Redis may have restarted empty). */
  readonly reconnected = new Set<() => void>();

  constructor(private readonly options: RedisStateOptions) {
    this.replicaId = options.replicaId;
    this.leaseMs = options.leaseMs;
    const common = {
      lazyConnect: false,
      connectTimeout: 2000,
      maxRetriesPerRequest: 1,
      retryStrategy: (times: number) => Math.min(200 * times, 2000),
    };
    this.cmd = new Redis(options.url, {
      ...common,
      enableOfflineQueue: false,
      connectionName: `switchboard-${options.replicaId}`,
    });
    this.sub = new Redis(options.url, {
      ...common,
      enableOfflineQueue: true,
      connectionName: `switchboard-${options.replicaId}-sub`,
    });
    let down = false;
    for (const [name, conn] of [
      ["commands", this.cmd],
      ["subscriber", this.sub],
    ] as const) {
      conn.on("error", (err: Error) => {
        if (!down) options.logger.warn("redis connection error", { connection: name, error: err.message });
        down = true;
      });
      conn.on("ready", () => {
        if (down) options.logger.info("redis connection restored", { connection: name });
        if (down && conn === this.cmd) for (const listener of this.reconnected) listener();
        down = false;
      });
    }
    timeCommands(this.cmd);
    defineScripts(this.cmd);
    this.sub.on("message", (channel: string, message: string) => {
      for (const handler of this.handlers.get(channel) ?? []) {
        try {
          handler(message);
        } catch (err) {
          options.logger.error("redis message handler failed", { channel, error: String(err) });
        }
      }
    });
  }

  get scripts(): Scripts {
    return this.cmd as unknown as Scripts;
  }

  get ready(): boolean {
    return this.cmd.status === "ready";
  }

  async ping(): Promise<boolean> {
    try {
      this.roundTrips++;
      return (await this.cmd.ping()) === "PONG";
    } catch {
      return false;
    }
  }

  subscribe(channel: string, handler: (message: string) => void): () => void {
    const key = P + channel;
    let set = this.handlers.get(key);
    if (!set) {
      set = new Set();
      this.handlers.set(key, set);
      this.sub
        .subscribe(key)
        .catch((err: Error) => this.options.logger.warn("redis subscribe failed", { channel, error: err.message }));
    }
    set.add(handler);
    return () => {
      const current = this.handlers.get(key);
      if (!current?.delete(handler) || current.size > 0) return;
      this.handlers.delete(key);
      this.sub.unsubscribe(key).catch(() => undefined);
    };
  }

  /**
   * One pattern subscription (`changes:*`) for what would be a channel per tenant: a replica with
   * 10,000 tenants held 10,000 subscriptions. `handler` gets the channel without our prefix.
   */
  psubscribe(pattern: string, handler: (channel: string, message: string) => void): () => void {
    const key = P + pattern;
    const listener = (matched: string, channel: string, message: string) => {
      if (matched !== key) return;
      try {
        handler(channel.slice(P.length), message);
      } catch (err) {
        this.options.logger.error("redis message handler failed", { channel, error: String(err) });
      }
    };
    this.sub.on("pmessage", listener);
    this.sub
      .psubscribe(key)
      .catch((err: Error) => this.options.logger.warn("redis subscribe failed", { pattern, error: err.message }));
    return () => {
      this.sub.off("pmessage", listener);
      this.sub.punsubscribe(key).catch(() => undefined);
    };
  }

  async publish(channel: string, message: string): Promise<void> {
    this.roundTrips++;
    await this.cmd.publish(P + channel, message);
  }

  /** Takes or extends a lease for this replica; false when another replica holds it. */
  async lease(name: string, ms = this.leaseMs): Promise<boolean> {
    this.roundTrips++;
    return (await this.scripts.sbLease(P + name, this.replicaId, ms)) === 1;
  }

  async release(name: string): Promise<void> {
    this.roundTrips++;
    await this.scripts.sbRelease(P + name, this.replicaId);
  }

  async close(): Promise<void> {
    this.sub.disconnect();
    await this.cmd.quit().catch(() => this.cmd.disconnect());
  }
}

/**
 * Each command's round trip (switchboard.redis.duration) and failure (switchboard.redis.errors), by
 * command name, when telemetry is on: the client's one sending method is wrapped.
 */
function timeCommands(client: Redis): void {
  const send = client.sendCommand.bind(client);
  client.sendCommand = ((command: { name: string; promise: Promise<unknown> }, ...rest: unknown[]) => {
    if (!telemetry.on) return (send as (...a: unknown[]) => unknown)(command, ...rest);
    const started = performance.now();
    const sent = (send as (...a: unknown[]) => unknown)(command, ...rest);
    const operation = command.name.toLowerCase();
    command.promise.then(
      () => telemetry.add("redis.duration", (performance.now() - started) / 1000, { operation }),
      () => telemetry.add("redis.errors", 1, { operation }),
    );
    return sent;
  }) as typeof client.sendCommand;
}
