// Types of scripts/cluster.mjs for the TypeScript tests and benchmarks that import it.

export declare const CLI: string;
export declare const NGINX_TEMPLATE: string;

export interface ClusterOptions {
  /** Replicas r1..rN (default 3). */
  replicas?: number;
  /** Run the sandbox as its own process and point the replicas at it (default true). */
  sandbox?: boolean;
  /**
   * Shared state on Redis: MCP_STATE_URL and MCP_STATE_KEY on every replica (default true).
   * false: each replica keeps its state in process (Redis still runs).
   */
  state?: boolean;
  /** nginx in front (default true); without it `url` is the first replica's. */
  nginx?: boolean;
  /** MCP_CREDENTIALS (default "operator"); "caller" gives the replicas base URLs but no keys. */
  credentials?: "operator" | "caller";
  /** Extra variables for every replica (they win over the cluster's). */
  env?: Record<string, string | number | undefined>;
  /** Extra variables for one replica, by id ("r1") and index (0). */
  replicaEnv?: (id: string, index: number) => Record<string, string | number | undefined> | undefined;
  /** Extra command-line arguments for every replica, e.g. ["--toolsets", "all"]. */
  args?: string[];
  /** BUILD_POLL_INTERVAL_MS for the replicas. */
  pollIntervalMs?: number;
  /** SANDBOX_TIME_SCALE for the sandbox. */
  timeScale?: number;
  /** Extra variables for the sandbox process (SANDBOX_ACCOUNTS, SANDBOX_FAULTS). */
  sandboxEnv?: Record<string, string | number | undefined>;
  /** LOG_LEVEL of the replicas (default "info"). */
  logLevel?: "debug" | "info" | "warn" | "error";
  /** MCP_DRAIN_MS for the replicas (unset: the server's default). */
  drainMs?: number;
  /**
   * MCP_DRAIN_IDLE_MS for the replicas and nginx's keepalive_timeout (ms), together, nginx's below
   * (unset: the server's default and deploy/nginx.conf's). Shorter ones make a test's drains short.
   */
  drainIdleMs?: number;
  keepaliveTimeoutMs?: number;
  /** nginx's port (default: a free one). */
  port?: number;
  /**
   * A second nginx listener on `port` terminating TLS with these PEM files (made by the test with
   * openssl): what a webhook sender reaches (MCP_PUBLIC_URL https://localhost:<port>/mcp).
   */
  tls?: { port: number; certFile: string; keyFile: string };
  /**
   * nginx's address (default 127.0.0.1). The replicas bind 127.0.0.1 and answer loopback Host
   * names only: clients reaching nginx by another name get 403 (docs/deployment.md, "Host names").
   */
  host?: string;
  /** MCP_STATE_KEY (default: 43 random characters, the same on every replica). */
  stateKey?: string;
  /** MCP_REQUEST_STATE_KEY (default: 43 random characters, the same on every replica). */
  requestStateKey?: string;
  /** How long each process may take to answer (default 30 s). */
  startTimeoutMs?: number;
  /** How long a replica may take to exit after SIGTERM before SIGKILL (default 10 s). */
  stopTimeoutMs?: number;
  /** Keep the temp directory (logs, generated nginx config) after stop(). */
  keepDir?: boolean;
  /** The server bundle to run (default dist/cli.js), e.g. another build to compare with. */
  cli?: string;
  /** Progress lines while starting. */
  log?: (line: string) => void;
}

export interface ExitResult {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ClusterReplica {
  /** "r1", "r2", ...: its MCP_REPLICA_ID. */
  id: string;
  index: number;
  port: number;
  /** http://127.0.0.1:PORT/mcp, bypassing nginx. */
  url: string;
  baseUrl: string;
  /** Its output (stderr and stdout), appended across restarts. */
  logFile: string;
  env: Record<string, string>;
  /** Changes on restart; undefined before the first start. */
  readonly pid: number | undefined;
  running(): boolean;
  /** Everything it wrote, across restarts. */
  output(): string;
  /** Resolves when the current process exits. */
  exited(): Promise<ExitResult> | undefined;
  /** Starts it again on the same port (after kill) and waits for /healthz. */
  start(moreEnv?: Record<string, string | number | undefined>): Promise<void>;
  /** Sends the signal (default SIGTERM) and waits for the exit; SIGKILL after graceMs. */
  kill(signal?: NodeJS.Signals, graceMs?: number): Promise<ExitResult>;
  /** Sends a signal without waiting. */
  signal(signal: NodeJS.Signals): boolean;
  /** kill(signal) then start(moreEnv). */
  restart(signal?: NodeJS.Signals, moreEnv?: Record<string, string | number | undefined>): Promise<void>;
  healthz(): Promise<{ status: number; body: unknown }>;
  readyz(): Promise<{ status: number; body: unknown }>;
}

export interface RedisEntry {
  type: "string" | "hash" | "list" | "set" | "zset" | "stream";
  value: unknown;
  /** PTTL: milliseconds left, -1 without expiry. */
  ttlMs: number;
}

export interface RedisConnection {
  send(...args: Array<string | number | Buffer | Array<string | number | Buffer>>): Promise<any>;
  close(): void;
}

export interface ClusterRedis {
  /** redis://127.0.0.1:PORT */
  url: string;
  port: number;
  readonly pid: number;
  running(): boolean;
  /** One command on a fresh connection: command("HGETALL", key). Errors reject with RedisError. */
  command(...args: Array<string | number | Buffer>): Promise<any>;
  /** A connection of its own (pipelined commands; close it). */
  connection(): RedisConnection;
  /** Every key matching the pattern with its type, value and TTL. */
  dump(pattern?: string): Promise<Record<string, RedisEntry>>;
  keys(pattern?: string): Promise<string[]>;
  flush(): Promise<unknown>;
  output(): string;
  /** Stops Redis (default SIGKILL: an outage). Nothing is persisted. */
  kill(signal?: NodeJS.Signals): Promise<ExitResult>;
  /** Starts it again on the same port, empty. */
  start(): Promise<void>;
  restart(signal?: NodeJS.Signals): Promise<void>;
}

export interface ClusterSandbox {
  url: string;
  pid: number;
  /** The variables it printed (BUILD_API_BASE_URL, BUILD_API_KEY, ...). */
  env: Record<string, string>;
  /** Each simulated service's base URL and key, by service name (src/services/registry.ts). */
  urls: Record<string, string>;
  keys: Record<string, string>;
  /** Each service's keys of every simulated account (SANDBOX_ACCOUNTS), the first included. */
  accountKeys: Record<string, string[]>;
  /** Upstream hits per service and route. */
  stats(): Promise<{ services: Record<string, Record<string, number>> }>;
  faults(specs: unknown[]): Promise<unknown>;
  clearFaults(): Promise<unknown>;
  output(): string;
}

export interface ClusterNginx {
  url: string;
  port: number;
  pid: number;
  /** The master and its workers. */
  pids(): number[];
  /** The generated site config (deploy/nginx.conf filled in). */
  config(): string;
  errorLog(): string;
  reload(): boolean;
  /**
   * Marks replica `id` ("r2") `down` in every upstream, reloads nginx and waits (up to `timeoutMs`,
   * default 10 s) until the old workers, which may still hold connections to it, have exited.
   */
  takeOut(id: string, options?: { timeoutMs?: number }): Promise<NginxReload>;
  /** Puts replica `id` back in every upstream and reloads the same way. */
  putBack(id: string, options?: { timeoutMs?: number }): Promise<NginxReload>;
}

export interface NginxReload {
  /** false when an old worker was still running after timeoutMs (a long stream keeps it). */
  oldWorkersGone: boolean;
  ms: number;
}

export interface Cluster {
  /** The MCP endpoint: http://127.0.0.1:PORT/mcp through nginx (the first replica's without nginx). */
  url: string;
  /** url without /mcp (for /healthz, /readyz). */
  baseUrl: string;
  /** The temp directory: logs (r1.log, redis.log, sandbox.log), nginx/ (config, access.log, error.log). */
  dir: string;
  replicas: ClusterReplica[];
  redis: ClusterRedis;
  sandbox?: ClusterSandbox;
  nginx?: ClusterNginx;
  /** nginx's access log so far: upstream=<replica address> group=<sticky group> per request. */
  /** nginx's error log (why a 502: "upstream prematurely closed", "Connection reset by peer"). */
  nginxErrors?: () => string;
  nginxLog?: () => string;
  /** Every process id of the cluster right now (nginx workers included). */
  pids(): number[];
  /** The replica whose id prefixes a 2025 session id ("r2.…"), if any. */
  replicaFor(sessionId: string | undefined): ClusterReplica | undefined;
  /** Stops nginx, the replicas (SIGTERM, then SIGKILL), the sandbox and Redis; removes the temp dir. */
  stop(): Promise<void>;
}

export declare function startCluster(options?: ClusterOptions): Promise<Cluster>;

/** redis-server and nginx on this machine, and the server bundle built. */
export declare function clusterPrerequisites(options?: { cli?: string }): { ok: true } | { ok: false; why: string };
export declare function findBinary(name: string): string | undefined;
export declare function freePort(): Promise<number>;
/** Process ids whose parent is pid (Linux). */
export declare function childPids(pid: number): number[];
/** Whether a process runs (a zombie does not count). */
export declare function processAlive(pid: number): boolean;

export declare class RedisError extends Error {}
export declare function redisConnection(port: number, host?: string): RedisConnection;
export declare function redisCommand(port: number, ...args: Array<string | number | Buffer>): Promise<any>;
export declare function redisDump(port: number, pattern?: string): Promise<Record<string, RedisEntry>>;

export interface NginxReplica {
  id: string;
  /** host:port */
  address: string;
  /** Out of rotation: `down` on its server lines (a rolling restart, before SIGTERM). */
  down?: boolean;
}
/** The BEGIN/END replicas block of deploy/nginx.conf for these replicas. */
export declare function renderReplicaBlock(replicas: NginxReplica[], keepaliveTimeout?: string): string;
/** The BEGIN/END replicas block as deploy/nginx.conf has it. */
export declare function templateReplicaBlock(template?: string): string;
/** deploy/nginx.conf with these replicas, listen address and (optionally) access log path. */
export declare function renderNginxSite(options: {
  replicas: NginxReplica[];
  listen: string;
  accessLog?: string;
  tls?: { listen: string; certFile: string; keyFile: string };
  /** nginx's keepalive_timeout to the replicas, e.g. "1000ms" (default deploy/nginx.conf's). */
  keepaliveTimeout?: string;
  template?: string;
}): string;
