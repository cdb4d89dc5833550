import type { ServiceInstance } from "../service/service.js";

/** How long a replaced instance (a key rotated or unlinked) stays open for the calls still using it. */
const RETIRE_AFTER_MS = 10 * 60_000;

/**
 * One tenant's service instances when its keys can change while it runs (ENV.credentials=linked):
 * a key linked, rotated or unlinked replaces that service's instance. Tools, resources and watchers
 * ask for the current one (`current`) on every call, read and subscription, so a 2025 session
 * opened before the link sees the key.
 */
export class LiveInstances {
  private readonly retired = new Set<ServiceInstance>();
  private keys: Record<string, string | undefined>;
  /**
   * Reads the tenant's current keys before a resource is read: a key linked through another
   * replica (or this one's tool calls, which refresh on their own) must reach resource reads too.
   */
  refresh: () => Promise<unknown> = async () => undefined;

  constructor(
    private readonly instances: Map<string, ServiceInstance>,
    initialKeys: Record<string, string | undefined>,
    private readonly create: (service: string, key: string | undefined) => ServiceInstance,
  ) {
    this.keys = { ...initialKeys };
  }

  /** Puts these keys to use; services whose key did not change keep their instance. */
  use(keys: Readonly<Record<string, string>>): void {
    for (const service of this.instances.keys()) {
      if (keys[service] === this.keys[service]) continue;
      const previous = this.instances.get(service)!;
      const next = this.create(service, keys[service]);
      this.instances.set(service, next);
      this.retired.add(previous);
      setTimeout(
        () => this.retired.delete(previous) && void previous.close().catch(() => undefined),
        RETIRE_AFTER_MS,
      ).unref();
    }
    this.keys = { ...keys };
  }

  /** The service's instance in use now (resources and watchers read with its deps). */
  current(service: string): ServiceInstance | undefined {
    return this.instances.get(service);
  }

  async close(): Promise<void> {
    const all = [...this.instances.values(), ...this.retired];
    this.retired.clear();
    await Promise.allSettled(all.map((i) => i.close()));
  }
}
