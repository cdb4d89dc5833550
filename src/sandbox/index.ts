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
}

export interface Sandbox {
  url: string;
  urls: { build: string; sizing: string; drones: string };
  keys: { build: string; sizing: string; drones: string };
  build: BuildSimulator;
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
  const build = new BuildSimulator({ ...options.build, apiKey: keys.build, timeScale });
  const sizing = new SizingSimulator({ apiKey: keys.sizing });
  const drones = new DronesSimulator({ apiKey: keys.drones });
  const mounts: Array<[string, Router]> = [
    ["/build", build.router],
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
    sizing,
    drones,
    close: () =>
      new Promise<void>((resolve) => {
        build.dispose?.();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
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
