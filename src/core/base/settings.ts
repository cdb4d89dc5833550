import { readFileSync } from "node:fs";
import { z } from "zod";
import { LOOPBACK_ORIGINS } from "./loopback.js";

/**
 * The server's own settings, each declared once: its variable, its field in the config, its zod
 * type (which parses the variable's text), its default, its help and its section. Parsing
 * (config.ts), --help, the README table and server.json (npm run generate), and every default a
 * module falls back on (`settingDefault`) are derived from here; a message that names a variable
 * takes the name from `ENV`. test/unit/settings.test.ts fails when a variable's name, or its
 * default where it would be a second default, is written anywhere else in src/.
 */
export interface SettingDecl<T extends z.ZodType = z.ZodType> {
  env: string;
  section: Section;
  /** Parses the variable's text (undefined when unset and without a default). */
  type: T;
  /** The text parsed when the variable is unset; a function when it follows another setting. */
  default?: string | ((raw: (field: string) => string | undefined) => string);
  /** How --help shows the default, when not the default's text itself ("loopback origins"). */
  shown?: string;
  /** What it does; a function of the services' key headers where it names them. */
  help: string | ((keys: KeyHeaders) => string);
  /** Its value is a secret: scrubbed from every output, never echoed. */
  secret?: boolean;
  /** Read only when the sandbox runs (--sandbox or `switchboard-mcp sandbox`). */
  sandboxOnly?: boolean;
}

/** The services' key headers and bearer prefixes, which MCP_CREDENTIALS' help names. */
export interface KeyHeaders {
  headers: string[];
  bearers: string[];
}

export const SECTIONS = {
  upstream: "Upstream requests",
  http: "HTTP transport",
  auth: "Authentication and credentials",
  limits: "Limits (per caller and per replica)",
  calls: "Calls",
  state: "Replicas and shared state",
  logs: "Logs",
  telemetry: "Telemetry",
  sandbox: "Sandbox",
} as const;
export type Section = keyof typeof SECTIONS;

export const positiveInt = z.coerce
  .number({ error: "must be a number" })
  .int("must be a whole number")
  .positive("must be positive");

function httpUrlSetting(name: string) {
  return z.string().refine((v) => /^https?:\/\/[^\s]+$/i.test(v) && URL.canParse(v), `${name} must be an http(s) URL`);
}

function list(clean: (item: string) => string, otherwise: () => string[]) {
  return z
    .string()
    .optional()
    .transform((v) => (v === undefined ? otherwise() : v.split(",").map(clean).filter(Boolean)));
}

function wholeNumber(name: string, min: number, max?: number) {
  const n = z.coerce.number({ error: `${name} must be a number` }).int();
  const atLeast = n.min(min, `${name} must be ${min < 2 ? `${min} or more` : `at least ${min}`}`);
  return max === undefined ? atLeast : atLeast.max(max, `${name} must be at most ${max}`);
}

type Fault = { service: string; fault: string };

const settingsTable = {
  upstreamTimeoutMs: {
    env: "UPSTREAM_TIMEOUT_MS",
    section: "upstream",
    type: positiveInt,
    default: "30000",
    help: "timeout of one upstream request: connect, headers, body (ms)",
  },
  upstreamBodyBudgetBytes: {
    env: "UPSTREAM_BODY_BUDGET_BYTES",
    section: "upstream",
    type: positiveInt,
    default: "67108864",
    shown: "67108864 (64 MiB)",
    help:
      "upstream answer bytes read at once, process-wide (a read waits briefly for room, then fails BUSY); " +
      "an answer whose JSON would take more than this to parse is refused",
  },
  httpToken: {
    env: "MCP_HTTP_TOKEN",
    section: "auth",
    type: z.string().min(1).optional(),
    secret: true,
    help: "HTTP: require Authorization: Bearer <token>; needed to bind a non-loopback host",
  },
  allowedOrigins: {
    env: "MCP_ALLOWED_ORIGINS",
    section: "http",
    type: list(
      (s) => s.trim().replace(/\/+$/, ""),
      () => LOOPBACK_ORIGINS,
    ),
    shown: "loopback origins",
    help: "HTTP: comma-separated origins accepted in an Origin header",
  },
  allowedHosts: {
    env: "MCP_ALLOWED_HOSTS",
    section: "http",
    type: list(
      (s) => s.trim().toLowerCase(),
      () => [],
    ),
    shown: "loopback names",
    help:
      "HTTP on a loopback bind: comma-separated host names accepted in the Host header besides loopback ones " +
      "(the public name of a reverse proxy in front)",
  },
  maxSessions: {
    env: "MCP_MAX_SESSIONS",
    section: "limits",
    type: positiveInt,
    default: "1000",
    help: "HTTP: open 2025-era sessions allowed at once",
  },
  maxSessionsPerTenant: {
    env: "MCP_MAX_SESSIONS_PER_TENANT",
    section: "limits",
    type: positiveInt,
    default: "100",
    help:
      "HTTP, per-user keys or OAuth: open 2025-era sessions one owner may hold; an owner is the signed-in user " +
      "with OAuth (whatever keys they act with), else one set of keys (all callers without keys are one), and " +
      "keys no upstream has accepted yet count together; past it 429",
  },
  maxListenUris: {
    env: "MCP_MAX_LISTEN_URIS",
    section: "limits",
    type: positiveInt,
    default: "100",
    help: "HTTP: resources one subscriptions/listen request may name; past it 429",
  },
  maxSubscriptionsPerTenant: {
    env: "MCP_MAX_SUBSCRIPTIONS_PER_TENANT",
    section: "limits",
    type: positiveInt,
    default: "100",
    help:
      "per-user keys or OAuth: resource subscriptions one tenant may hold at once on a replica (listen streams " +
      "and 2025 subscriptions together); past it 429",
  },
  maxPollers: {
    env: "MCP_MAX_POLLERS",
    section: "limits",
    type: positiveInt,
    default: "1000",
    help: "resources a replica follows for subscribers at once (one upstream poll per interval each); past it 429",
  },
  maxTasksPerTenant: {
    env: "MCP_MAX_TASKS_PER_TENANT",
    section: "limits",
    type: positiveInt,
    default: "100",
    help:
      "per-user keys or OAuth: tasks one owner may have working at once, across replicas with MCP_STATE_URL; an " +
      "owner is the signed-in user with OAuth (whatever keys they act with), else one set of keys, and keys no " +
      "upstream has accepted yet count together; past it a task-augmented call is refused",
  },
  maxTenants: {
    env: "MCP_MAX_TENANTS",
    section: "limits",
    type: positiveInt,
    default: "10000",
    help:
      "per-user keys: tenants (sets of keys) a replica keeps built at once; " +
      "past it the longest idle one without a task is closed (docs/deployment.md, Capacity)",
  },
  sessionIdleMs: {
    env: "MCP_SESSION_IDLE_MS",
    section: "http",
    type: positiveInt,
    default: "1800000",
    help: "HTTP: idle time after which a 2025-era session with no request in flight expires",
  },
  maxConnections: {
    env: "MCP_MAX_CONNECTIONS",
    section: "limits",
    type: positiveInt,
    default: "2000",
    help: "HTTP: open connections at once; past it a new connection is closed as soon as it is accepted",
  },
  headersTimeoutMs: {
    env: "MCP_HEADERS_TIMEOUT_MS",
    section: "http",
    type: positiveInt,
    default: "15000",
    help: "HTTP: a client that has not sent its request headers by then is dropped with 408 (ms)",
  },
  unauthRate: {
    env: "MCP_UNAUTH_RATE",
    section: "limits",
    type: positiveInt,
    default: "50",
    help:
      "HTTP with MCP_HTTP_TOKEN or MCP_AUTH=oauth: requests without a valid token answered per second " +
      "(bursts of twice that), each 401 and closed; past it 429, without checking the token",
  },
  bodyBudgetBytes: {
    env: "MCP_BODY_BUDGET_BYTES",
    section: "limits",
    type: positiveInt,
    default: "268435456",
    shown: "268435456 (256 MiB)",
    help:
      "HTTP: request-body bytes held at once across all connections (the first 64 KiB of each body not counted); " +
      "past it 503",
  },
  requestStateKey: {
    env: "MCP_REQUEST_STATE_KEY",
    section: "state",
    type: z.string().min(32, "MCP_REQUEST_STATE_KEY must be at least 32 characters").optional(),
    secret: true,
    shown: "derived from MCP_STATE_KEY, else random per process",
    help: "key (32+ characters) that signs confirmation round trips; set the same on every replica",
  },
  credentials: {
    env: "MCP_CREDENTIALS",
    section: "auth",
    type: z.enum(["operator", "caller", "linked"], { error: "MCP_CREDENTIALS must be operator, caller or linked" }),
    default: "operator",
    help: ({ headers, bearers }: KeyHeaders) =>
      "HTTP: operator (the keys above serve every caller), " +
      `caller (each request brings its own keys in ${headers.join(", ")}` +
      `${bearers.length ? `; or ${bearers.join(", ")} when MCP_HTTP_TOKEN is unset` : ""}) ` +
      "or linked (each signed-in user links their keys once through the server's connect page; " +
      "needs MCP_AUTH=oauth)",
  },
  auth: {
    env: "MCP_AUTH",
    section: "auth",
    type: z.enum(["none", "token", "oauth"], { error: "MCP_AUTH must be none, token or oauth" }),
    default: (raw: (field: string) => string | undefined) => (raw("httpToken") ? "token" : "none"),
    shown: "none, or token when MCP_HTTP_TOKEN is set",
    help:
      "HTTP: how callers are authenticated: none (loopback only), token (MCP_HTTP_TOKEN; implied when it is set) " +
      "or oauth (access tokens from MCP_AUTH_ISSUER)",
  },
  publicUrl: {
    env: "MCP_PUBLIC_URL",
    section: "auth",
    type: httpUrlSetting("MCP_PUBLIC_URL").optional(),
    help:
      "HTTP with MCP_AUTH=oauth or webhooks: the MCP endpoint's URL as clients reach it (https://…/mcp): " +
      "the protected resource's identifier, the tokens' audience, the base of connect links and webhook addresses",
  },
  authIssuers: {
    env: "MCP_AUTH_ISSUER",
    section: "auth",
    type: list(
      (s) => s.trim(),
      () => [],
    ).pipe(z.array(httpUrlSetting("MCP_AUTH_ISSUER"))),
    help:
      "HTTP with MCP_AUTH=oauth: issuer URL of the authorization server (comma-separated for several); " +
      "its metadata and signing keys are discovered from it",
  },
  authAudience: {
    env: "MCP_AUTH_AUDIENCE",
    section: "auth",
    type: z.string().min(1).optional(),
    shown: "MCP_PUBLIC_URL",
    help: "HTTP with MCP_AUTH=oauth: the audience access tokens must carry",
  },
  introspectionUrl: {
    env: "MCP_AUTH_INTROSPECTION_URL",
    section: "auth",
    type: httpUrlSetting("MCP_AUTH_INTROSPECTION_URL").optional(),
    help: "HTTP with MCP_AUTH=oauth: RFC 7662 introspection endpoint for opaque (non-JWT) access tokens",
  },
  authClientId: {
    env: "MCP_AUTH_CLIENT_ID",
    section: "auth",
    type: z.string().min(1).optional(),
    help: "HTTP with MCP_AUTH_INTROSPECTION_URL: this server's client id at the introspection endpoint",
  },
  authClientSecret: {
    env: "MCP_AUTH_CLIENT_SECRET",
    section: "auth",
    type: z.string().min(1).optional(),
    secret: true,
    help: "HTTP with MCP_AUTH_INTROSPECTION_URL: this server's client secret at the introspection endpoint",
  },
  authDocsUrl: {
    env: "MCP_AUTH_DOCS_URL",
    section: "auth",
    type: httpUrlSetting("MCP_AUTH_DOCS_URL").optional(),
    shown: "this project's docs/deployment.md#oauth",
    help: "HTTP with MCP_AUTH=oauth: documentation URL named in the protected resource metadata",
  },
  stateUrl: {
    env: "MCP_STATE_URL",
    section: "state",
    type: z
      .string()
      .regex(/^rediss?:\/\/.+/i, "MCP_STATE_URL must be a redis:// or rediss:// URL")
      .optional(),
    shown: "none: state stays in process",
    help: "HTTP: shared state for replicas (redis://…): tasks, poller leases, events, nonces; needs MCP_STATE_KEY",
  },
  stateKey: {
    env: "MCP_STATE_KEY",
    section: "state",
    type: z.string().min(32, "MCP_STATE_KEY must be at least 32 characters").optional(),
    secret: true,
    shown: "random per process",
    help: "key (32+ characters, the same on every replica) that encrypts what a task keeps at rest and keys tenant ids",
  },
  replicaId: {
    env: "MCP_REPLICA_ID",
    section: "state",
    type: z
      .string()
      .regex(/^[a-z0-9][a-z0-9-]{0,31}$/i, "MCP_REPLICA_ID must be 1-32 letters, digits or dashes")
      .optional(),
    shown: "random",
    help: "HTTP: this replica's name; 2025-era session ids start with it so a balancer can route them back",
  },
  leaseMs: {
    env: "MCP_LEASE_MS",
    section: "state",
    type: wholeNumber("MCP_LEASE_MS", 500),
    default: "15000",
    help:
      "HTTP with MCP_STATE_URL: how long a replica's claim on a task lasts unrenewed; " +
      "a dead replica's tasks are adopted within it (ms)",
  },
  drainMs: {
    env: "MCP_DRAIN_MS",
    section: "http",
    type: wholeNumber("MCP_DRAIN_MS", 0),
    default: "10000",
    help: "HTTP: on SIGTERM, how long in-flight requests may take to finish before they are closed (ms)",
  },
  drainIdleMs: {
    env: "MCP_DRAIN_IDLE_MS",
    section: "http",
    type: wholeNumber("MCP_DRAIN_IDLE_MS", 0),
    default: "6000",
    help:
      "HTTP: on SIGTERM, how long idle keep-alive connections stay open for the balancer to close them; " +
      "keep it above the balancer's idle timeout to the replicas (nginx keepalive_timeout, 4 s in deploy/) (ms)",
  },
  maxBlockingWaitSeconds: {
    env: "MCP_MAX_BLOCKING_WAIT_SECONDS",
    section: "calls",
    type: wholeNumber("MCP_MAX_BLOCKING_WAIT_SECONDS", 1, 7200),
    default: "45",
    help:
      "longest a wait blocks a call that is not a task and asked for no timeoutSeconds; then it returns " +
      "(not an error) saying how to follow the work. Most clients give up at 60 s; raise it only for clients " +
      "known to wait longer",
  },
  repeatWindowSeconds: {
    env: "MCP_REPEAT_WINDOW_SECONDS",
    section: "calls",
    type: wholeNumber("MCP_REPEAT_WINDOW_SECONDS", 0, 86400),
    default: "600",
    help:
      "a call that spends credits, repeated by the same caller with the same arguments within this many seconds " +
      "of the first one's outcome, gets that outcome instead of spending again (a first call whose outcome is " +
      "not known is checked, and kept a day); repeat: true spends again (docs/security.md, spend ledger); " +
      "0 turns this off",
  },
  stateDir: {
    env: "MCP_STATE_DIR",
    section: "state",
    type: z.string().min(1).optional(),
    shown: "$XDG_STATE_HOME/switchboard-mcp, else ~/.local/state/switchboard-mcp",
    help:
      "without MCP_STATE_URL: directory of the spend ledger's files, so a restarted server remembers its " +
      "paid calls (several servers may share it); unusable, every paid call asks first",
  },
  logLevel: {
    env: "LOG_LEVEL",
    section: "logs",
    type: z.enum(["debug", "info", "warn", "error"], { error: "LOG_LEVEL must be debug, info, warn or error" }),
    default: "info",
    help: "debug, info, warn or error; logs go to stderr (and to MCP clients as log messages), never stdout",
  },
  sandboxTimeScale: {
    env: "SANDBOX_TIME_SCALE",
    section: "sandbox",
    type: z.coerce
      .number({ error: "SANDBOX_TIME_SCALE must be a number" })
      .positive("SANDBOX_TIME_SCALE must be positive"),
    default: "20",
    help: "sandbox: simulated ms per real ms (20 makes a 40-minute build take 2 minutes)",
  },
  sandboxFaults: {
    env: "SANDBOX_FAULTS",
    section: "sandbox",
    type: z
      .string()
      .optional()
      .transform((raw, ctx): Fault[] | undefined => {
        if (raw === undefined) return undefined;
        try {
          const parsed = JSON.parse(raw) as unknown;
          return (Array.isArray(parsed) ? parsed : [parsed]) as Fault[];
        } catch {
          ctx.addIssue({ code: "custom", message: "SANDBOX_FAULTS must be a JSON array of faults" });
          return z.NEVER;
        }
      }),
    help: "sandbox: JSON array of faults to inject from the start",
  },
  metricsAddress: {
    env: "MCP_METRICS_ADDRESS",
    section: "telemetry",
    type: z
      .string()
      .regex(
        /^(\[[0-9a-f:.]+\]|[\w.-]*):\d{1,5}$/i,
        "MCP_METRICS_ADDRESS must be host:port (127.0.0.1:9464, [::1]:9464, :9464 for every address)",
      )
      .optional(),
    shown: "none",
    help:
      "host:port of a Prometheus /metrics listener of its own, never the MCP port; unset: none. Traces and " +
      "metrics also go to an OTLP collector named by the standard OTEL_* variables (docs/observability.md)",
  },
  traceResourceUris: {
    env: "MCP_TRACE_RESOURCE_URIS",
    section: "telemetry",
    type: z
      .enum(["true", "false"], { error: "MCP_TRACE_RESOURCE_URIS must be true or false" })
      .transform((v) => v === "true"),
    default: "false",
    help:
      "Set to true and the span of each resources/read, subscribe and unsubscribe carries mcp.resource.uri " +
      "(opt-in in the MCP conventions). URIs name projects: only where traces may hold them. Never a metric label",
  },
  sandboxAccounts: {
    env: "SANDBOX_ACCOUNTS",
    section: "sandbox",
    type: z.coerce
      .number({ error: "SANDBOX_ACCOUNTS must be a whole number from 1 to 9" })
      .int("SANDBOX_ACCOUNTS must be a whole number from 1 to 9")
      .min(1, "SANDBOX_ACCOUNTS must be a whole number from 1 to 9")
      .max(9, "SANDBOX_ACCOUNTS must be a whole number from 1 to 9"),
    default: "1",
    sandboxOnly: true,
    help:
      "sandbox and --sandbox: accounts to simulate per service, 1-9; account n's key ends in n, with the same " +
      "demo data in each (--sandbox with MCP_CREDENTIALS=caller prints the keys)",
  },
  sandboxWebhookCa: {
    env: "SANDBOX_WEBHOOK_CA",
    section: "sandbox",
    type: z
      .string()
      .optional()
      .transform((path, ctx): string | undefined => {
        if (path === undefined) return undefined;
        const issue = (why: string) => {
          ctx.addIssue({ code: "custom", message: `SANDBOX_WEBHOOK_CA: ${why}; give a PEM certificate file` });
          return z.NEVER;
        };
        let pem: string;
        try {
          pem = readFileSync(path, "utf8");
        } catch (err) {
          return issue(`cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? "unreadable"})`);
        }
        return pem.includes("-----BEGIN CERTIFICATE-----") ? pem : issue(`${path} holds no PEM certificate`);
      }),
    shown: "none",
    sandboxOnly: true,
    help:
      "sandbox and --sandbox: PEM file of a test CA the build simulator trusts for its HTTPS webhook deliveries " +
      "(to loopback only; nothing else trusts it); unset: the system's CAs",
  },
} satisfies Record<string, SettingDecl>;

export type SettingField = keyof typeof settingsTable;
export const SETTINGS: { readonly [K in SettingField]: SettingDecl<(typeof settingsTable)[K]["type"]> } = settingsTable;

/** The parsed value of every setting, keyed by field. */
export type SettingValues = { [K in SettingField]: z.output<(typeof settingsTable)[K]["type"]> };

/** A setting's default, parsed: what a module uses when it is built without the configured value. */
export function settingDefault<K extends SettingField>(field: K): SettingValues[K] {
  const decl = SETTINGS[field] as SettingDecl;
  const text = typeof decl.default === "function" ? decl.default(() => undefined) : decl.default;
  return decl.type.parse(text, { jitless: true }) as SettingValues[K];
}

/** Every setting's variable by field, for messages that tell the operator what to change. */
export const ENV = Object.fromEntries(Object.entries(SETTINGS).map(([field, d]) => [field, d.env])) as {
  readonly [K in SettingField]: string;
};
