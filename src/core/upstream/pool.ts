import { Pool } from "undici";

/**
 * One undici pool per upstream origin for the whole process. In hosted mode each tenant has its own
 * clients (its own key), but they all reach the same few hosts: sharing the sockets keeps a
 * thousand tenants from opening a thousand pools.
 */
export class PoolCache {
  private readonly pools = new Map<string, Pool>();

  get(origin: string, timeoutMs: number): Pool {
    const key = `${origin}|${timeoutMs}`;
    let pool = this.pools.get(key);
    if (!pool) {
      pool = newPool(origin, timeoutMs);
      this.pools.set(key, pool);
    }
    return pool;
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.pools.values()].map((p) => p.close()));
    this.pools.clear();
  }
}

export function newPool(origin: string, timeoutMs: number): Pool {
  return new Pool(origin, {
    connections: 32,
    connectTimeout: timeoutMs,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    keepAliveTimeout: 30_000,
  });
}
