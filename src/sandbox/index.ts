import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { faultFromSpec, type FaultSpec } from "./faults.js";
import { SIMULATORS } from "./registry.js";
import type { Fault, Router } from "./router.js";
import type { AnySimulator, InstanceOf, OptionsOf, SimulatorInstance } from "./simulator.js";

type Simulators = readonly AnySimulator[];
type Names<T extends Simulators> = T[number]["name"];

export type SandboxOptions<T extends Simulators = typeof SIMULATORS> = {
  host?: string;
  port?: number;
  /**
   * Simulated milliseconds per real millisecond (a 40-minute build takes 40 min / timeScale). No
   * default here: the sandbox cannot read the server's settings, so each caller passes one (the
   * server's setting, or a test's own).
   */
  timeScale: number;
  /** Keys to accept instead of the simulators' demo keys, by service name. */
  keys?: Partial<Record<Names<T>, string>>;
  /** Faults to inject from the start (the faults setting), e.g. for the soak script. */
  faults?: Array<FaultSpec & { service: string }>;
  /**
   * Accounts per simulator (default 1). Each further account is a separate instance with the same
   * demo data (so the same ids) behind its own key (`accountKey(n)`). Hosted mode's tests use two
   * to prove that two tenants with one project id never see each other's state.
   */
  accounts?: number;
  /** The simulators to serve (default: sandbox/registry.ts); a test may add its own. */
  simulators?: T;
} & { [D in T[number] as D["name"]]?: OptionsOf<D> };

/** The key of account `n` (1-based); account 1 has the demo key. */
function accountKey(n: number, first: string): string {
  return n === 1 ? first : `${first.slice(0, -String(n).length)}${n}`;
}

/** A running sandbox: `sandbox.<service name>` is that simulator (its first account). */
export type Sandbox<T extends Simulators = typeof SIMULATORS> = {
  url: string;
  /** Each simulator's base URL and key, by the name of the service it stands for. */
  urls: Record<Names<T>, string>;
  keys: Record<Names<T>, string>;
  /** Every account of each simulator, account 1 first. */
  accounts: { [D in T[number] as D["name"]]: Array<{ key: string; simulator: InstanceOf<D> }> };
  close(): Promise<void>;
} & { readonly [D in T[number] as D["name"]]: InstanceOf<D> };

/**
 * Loads and starts every simulator of the registry on one loopback HTTP server. Each lives under its own
 * prefix (`/build`, `/sizing/v1`, ...) so its base URL is distinct, as in production.
 */
export async function startSandbox<T extends Simulators = typeof SIMULATORS>(
  options: SandboxOptions<T>,
): Promise<Sandbox<T>> {
  const simulators: Simulators = options.simulators ?? SIMULATORS;
  const { timeScale } = options;
  const accountCount = Math.max(1, options.accounts ?? 1);
  const settings = options as Record<string, unknown>;
  const keys: Record<string, string> = {};
  const accounts: Record<string, Array<{ key: string; simulator: SimulatorInstance }>> = {};
  const routers: Record<string, Router> = {};
  const mounts: Array<[string, Router]> = [];
  const starts = await Promise.all(simulators.map((sim) => sim.load()));
  for (const [i, sim] of simulators.entries()) {
    keys[sim.name] = (options.keys as Record<string, string> | undefined)?.[sim.name] ?? sim.demoKey;
    accounts[sim.name] = Array.from({ length: accountCount }, (_, n) => {
      const key = accountKey(n + 1, keys[sim.name]);
      return { key, simulator: starts[i](key, timeScale, (settings[sim.name] ?? {}) as object) };
    });
    const mine = accounts[sim.name];
    const router = mine.length === 1 ? mine[0].simulator.router : accountRouter(mine);
    routers[sim.name] = router;
    mounts.push([sim.prefix, router]);
  }
  const instances = Object.values(accounts).flat();

  const injectFaults = (specs: Array<FaultSpec & { service: string }>) => {
    for (const spec of specs) {
      const router = routers[spec.service];
      if (!router) throw new Error(`unknown service "${spec.service}"; known: ${Object.keys(routers).join(", ")}`);
      router.injectFault(faultFromSpec(spec));
    }
  };
  if (options.faults) injectFaults(options.faults);

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = req.url ?? "/";
    if (url === "/_sandbox/faults") {
      void controlFaults(req, res, injectFaults, () => Object.values(routers).forEach((r) => r.clearFaults()));
      return;
    }
    if (url === "/" || url === "/_sandbox/stats") {
      sendJson(res, 200, {
        services: Object.fromEntries(mounts.map(([prefix, router]) => [prefix, Object.fromEntries(router.hits)])),
      });
      return;
    }
    for (const [prefix, router] of mounts) {
      if (url === prefix || url.startsWith(`${prefix}/`) || url.startsWith(`${prefix}?`)) {
        void router.handle(req, res, url.slice(prefix.length) || "/");
        return;
      }
    }
    sendJson(res, 404, { error: `Unknown sandbox service for ${url}` });
  });
  server.keepAliveTimeout = 65_000;

  const host = options.host ?? "127.0.0.1";
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
  const urls = Object.fromEntries(simulators.map((sim) => [sim.name, `${url}${sim.prefix}`]));
  const firsts = Object.fromEntries(simulators.map((sim) => [sim.name, accounts[sim.name][0].simulator]));
  return {
    ...firsts,
    url,
    urls,
    keys,
    accounts,
    close: () =>
      new Promise<void>((resolve) => {
        for (const { simulator } of instances) simulator.dispose?.();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  } as unknown as Sandbox<T>;
}

/** Sends each request to the account its key names (the first account answers unknown keys: 401). */
function accountRouter(accounts: Array<{ key: string; simulator: SimulatorInstance }>): Router {
  const routers = accounts.map((a) => a.simulator.router);
  const pick = (req: IncomingMessage) => {
    const header = req.headers["api-key"] ?? /^Bearer\s+(.+)$/i.exec(String(req.headers.authorization ?? ""))?.[1];
    const i = accounts.findIndex((a) => a.key === String(header ?? "").trim());
    return routers[Math.max(0, i)];
  };
  const router = Object.create(routers[0]) as Router;
  Object.defineProperties(router, {
    handle: { value: (req: IncomingMessage, res: ServerResponse, path: string) => pick(req).handle(req, res, path) },
    injectFault: { value: (fault: Fault) => routers.forEach((r) => r.injectFault(fault)) },
    clearFaults: { value: () => routers.forEach((r) => r.clearFaults()) },
    hits: {
      get: () => {
        const all = new Map<string, number>();
        for (const r of routers) for (const [k, v] of r.hits) all.set(k, (all.get(k) ?? 0) + v);
        return all;
      },
    },
  });
  return router;
}

/** POST a JSON array of fault specs (each with `service`) to inject; DELETE to clear them all. */
async function controlFaults(
  req: IncomingMessage,
  res: ServerResponse,
  inject: (specs: Array<FaultSpec & { service: string }>) => void,
  clear: () => void,
) {
  try {
    if (req.method === "DELETE") {
      clear();
      return sendJson(res, 200, { cleared: true });
    }
    if (req.method !== "POST") return sendJson(res, 405, { error: "POST a JSON array of faults, or DELETE" });
    let text = "";
    for await (const chunk of req) text += chunk;
    const body = JSON.parse(text) as unknown;
    const specs = (Array.isArray(body) ? body : [body]) as Array<FaultSpec & { service: string }>;
    inject(specs);
    sendJson(res, 200, { injected: specs.length });
  } catch (err) {
    sendJson(res, 400, { error: err instanceof Error ? err.message : String(err) });
  }
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}
