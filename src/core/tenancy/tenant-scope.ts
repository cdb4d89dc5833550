import { AsyncLocalStorage } from "node:async_hooks";
import type { ToolDef } from "../tools/tool.js";

type Scope = ReadonlyMap<string, object>;

/**
 * Tool definitions are built once per app: their zod schemas were most of what a tenant cost
 * (about 1.2 MB of RSS and 3x a call's CPU each, and anyone can send keys never seen before). What
 * differs per tenant is each service's dependencies (its upstream client holding the tenant's
 * key, its pollers, its credit guard). A tool reaches them through `deps(service)`: a view that
 * resolves, on every access, to the dependencies of the tenant whose call is running.
 *
 * With one tenant (single-account mode, stdio) that is simply the one scope. With many, the
 * running call's tenant is carried by an AsyncLocalStorage; on Node 20 that turns on promise
 * hooks for the whole process (about 0.1 µs per await), so only per-user mode pays for it.
 */
export class TenantScopes {
  private readonly running = new AsyncLocalStorage<Scope>();
  private only?: Scope;

  /** The service's dependencies as seen from inside a tool call; reading them elsewhere throws. */
  deps<D extends object>(service: string): D {
    const current = (prop: PropertyKey): object => {
      const found = (this.only ?? this.running.getStore())?.get(service);
      if (!found)
        throw new Error(
          `The ${service} service's dependencies were read outside a tool call (${String(prop)}): read them inside a tool's hooks`,
        );
      return found;
    };
    return new Proxy({} as D, {
      get(_target, prop) {
        const target = current(prop);
        const value: unknown = Reflect.get(target, prop);
        return typeof value === "function" ? value.bind(target) : value;
      },
      has: (_target, prop) => Reflect.has(current(prop), prop),
      ownKeys: () => Reflect.ownKeys(current("ownKeys")),
      getOwnPropertyDescriptor: (_target, prop) => {
        const d = Reflect.getOwnPropertyDescriptor(current(prop), prop);
        return d && { ...d, configurable: true };
      },
    });
  }

  /** Single-account mode: every call is the one tenant's; the definitions run as they are. */
  onlyTenant(scope: Scope): void {
    this.only = scope;
  }

  /**
   * How one tenant runs the shared definitions' code (ToolHost.enter): inside its scope, where
   * `deps` are its own. One function per tenant; copying every definition per tenant (with three
   * closures each) was most of an idle tenant's heap.
   */
  enter(scope: Scope): <R>(fn: () => R) => R {
    return (fn) => this.running.run(scope, fn);
  }

  /** The tool as one tenant runs it once, outside any runtime (a key check): a copy whose code runs in `scope`. */
  forTenant<T extends ToolDef<any, any>>(def: T, scope: Scope): T {
    const enter = this.enter(scope);
    const within =
      <A extends unknown[], R>(fn: (...args: A) => R) =>
      (...args: A): R =>
        enter(() => fn(...args));
    return {
      ...def,
      run: within(def.run),
      before: def.before && within(def.before),
      render: within(def.render),
      verify: def.verify && within(def.verify),
      longRunning: def.longRunning && {
        ...def.longRunning,
        resume: def.longRunning.resume && within(def.longRunning.resume),
      },
    };
  }
}
