import type { Router } from "./router.js";

/** What the sandbox needs of a running simulator: its routes (and faults), and what to stop at the end. */
export interface SimulatorInstance {
  readonly router: Router;
  dispose?(): void;
}

/** Starts one instance (one account) answering for `apiKey`; `options` are the test's or the sandbox's settings. */
export type StartSimulator<I extends SimulatorInstance = SimulatorInstance, O extends object = object> = (
  apiKey: string,
  timeScale: number,
  options: O,
) => I;

/**
 * What a folder under sandbox/simulators/ declares (its declaration.ts) so the sandbox can serve
 * it: the sandbox derives its mounts, keys, URLs, fault targets and accounts from these, and
 * `--sandbox` points the service of the same `name` at it. The declaration is all a stdio start
 * reads before its first answer; `load()` imports the simulator's code (its index.ts) after it.
 * A simulator knows nothing of the service's code (it follows the spec).
 */
export interface SimulatorDecl<
  N extends string = string,
  I extends SimulatorInstance = SimulatorInstance,
  O extends object = object,
> {
  /** The name of the service it stands for (the service module's `name`): `--sandbox` pairs them by it. */
  name: N;
  /** Where it is mounted on the sandbox's server: its base URL is the sandbox's URL plus this. */
  prefix: string;
  /** The key it accepts. Public on purpose: it unlocks only simulated data. */
  demoKey: string;
  /** Imports the simulator's code. */
  load(): Promise<StartSimulator<I, O>>;
}

/** A declaration with its name's literal type kept, so the sandbox can offer `sandbox.<name>` typed. */
export function declareSimulator<const N extends string, I extends SimulatorInstance, O extends object = object>(
  decl: SimulatorDecl<N, I, O>,
): SimulatorDecl<N, I, O> {
  return decl;
}

export type AnySimulator = SimulatorDecl<string, SimulatorInstance, any>;
export type InstanceOf<D> = D extends SimulatorDecl<string, infer I, any> ? I : never;
export type OptionsOf<D> = D extends SimulatorDecl<string, SimulatorInstance, infer O> ? O : never;
