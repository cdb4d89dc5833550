// A build simulator on a loopback port with an injected clock, for the unit tests that drive its
// HTTP routes: the clock only moves on advance(), and the details cache and the start lag are off
// unless a test turns them on. Each test file closes what it started (close()).
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { BuildSimulator, type BuildSimulatorOptions } from "../src/sandbox/simulators/builder/index.js";

const MINUTE = 60_000;

export interface FakeClockSimulator {
  sim: BuildSimulator;
  /** The simulator's API base URL (…/api/v1/vcaas). */
  base: string;
  /** Moves the injected clock by simulated minutes. */
  advance(simMinutes: number): void;
  clock: { t: number };
  close(): Promise<void>;
}

export async function startFakeClockSimulator(
  options: Pick<BuildSimulatorOptions, "apiKey" | "timeScale"> & Partial<BuildSimulatorOptions> & { t0: number },
): Promise<FakeClockSimulator> {
  const { t0, ...rest } = options;
  const clock = { t: t0 };
  const sim = new BuildSimulator({ now: () => clock.t, detailsCacheMs: 0, startLagMs: 0, ...rest });
  const server = createServer((req, res) => void sim.router.handle(req, res, req.url!));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    sim,
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1/vcaas`,
    clock,
    advance: (simMinutes) => {
      clock.t += (simMinutes * MINUTE) / options.timeScale;
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
