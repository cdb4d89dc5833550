import type { z } from "zod";
import type { HintTable } from "../tools/errors.js";
import type { Logger } from "../base/logger.js";
import type { PollerFactory } from "../upstream/poller.js";
import type { UpstreamClient, UpstreamOptions } from "../upstream/upstream.js";
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
 * What a folder under services/ exports. Config parsing, --help, the instructions, the secret
 * list, smithery.yaml and server.json are derived from these declarations: adding a service is
 * adding a folder and one line in services/registry.ts.
 */
export interface ServiceModule<S extends Record<string, unknown> = Record<string, unknown>, D extends object = any> {
  /** Used in error messages: "The build service failed (...)". */
  name: string;
  title: string;
  toolsets: ToolsetDecl[];
  /** Every variable the service reads, its base URL and key first. */
  env: EnvVarDecl[];
  baseUrlVar: string;
  apiKeyVar: string;
  /**
   * Per-user mode without MCP_HTTP_TOKEN: a caller may send this service's key as
   * `Authorization: Bearer <key>` instead of its header when the key starts with this prefix.
   */
  bearerKeyPrefix?: string;
  /** Parses the service's variables (keyed by variable name, so errors name the variable). */
  settings: z.ZodType<S>;
  /** One paragraph of the server's instructions, shown when the service is enabled. */
  instructions: string;
  /**
   * MCP_CREDENTIALS=linked: the cheap read (a tool of this service and its input) that checks a key
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
  /**
   * The service's tools, built once per process. `deps` is a late-bound view (core/tenancy/tenant-scope.ts):
   * inside a tool's hooks (run, before, render, verify, resume) it is the calling tenant's
   * `ServiceInstance.deps`; read it nowhere else.
   * `enabled` says which toolsets the server runs: a service may skip building the others' tools
   * (they would be filtered out; building them costs start-up time). Every tool of an enabled
   * toolset must be returned (test/unit/lazy-toolsets.test.ts checks it).
   */
  tools(deps: D, enabled?: (toolset: string) => boolean): readonly ToolDef<any, any>[];
  create(settings: S, host: ServiceHost): ServiceInstance<D>;
}

/** What an upstream client of a service is made from: where, how the key is sent, the answer's envelope. */
export type UpstreamSpec = Omit<
  UpstreamOptions,
  "service" | "keyVariable" | "timeoutMs" | "logger" | "redact" | "pools" | "missingKey"
>;

/** What the process gives a service for one tenant (`create`'s second argument). */
export interface ServiceHost {
  logger: Logger;
  /**
   * An upstream client for this service and tenant. The process fills in the rest: the service's
   * name and key variable, the deadline, the secret scrubbing, the shared connection pools and, in
   * per-user mode when the caller sent no key, the answer every call gives instead.
   */
  upstream(spec: UpstreamSpec): UpstreamClient;
  /** Status pollers: one upstream poll per key and interval, in process or across replicas. */
  createPoller: PollerFactory;
}

/** A service built for one tenant (the process's one account, or one caller's keys): shared by all its sessions. */
export interface ServiceInstance<D extends object = object> {
  /** What this tenant's tool calls act with: its upstream client, pollers, guards. */
  deps: D;
  resources?: readonly ResourceDef[];
  prompts?: readonly PromptDef<any>[];
  /** Resources that change on their own and can be subscribed to. */
  watch?: ResourceWatcher;
  /** How often a client should poll this service's tasks (tasks/get's pollInterval). */
  taskPollIntervalMs?: number;
  close(): Promise<void>;
}
