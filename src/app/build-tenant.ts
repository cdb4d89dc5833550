import type { Config } from "../config.js";
import type { Egress } from "../core/base/egress.js";
import { createLogger } from "../core/base/logger.js";
import type { Sealer } from "../core/base/seal.js";
import { ChangeHub, type ChangeRelay } from "../core/mcp/changes.js";
import type { ServerDefinition, TenantRuntime } from "../core/mcp/runtime.js";
import type { ServiceInstance, ServiceModule } from "../core/service/service.js";
import type { ServiceAdvice } from "../core/tools/errors.js";
import type { ServiceWatcher } from "../core/service/resources.js";
import type { ToolHost } from "../core/tools/tool.js";
import type { AcceptedKeys } from "../core/tenancy/accepted.js";
import { LiveInstances } from "../core/vault/live-instances.js";
import { ACCOUNT_TOOLSET } from "../core/vault/account-toolset.js";
import { ISSUER, SUBJECT, upstreamKeys } from "./credentials.js";
import type { LinkedKeys } from "./linked.js";
import type { InstanceMaker } from "./service-instances.js";

/** How often a client should poll a task when no service says otherwise. */
const DEFAULT_TASK_POLL_MS = 5000;

/** A tenant's runtime, with what the app needs of it besides: its task poll interval and its close. */
export type Tenant = TenantRuntime & { taskPollIntervalMs: number; close(): Promise<void> };

/** What every tenant shares, made once by createApp. */
export interface TenantShared {
  config: Config;
  /** What the process serves (tools, resources, prompts...): every tenant's `definition`. */
  definition: ServerDefinition;
  /** Keys come per tenant (ENV.credentials caller or linked). */
  caller: boolean;
  /** A tenant per caller (per-user keys, or OAuth). */
  perTenant: boolean;
  sealer: Sealer;
  egress: Egress;
  logger: TenantRuntime["logger"];
  enabled: readonly ServiceModule<any>[];
  instance: InstanceMaker;
  /** Every enabled service's watchers, defined once (app/resources.ts); a tenant follows those it has keys for. */
  watchers: TenantRuntime["watchers"];
  relayFor?: (tenantId: string) => ChangeRelay;
  linked?: LinkedKeys;
  /** The service of each toolset: a tool's hooks get that service's deps (tools.ts). */
  serviceOf: ReadonlyMap<string, string>;
  advice: ReadonlyMap<string, ServiceAdvice>;
  /** Per-user keys (caller mode): which of them an upstream accepted, by their keyed hash. */
  accepted?: { keys: AcceptedKeys; id(service: string, key: string): string };
  /** Keeps a tenant (per-user modes) alive; returns the release. */
  pin(tenantId: string): () => void;
}

/**
 * One tenant's runtime: its keys and what it made of them. Everything every tenant shares (tools,
 * resources, prompts, watchers) comes from `shared`; what a tenant makes with its keys (a service's
 * instance, its egress and logger, its change hub, its tool host) is made on first use, so a tenant
 * that only lists tools holds little more than its keys. In linked mode its live instances and link
 * gate are made at once (its keys change while it runs).
 */
export function buildTenant(
  shared: TenantShared,
  tenantId: string,
  credentials: Readonly<Record<string, string>> | undefined,
): Tenant {
  const { sealer, linked } = shared;
  // With OAuth, tasks belong to the signed-in user whatever keys they act with.
  const owner = credentials?.[ISSUER]
    ? sealer.tenantId({ [ISSUER]: credentials[ISSUER], [SUBJECT]: credentials[SUBJECT] ?? "" })
    : tenantId;
  const tenant = new TenantObject(shared, tenantId, owner, credentials);
  if (!linked) return tenant;
  // Linked keys can change while the tenant runs: its instances are replaced as they do.
  const { enabled } = shared;
  const instances = new Map(enabled.map((module) => [module.name, tenant.instanceOf(module)]));
  const live = new LiveInstances(instances, upstreamKeys(credentials), (service, key) =>
    tenant.make(enabled.find((m) => m.name === service)!, key),
  );
  tenant.linkedTo(live, linked.forTenant(owner, credentials?.[SUBJECT] ?? "you", live, tenant.egress));
  return tenant;
}

type Linked = ReturnType<LinkedKeys["forTenant"]>;

/**
 * A tenant's runtime. What all tenants share is one getter on the prototype (`definition`, no
 * field per tenant); what a tenant makes is made when first asked for. V8 keeps one hidden class for all of them
 * (an object literal with getters was kept in dictionary mode, with a property store of its own each).
 */
class TenantObject implements Tenant {
  /** This tenant's instance of each enabled service (by its index in `shared.enabled`), once made. */
  private readonly made: Array<ServiceInstance | undefined> = [];
  private derived?: { egress: Egress; logger: Tenant["logger"] };
  private hub?: ChangeHub;
  private host?: ToolHost;
  private live?: LiveInstances;
  private mine?: Linked;
  private keyIds?: string[];

  constructor(
    private readonly shared: TenantShared,
    private readonly tenantId: string,
    private readonly ownerId: string,
    private readonly given: Readonly<Record<string, string>> | undefined,
  ) {}

  /** Linked mode: its instances follow its linked keys. */
  linkedTo(live: LiveInstances, mine: Linked): void {
    this.live = live;
    this.mine = mine;
  }

  /** This tenant's instance of a service, made with its key on first use. */
  instanceOf(module: ServiceModule<any>): ServiceInstance {
    const index = this.shared.enabled.indexOf(module);
    this.made[index] ??= this.make(module, this.given?.[module.name]);
    return this.made[index];
  }

  make(module: ServiceModule<any>, key: string | undefined): ServiceInstance {
    return this.shared.instance(module, key, this.tenantId, this.egress, this.logger);
  }

  serviceDeps(service: string): unknown {
    if (this.live) return service === ACCOUNT_TOOLSET ? this.mine?.account : this.live.current(service)?.deps;
    const module = this.shared.enabled.find((m) => m.name === service);
    return module && this.instanceOf(module).deps;
  }

  /** A service without this tenant's key follows nothing (its calls answer the missing-key message). */
  keyless(service: string): boolean {
    if (this.live) return this.live.current(service)?.keyless ?? true;
    return this.shared.caller && !this.given?.[service];
  }

  get watchers(): readonly ServiceWatcher[] {
    const all = this.shared.watchers;
    return all.some((w) => this.keyless(w.service)) ? all.filter((w) => !this.keyless(w.service)) : all;
  }

  get refreshKeys(): (() => Promise<unknown>) | undefined {
    return this.live?.refresh;
  }

  get egress(): Egress {
    return this.derive().egress;
  }

  get logger(): Tenant["logger"] {
    return this.derive().logger;
  }

  private derive(): { egress: Egress; logger: Tenant["logger"] } {
    const { caller, egress, config } = this.shared;
    if (!caller) return this.shared;
    if (!this.derived) {
      const mine = egress.derive(Object.values(upstreamKeys(this.given)));
      this.derived = { egress: mine, logger: createLogger(config.logLevel, mine) };
    }
    return this.derived;
  }

  get changes(): ChangeHub {
    this.hub ??= new ChangeHub(this.shared.relayFor?.(this.tenantId));
    return this.hub;
  }

  get toolHost(): ToolHost {
    const { serviceOf, advice } = this.shared;
    // Its own `deps`, not a method: callHost copies the host's fields for each call.
    this.host ??= {
      egress: this.egress,
      advice,
      deps: (def) => this.serviceDeps(serviceOf.get(def.toolset) ?? def.toolset),
    };
    return this.host;
  }

  /** Sealed into a task for takeover: the user, and (linked) the keys in use now. */
  get credentials(): Readonly<Record<string, string>> | undefined {
    return this.mine ? { ...this.given, ...this.mine.keys() } : this.given;
  }

  get linking(): Tenant["linking"] {
    return this.mine?.linking;
  }

  owner(): string {
    return this.ownerId;
  }

  /**
   * Whose share of the per-tenant caps this tenant draws on: its own once an upstream accepted each
   * of its keys; until then the one share of every tenant whose keys no upstream accepted yet.
   */
  quotaKey(): string {
    const ids = this.acceptedIds();
    return !ids || this.shared.accepted!.keys.all(ids) ? this.ownerId : UNACCEPTED_KEYS;
  }

  async quotaKeyNow(): Promise<string> {
    const ids = this.acceptedIds();
    return !ids || (await this.shared.accepted!.keys.allNow(ids)) ? this.ownerId : UNACCEPTED_KEYS;
  }

  /** The keyed hashes of its upstream keys, or undefined when its quota is its own whatever they are. */
  private acceptedIds(): string[] | undefined {
    const accepted = this.shared.accepted;
    if (!accepted || !this.given || this.given[ISSUER]) return undefined;
    this.keyIds ??= Object.entries(upstreamKeys(this.given)).map(([service, key]) => accepted.id(service, key));
    return this.keyIds.length === 0 ? undefined : this.keyIds;
  }

  pin(): () => void {
    return this.shared.perTenant ? this.shared.pin(this.tenantId) : noRelease;
  }

  get taskPollIntervalMs(): number {
    const intervals = this.shared.enabled.map((m) => this.instanceOf(m).taskPollIntervalMs ?? 0);
    return Math.max(...intervals, 0) || DEFAULT_TASK_POLL_MS;
  }

  get definition(): ServerDefinition {
    return this.shared.definition;
  }

  async close(): Promise<void> {
    this.hub?.close();
    if (this.live) await this.live.close();
    else await Promise.allSettled(this.made.map((i) => i?.close()));
  }
}

const noRelease = () => undefined;

/** The share of the per-tenant caps of every tenant whose keys no upstream has accepted yet. */
export const UNACCEPTED_KEYS = "keys-not-accepted-yet";
