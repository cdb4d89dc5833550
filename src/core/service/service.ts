import type { z } from "zod";
import type { HintTable } from "../tools/errors.js";
import type { Logger } from "../base/logger.js";
import type { PollerFactory } from "../upstream/poller.js";
import type { UpstreamClient, UpstreamOptions } from "../upstream/upstream.js";
import type { ServiceSamples } from "./samples.js";
import type { ViewDecl } from "./views.js";
import type { PromptDef } from "./prompts.js";
import type { ResourceDef, ResourceWatcher } from "./resources.js";
import type { ToolDef } from "../tools/tool.js";

/** How to follow upstream work whose task ended early, in the words of the tool's service. */
export interface LostTaskAdvice {
  /** The tool that follows the work to its end. */
  follow: string;
}

/** A group of tools a user can switch on with --toolsets. */
export interface ToolsetDecl {
  id: string;
  description: string;
  /** Registered when --toolsets is not given. */
  default: boolean;
  /**
   * Some of its tools are long-running (they can run as tasks): "read" when one of them only reads
   * (it stays in read-only mode), "write" when all of them change something. Declared so that the
   * capabilities a server answers `initialize` with are known before any tool is built
   * (test/unit/service-declarations.test.ts checks it against the tools).
   */
  tasks?: "read" | "write";
}

/** One environment variable a service reads: documented, validated and listed in --help. */
export interface EnvVarDecl {
  name: string;
  description: string;
  /** Its value is a secret: scrubbed from every output, never echoed. */
  secret?: boolean;
  /** Shown in --help and the registry files; the zod schema applies it. */
  default?: string;
}

/**
 * What a folder under services/ exports (its index.ts). Config parsing, --help, the instructions,
 * the capabilities, the secret list, smithery.yaml and server.json are derived from these
 * declarations: adding a service is adding a folder and one line in services/registry.ts. The
 * tools and the clients are its implementation, loaded by `load()` when first needed, so that a
 * start answers `initialize` before they are compiled (loadService).
 */
export interface ServiceDeclaration<S extends Record<string, unknown> = Record<string, unknown>> {
  /** Used in error messages: "The build service failed (...)". */
  name: string;
  title: string;
  /** The service's name as its users know it, capitalized ("Totalum App Builder"): shown on the connect page. */
  displayName: string;
  /**
   * ENV.credentials=linked: one or two sentences on the connect page telling a user where to find
   * the key and what it looks like ("… starts with tlm_sk_").
   */
  keyHint?: string;
  toolsets: ToolsetDecl[];
  /** Every variable the service reads, its base URL and key first. */
  env: EnvVarDecl[];
  baseUrlVar: string;
  apiKeyVar: string;
  /**
   * Per-user mode without ENV.httpToken: a caller may send this service's key as
   * `Authorization: Bearer <key>` instead of its header when the key starts with this prefix.
   */
  bearerKeyPrefix?: string;
  /** Parses the service's variables (keyed by variable name, so errors name the variable). */
  settings: z.ZodType<S>;
  /** One paragraph of the server's instructions, shown when the service is enabled. */
  instructions: string;
  /**
   * ENV.credentials=linked: the cheap read (a tool of this service and its input) that checks a key
   * a user links before it is kept.
   */
  keyCheck?: { tool: string; input?: Record<string, unknown> };
  /** Advice keyed by the upstream's errorCode: what the caller should do next. */
  hints: HintTable;
  /**
   * For a long-running tool whose task ended before its upstream work did (the server stopped, a
   * replica was lost): the tool that follows the work. Worded into the task's failure.
   */
  lostTask?: LostTaskAdvice;
  /** Some of its resources complete their arguments (the completions capability; see ToolsetDecl.tasks). */
  completions?: boolean;
  /** The tools and the per-tenant instance (absent when the module carries them itself, as a test's may). */
  load?(): Promise<ServiceImplementation<S>>;
  /** Its MCP Apps views (built by scripts/build-views.mjs; the implementation registers each with viewResource). */
  views?: ViewDecl[];
  /** How each of its tools, prompts and resources is called in the tests that drive them all (samples.ts). */
  samples?(): Promise<ServiceSamples>;
  /**
   * The service takes webhook deliveries (POST /hooks/<name>/<id>) when `enabled` says so; that needs
   * ENV.publicUrl with https and ENV.stateKey, refused at start naming `variable` otherwise. What a
   * delivery means is the implementation's `acceptsDelivery` (not read at a stdio start).
   */
  webhooks?: {
    variable: string;
    enabled(settings: S): boolean;
  };
}

/** What a service says of a webhook delivery: one it uses, one it does not know, or one too old. */
export type HookOutcome = "ok" | "unknown" | "stale";

/** A tenant's webhook address for one service (ServiceDeclaration.webhooks). */
export interface PushEndpoint {
  /** Where the upstream delivers: under ENV.publicUrl, one path per tenant that reveals nothing of it. */
  url: string;
  /** What each delivery must carry (the tenant's secret, derived from ENV.stateKey; scrubbed from every output). */
  headers: Record<string, string>;
  /** This tenant's accepted deliveries, from whichever replica received them. */
  listen(handler: (body: unknown) => void): () => void;
  /**
   * A word to this tenant's instance on every replica, this one included (`hear`). Its own channel:
   * an upstream's delivery can never pass for one.
   */
  tell(note: string): void;
  hear(handler: (note: string) => void): () => void;
  /** Counts a hint that matched what a poll found, or missed it (switchboard.webhooks). */
  count(outcome: "matched" | "missed"): void;
}

/** A service's tools and its per-tenant instance: what `ServiceDeclaration.load` brings. */
export interface ServiceImplementation<
  S extends Record<string, unknown> = Record<string, unknown>,
  D extends object = any,
> {
  /**
   * The service's tools, built once per process and shared by every tenant: each hook gets the
   * calling tenant's `ServiceInstance.deps` as `ctx.deps` (nothing is closed over).
   * `enabled` says which toolsets the server runs: a service may skip building the others' tools
   * (they would be filtered out; building them costs start-up time). Every tool of an enabled
   * toolset must be returned (test/unit/lazy-toolsets.test.ts checks it).
   */
  tools(enabled?: (toolset: string) => boolean): readonly ToolDef<any, any, D>[];
  /**
   * Its resources, built once per process from its settings (a caller's key is not among what they
   * read) and shared like the tools: each gets the calling tenant's deps as its last argument.
   */
  resources?(settings: S): readonly ResourceDef<D>[];
  prompts?: readonly PromptDef<any>[];
  /**
   * With `ServiceDeclaration.webhooks`: what a delivery's JSON body is to the service; only "ok"
   * reaches the tenant (ServiceHost.push).
   */
  acceptsDelivery?(body: unknown, now: number): HookOutcome;
  /** Follows resources that change on their own (subscriptions), with the subscribing tenant's deps. */
  watch?: ResourceWatcher<D>;
  create(settings: S, host: ServiceHost): ServiceInstance<D>;
}

/** What an upstream client of a service is made from: where, how the key is sent, the answer's envelope. */
type UpstreamSpec = Omit<
  UpstreamOptions,
  "service" | "keyVariable" | "timeoutMs" | "logger" | "redact" | "pools" | "bodyBudget" | "missingKey" | "headersFor"
>;

/** What the process gives a service for one tenant (`create`'s second argument). */
export interface ServiceHost {
  logger: Logger;
  /**
   * An upstream client for this service and tenant. The process fills in the rest: the service's
   * name and key variable, the deadline, the secret scrubbing, the shared connection pools and
   * answer-bytes budget and, in
   * per-user mode when the caller sent no key, the answer every call gives instead.
   */
  upstream(spec: UpstreamSpec): UpstreamClient;
  /** Status pollers: one upstream poll per key and interval, in process or across replicas. */
  createPoller: PollerFactory;
  /**
   * Seals a value the service hands out and must open again on another replica or after a restart
   * (AES-256-GCM, bound to `purpose`): under ENV.stateKey, so any server sharing that key opens it;
   * without one, under a key derived from this service's API key, so only the same account does.
   */
  seal(value: unknown, purpose: string): string;
  /** Opens what `seal` made for `purpose`; throws when it was altered or sealed under another key. */
  open<T>(sealed: string, purpose: string): T;
  /** Where this tenant's webhook deliveries arrive, when the service's `webhooks` are enabled. */
  push?: PushEndpoint;
}

/** A service built for one tenant (the process's one account, or one caller's keys): shared by all its sessions. */
export interface ServiceInstance<D extends object = object> {
  /** What this tenant's tools, resources and watchers act with: its upstream client, pollers, guards. */
  deps: D;
  /**
   * Built without the caller's key (per-user modes): every call answers the missing-key message and
   * a subscription starts no poller (issue 18 item 6).
   */
  keyless?: boolean;
  /** How often a client should poll this service's tasks (tasks/get's pollInterval). */
  taskPollIntervalMs?: number;
  /**
   * ENV.credentials=linked: the user is unlinking this key. Undo what the service set up on their
   * account with it (a webhook subscription), while the key still works.
   */
  unlinked?(): Promise<void>;
  close(): Promise<void>;
}

/** A service with its implementation loaded: what the server runs. */
export interface ServiceModule<S extends Record<string, unknown> = Record<string, unknown>, D extends object = any>
  extends ServiceDeclaration<S>,
    ServiceImplementation<S, D> {}

/** The service with its implementation, loaded once (a module that carries it is returned as it is). */
export function loadService(service: ServiceDeclaration<any>): Promise<ServiceModule<any>> {
  if ("tools" in service && "create" in service) return Promise.resolve(service as ServiceModule<any>);
  const load = service.load;
  if (!load) return Promise.reject(new Error(`service ${service.name} declares neither its tools nor load()`));
  let loaded = loadedServices.get(service);
  if (!loaded) {
    loaded = load().then(({ tools, resources, prompts, acceptsDelivery, watch, create }) => ({
      ...service,
      tools,
      resources,
      prompts,
      acceptsDelivery,
      watch,
      create,
    }));
    loadedServices.set(service, loaded);
  }
  return loaded;
}
const loadedServices = new WeakMap<ServiceDeclaration<any>, Promise<ServiceModule<any>>>();
