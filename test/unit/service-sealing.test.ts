import { describe, expect, it } from "vitest";
import { instanceMaker } from "../../src/app/service-instances.js";
import type { Config } from "../../src/config.js";
import { Egress } from "../../src/core/base/egress.js";
import { Sealer } from "../../src/core/base/seal.js";
import type { ServiceHost, ServiceModule } from "../../src/core/service/service.js";
import { ByteBudget } from "../../src/core/upstream/budget.js";
import { DEFAULT_UPSTREAM_BODY_BUDGET, PoolCache } from "../../src/core/upstream/upstream.js";

/**
 * ServiceHost.seal/open (issue 29 item 9: the build service's transferId): under MCP_STATE_KEY any
 * server and any account sharing the key opens a sealed value; without it only the same service key.
 */

const logger = { debug() {}, info() {}, warn() {}, error() {} } as never;

/** The host a tenant's service instance gets, for the key `key`. */
function hostFor(key: string, stateSealer?: Sealer): ServiceHost {
  let host: ServiceHost | undefined;
  const module = {
    name: "build",
    apiKeyVar: "BUILD_API_KEY",
    create: (_settings: unknown, h: ServiceHost) => {
      host = h;
      return { deps: {}, close: async () => {} };
    },
  } as unknown as ServiceModule<any>;
  const config = { services: new Map([["build", {}]]), upstreamTimeoutMs: 1000 } as unknown as Config;
  const shared = { pools: new PoolCache(), bodyBudget: new ByteBudget(DEFAULT_UPSTREAM_BODY_BUDGET) };
  const make = instanceMaker(config, true, shared, (() => ({})) as never, stateSealer);
  make(module, key, `t_${key}`, new Egress(), logger);
  return host!;
}

describe("ServiceHost sealing", () => {
  it("opens under a shared MCP_STATE_KEY whichever account sealed it, after a restart too", () => {
    const stateKey = "a-state-key-of-at-least-thirty-two-characters";
    const sealed = hostFor("tlm_sk_account_one", new Sealer(stateKey)).seal({ c: "code" }, "transfer");
    // Another process (a new Sealer from the same key), another account's key.
    const other = hostFor("tlm_sk_account_two", new Sealer(stateKey));
    expect(other.open(sealed, "transfer")).toEqual({ c: "code" });
    expect(() => other.open(sealed, "another-purpose")).toThrow();
    expect(() => hostFor("tlm_sk_account_two", new Sealer(`${stateKey}-other`)).open(sealed, "transfer")).toThrow();
  });

  it("without MCP_STATE_KEY opens for the same service key only, in any process", () => {
    const sealed = hostFor("tlm_sk_account_one").seal({ c: "code" }, "transfer");
    expect(hostFor("tlm_sk_account_one").open(sealed, "transfer")).toEqual({ c: "code" });
    expect(() => hostFor("tlm_sk_account_two").open(sealed, "transfer")).toThrow();
  });
});
