import { AsyncLocalStorage } from "node:async_hooks";
import type { ToolDef } from "./tool.js";

/**
 * Tool definitions are built once per process: their zod schemas were most of what a tenant cost
 * (about 0.7 MB and 7 ms each, so 10,000 tenants of random keys could fill 8 GB). What differs
 * per tenant is each service's dependencies (its upstream client holding the tenant's key, its
 * pollers, its credit guard). A tool reaches them through `lateBound`: a view that resolves, on
 * every access, to the dependencies of the tenant whose call is running.
 */
type Scope = ReadonlyMap<string, object>;
const running = new AsyncLocalStorage<Scope>();

/** The service's dependencies as seen from inside a tool call; reading them elsewhere throws. */
export function lateBound<D extends object>(service: string): D {
  const deps = (prop: PropertyKey): object => {
    const found = running.getStore()?.get(service);
    if (!found) throw new Error(`The ${service} service's dependencies were read outside a tool call (${String(prop)}): read them inside run, before or resume`);
    return found;
  };
  return new Proxy({} as D, {
    get(_target, prop) {
      const target = deps(prop);
      const value: unknown = Reflect.get(target, prop);
      return typeof value === "function" ? value.bind(target) : value;
    },
    has: (_target, prop) => Reflect.has(deps(prop), prop),
    ownKeys: () => Reflect.ownKeys(deps("ownKeys")),
    getOwnPropertyDescriptor: (_target, prop) => {
      const d = Reflect.getOwnPropertyDescriptor(deps(prop), prop);
      return d && { ...d, configurable: true };
    },
  });
}

/** The tool as one tenant runs it: its run, before and resume see that tenant's dependencies. */
export function forTenant<T extends ToolDef<any, any>>(def: T, scope: Scope): T {
  const within =
    <A extends unknown[], R>(fn: (...args: A) => R) =>
    (...args: A): R =>
      running.run(scope, () => fn(...args));
  return {
    ...def,
    run: within(def.run),
    before: def.before && within(def.before),
    longRunning: def.longRunning && { ...def.longRunning, resume: def.longRunning.resume && within(def.longRunning.resume) },
  };
}
