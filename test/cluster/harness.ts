import { describe, expect } from "vitest";
import { clusterPrerequisites, startCluster, type Cluster, type ClusterOptions } from "../../scripts/cluster.mjs";

/**
 * The cluster suites (vitest project "cluster") run Redis, the sandbox, N replicas and nginx as
 * local processes through scripts/cluster.mjs. They need redis-server and nginx on this machine
 * (.ci/run installs both with apt) and a built dist/.
 */
export function clusterAvailable(): { ok: true } | { ok: false; why: string } {
  return clusterPrerequisites();
}

let skipNoted = false;

/** describe() when the cluster can run here; otherwise one line on stderr and a skipped suite. */
export function describeCluster(name: string, fn: () => void): void {
  const available = clusterAvailable();
  if (available.ok) {
    describe(name, fn);
    return;
  }
  if (!skipNoted) {
    skipNoted = true;
    process.stderr.write(`cluster tests skipped: ${available.why}\n`);
  }
  describe.skip(name, fn);
}

export type TestCluster = Cluster & {
  /** Whether the replicas run with MCP_STATE_URL. */
  state: boolean;
};

/**
 * A test's idle windows: nginx closes idle connections to the replicas after 1 s, a draining
 * replica waits 2.5 s for that (the defaults, 4 s and 6 s, would add seconds to every SIGTERM).
 */
const SHORT_IDLE = { keepaliveTimeoutMs: 1000, drainIdleMs: 2500 };

/**
 * startCluster() for a test, with one more try after a failed start: a replica spawned while
 * dist/ is being rebuilt exits at once, and a port picked free may be taken meanwhile.
 */
export async function startTestCluster(given: ClusterOptions = {}): Promise<TestCluster> {
  const options = given.drainIdleMs === undefined ? { ...SHORT_IDLE, ...given } : given;
  const state = options.state !== false;
  try {
    return Object.assign(await startCluster(options), { state });
  } catch {
    await new Promise((r) => setTimeout(r, 2000));
    return Object.assign(await startCluster(options), { state });
  }
}

/** The sticky-routing prefix of a 2025 session id ("r2.9f1c…" -> "r2"), or undefined. */
export function replicaPrefix(sessionId: string | null | undefined): string | undefined {
  return /^(r\d+)\./.exec(sessionId ?? "")?.[1];
}

export interface AccessLine {
  method: string;
  path: string;
  status: number;
  /** The replica address(es) nginx tried, e.g. "127.0.0.1:41234" (", "-separated after a retry). */
  upstream: string;
  /** The upstream group the sticky map chose: switchboard_replicas or switchboard_r<i>. */
  group: string;
}

/** Parses nginx's access log (the `switchboard` log_format of deploy/nginx.conf). */
export function accessLines(log: string): AccessLine[] {
  const out: AccessLine[] = [];
  for (const line of log.split("\n")) {
    const m = /"(\S+) (\S+) [^"]*" (\d{3}) .* upstream=(.+?) upstream_status=\S+ group=(\S+)$/.exec(line);
    if (m) out.push({ method: m[1], path: m[2], status: Number(m[3]), upstream: m[4], group: m[5] });
  }
  return out;
}

/**
 * A raw 2025-11-25 session on one replica that declares tasks: initialize, then requests (each may
 * block for long); `request` answers the JSON-RPC answer to it.
 */
export async function open2025(url: string) {
  const headers = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "mcp-protocol-version": "2025-11-25",
  };
  const post = async (body: Record<string, any>, sessionId?: string) => {
    const res = await fetch(url, {
      method: "POST",
      headers: { ...headers, ...(sessionId ? { "mcp-session-id": sessionId } : {}) },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    const data = text
      .split("\n")
      .filter((l) => l.startsWith("data:"))
      .map((l) => JSON.parse(l.slice(5)) as Record<string, any>);
    const answer = data.find((d) => d.id === body.id) ?? (text.startsWith("{") ? JSON.parse(text) : undefined);
    return { res, answer: answer as Record<string, any> | undefined };
  };
  const init = await post({
    jsonrpc: "2.0",
    id: 0,
    method: "initialize",
    params: {
      protocolVersion: "2025-11-25",
      capabilities: { tasks: {} },
      clientInfo: { name: "raw-2025", version: "1.0.0" },
    },
  });
  const sessionId = init.res.headers.get("mcp-session-id") ?? undefined;
  expect(sessionId).toBeDefined();
  await post({ jsonrpc: "2.0", method: "notifications/initialized" }, sessionId);
  let id = 1;
  return {
    request: async (method: string, params: Record<string, any>) =>
      (await post({ jsonrpc: "2.0", id: id++, method, params }, sessionId)).answer,
  };
}
