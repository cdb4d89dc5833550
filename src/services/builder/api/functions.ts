import type { UpstreamClient } from "../../../core/upstream/upstream.js";

type Functions<C> = {
  [K in keyof C]: C[K] extends (...args: infer A) => infer R ? (http: UpstreamClient, ...args: A) => R : never;
};

/**
 * An area client's methods as the functions they were, `(http, ...args)`: the tool files call
 * these until they reach the client through `ctx.deps.client` (the ctx.deps rewrite); then this
 * file goes.
 */
export function functionsOf<C>(Client: new (http: UpstreamClient) => C): Functions<C> {
  return new Proxy({} as Functions<C>, {
    get:
      (_, name) =>
      (http: UpstreamClient, ...args: unknown[]) =>
        (new Client(http) as Record<PropertyKey, (...a: unknown[]) => unknown>)[name](...args),
  });
}
