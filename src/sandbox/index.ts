import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { BuildSimulator, type BuildSimulatorOptions } from "./simulators/builder/index.js";
import { SizingSimulator } from "./simulators/sizing/index.js";
import { DronesSimulator } from "./simulators/drones/index.js";
import { faultFromSpec, type FaultSpec } from "./faults.js";
import type { Router } from "./router.js";

/** Demo keys the sandbox accepts. They are public on purpose: they unlock only simulated data. */
export const SANDBOX_KEYS = {
  build: "tlm_sk_sandbox_demo_key_0000000000",
  sizing: "sz_sandbox_demo_key_0000000000",
  drones: "dfk_live_sandbox_demo_key_000000",
} as const;

export interface SandboxOptions {
  host?: string;
  port?: number;
  /** Simulated milliseconds per real millisecond (a 40-minute build takes 40 min / timeScale). */
  timeScale?: number;
  keys?: Partial<Record<keyof typeof SANDBOX_KEYS, string>>;
  /** Faults to inject from the start (SANDBOX_FAULTS), e.g. for the soak script. */
  faults?: Array<FaultSpec & { service: string }>;
  /** Plan limits and starting balance of the build simulator. */
  build?: Omit<BuildSimulatorOptions, "apiKey" | "timeScale">;
  /**
   * Build accounts (default 1). Each further account is a separate simulator with the same demo
   * data (so the same project ids) behind its own key: `buildAccountKey(n)`. Hosted mode's tests
   * use two to prove that two tenants with one project id never see each other's state.
   */
  accounts?: number;
}

/** The key of build account `n` (1-based); account 1 has the demo key. */
export function buildAccountKey(n: number, first: string = SANDBOX_KEYS.build): string {
  return n === 1 ? first : `${first.slice(0, -String(n).length)}${n}`;
}

export interface Sandbox {
  url: string;
  urls: { build: string; sizing: string; drones: string };
  keys: { build: string; sizing: string; drones: string };
  build: BuildSimulator;
  /** Every build account's simulator, account 1 first; `buildKeys[i]` unlocks `builds[i]`. */
  builds: BuildSimulator[];
  buildKeys: string[];
  sizing: SizingSimulator;
  drones: DronesSimulator;
  close(): Promise<void>;
}

/** Default time scale: a 40-minute agent run lasts about two minutes, a 5-minute one fifteen seconds. */
export const DEFAULT_TIME_SCALE = 20;

/**
 * Starts the three upstream simulators on one loopback HTTP server. Each service lives under its
 * own prefix (`/build`, `/sizing/v1`, `/drones`) so its base URL is distinct, as in production.
 */
export async function startSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const keys = { ...SANDBOX_KEYS, ...options.keys };
  const timeScale = options.timeScale ?? DEFAULT_TIME_SCALE;
  const buildKeys = Array.from({ length: Math.max(1, options.accounts ?? 1) }, (_, i) => buildAccountKey(i + 1, keys.build));
  const builds = buildKeys.map((apiKey) => new BuildSimulator({ ...options.build, apiKey, timeScale }));
  const build = builds[0];
  const sizing = new SizingSimulator({ apiKey: keys.sizing });
  const drones = new DronesSimulator({ apiKey: keys.drones });
  const mounts: Array<[string, Router]> = [
    ["/build", builds.length === 1 ? build.router : accountRouter(builds, buildKeys)],
    ["/sizing/v1", sizing.router],
    ["/drones", drones.router],
  ];

  const routers: Record<string, Router> = { build: build.router, sizing: sizing.router, drones: drones.router };
  const injectFaults = (specs: Array<FaultSpec & { service: string }>) => {
    for (const spec of specs) {
      const router = routers[spec.service];
      if (!router) throw new Error(`unknown service "${spec.service}"; known: build, sizing, drones`);
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
  return {
    url,
    urls: { build: `${url}/build`, sizing: `${url}/sizing/v1`, drones: `${url}/drones` },
    keys,
    build,
    builds,
    buildKeys,
    sizing,
    drones,
    close: () =>
      new Promise<void>((resolve) => {
        for (const b of builds) b.dispose?.();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Sends each request to the account its key names (the first account answers unknown keys: 401). */
function accountRouter(builds: BuildSimulator[], keys: string[]): Router {
  const pick = (req: IncomingMessage) => {
    const header = req.headers["api-key"] ?? /^Bearer\s+(.+)$/i.exec(String(req.headers.authorization ?? ""))?.[1];
    const i = keys.indexOf(String(header ?? "").trim());
    return builds[Math.max(0, i)].router;
  };
  const router = Object.create(builds[0].router) as Router;
  Object.defineProperties(router, {
    handle: { value: (req: IncomingMessage, res: ServerResponse, path: string) => pick(req).handle(req, res, path) },
    injectFault: { value: (fault: Parameters<Router["injectFault"]>[0]) => builds.forEach((b) => b.router.injectFault(fault)) },
    clearFaults: { value: () => builds.forEach((b) => b.router.clearFaults()) },
    hits: {
      get: () => {
        const all = new Map<string, number>();
        for (const b of builds) for (const [k, v] of b.router.hits) all.set(k, (all.get(k) ?? 0) + v);
        return all;
      },
    },
  });
  return router;
}

/** POST a JSON array of fault specs (each with `service`) to inject; DELETE to clear them all. */
async function controlFaults(req: IncomingMessage, res: ServerResponse, inject: (specs: Array<FaultSpec & { service: string }>) => void, clear: () => void) {
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
