import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import {
  ALL_TOOLSETS,
  ConfigError,
  credentialHeader,
  enabledToolsets,
  parseCommand,
  shownCredentialHeader,
  type Config,
} from "../../src/config.js";
import { SERVICES } from "../../src/services/registry.js";
import { codeOf, sourceFiles } from "../layering.js";

const serve = (argv: string[], env: Record<string, string> = {}): Config => {
  const cmd = parseCommand(argv, env);
  if (cmd.kind !== "serve") throw new Error(`expected serve, got ${cmd.kind}`);
  return cmd.config;
};

/** The ConfigError a start would stop with (the CLI prints its message as one line and exits 2). */
const refusal = (argv: string[], env: Record<string, string> = {}): ConfigError => {
  try {
    parseCommand(argv, env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).not.toContain("\n");
    return err as ConfigError;
  }
  throw new Error(`expected ${JSON.stringify(argv)} ${JSON.stringify(env)} to be refused`);
};

const BUILD = { BUILD_API_KEY: "tlm_sk_unit_test_key" };
const OAUTH = { MCP_PUBLIC_URL: "https://mcp.example.com/mcp", MCP_AUTH_ISSUER: "https://idp.example.com" };
const SIZING = { SIZING_API_KEY: "sizing-key", SIZING_API_BASE_URL: "http://127.0.0.1:9/sizing/v1" };
const DRONES = { DRONES_API_KEY: "drones-key", DRONES_API_BASE_URL: "http://127.0.0.1:9/drones" };
/** Every toolset, as the messages list them. */
const TOOLSET_LIST = ALL_TOOLSETS.map((t) => t.id).join(", ");
/** Every service of the registry pointed at an address nothing listens on. */
const EVERY_SERVICE = Object.fromEntries(
  SERVICES.flatMap((s) => [
    [s.baseUrlVar, `http://127.0.0.1:9/${s.name}`],
    [s.apiKeyVar, "unit-test-key"],
  ]),
);
const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

describe("configuration", () => {
  it("applies the defaults", () => {
    const c = serve([]);
    expect(c).toMatchObject({
      transport: "stdio",
      host: "127.0.0.1",
      port: 3000,
      upstreamTimeoutMs: 30_000,
      maxSessions: 1000,
      sessionIdleMs: 30 * 60_000,
      logLevel: "info",
      sandbox: false,
      readOnly: false,
    });
    // Every registered service is named with its variables (from the registry: a new one joins).
    expect(c.warnings).toHaveLength(1);
    const [none] = c.warnings;
    expect(none).toMatch(/^no service is configured, so no tools are registered: set /);
    expect(none).toContain("BUILD_API_KEY (and optionally BUILD_API_BASE_URL) for the project build service; ");
    expect(none).toContain("SIZING_API_BASE_URL and SIZING_API_KEY for the garment size recommendation API; ");
    for (const service of SERVICES)
      expect(none).toMatch(new RegExp(`${service.apiKeyVar}[^;]* for the ${service.title}[;,]`));
    expect(none).toMatch(/; or start with --sandbox to try every tool against built-in simulators$/);
    expect(serve([], BUILD).warnings).toEqual([]);
    expect(serve(["--sandbox"]).warnings).toEqual([]);
    expect(serve(["--transport", "http"], { MCP_CREDENTIALS: "caller" }).warnings).toEqual([]);
    expect(c.toolsets).toBeUndefined();
    expect(c.httpToken).toBeUndefined();
    expect(c.services.size).toBe(0);
    expect(enabledToolsets(c, c.services.keys())).toEqual([]);
    // The default origin allow-list: loopback origins, IPv6 included.
    expect(c.allowedOrigins).toEqual(expect.arrayContaining(["http://localhost", "http://127.0.0.1", "http://[::1]"]));
  });

  it("registers a service only when its key and base URL are set (the build service has a default URL)", () => {
    const build = serve([], BUILD);
    expect([...build.services.keys()]).toEqual(["build"]);
    expect(build.services.get("build")).toMatchObject({
      BUILD_API_BASE_URL: "https://api-accounts.totalum.app",
      BUILD_API_KEY_HEADER: "api-key",
      BUILD_POLL_INTERVAL_MS: 12_000,
      BUILD_CONFIRM_SPEND: "always",
    });
    // build_admin is off unless asked for.
    expect(enabledToolsets(build, build.services.keys())).toEqual(["build"]);

    const all = serve(["--toolsets", "sizing,drones"], { ...BUILD, ...SIZING, ...DRONES });
    expect([...all.services.keys()].sort()).toEqual(["build", "drones", "sizing"]);
    expect(all.toolsets).toEqual(["sizing", "drones"]);
    expect(enabledToolsets(all, all.services.keys())).toEqual(["sizing", "drones"]);
    // Every service of the registry configured: "all" is every toolset there is.
    const everything = serve(["--toolsets", "all"], EVERY_SERVICE);
    expect(enabledToolsets(everything, everything.services.keys())).toEqual(ALL_TOOLSETS.map((t) => t.id));
    expect(ALL_TOOLSETS.map((t) => t.id)).toEqual(expect.arrayContaining(["build", "build_admin", "sizing", "drones"]));
    // "all" means every toolset of the configured services.
    const onlyDrones = serve(["--toolsets", "all"], DRONES);
    expect(enabledToolsets(onlyDrones, onlyDrones.services.keys())).toEqual(["drones"]);
  });

  it("reads flags and numeric variables", () => {
    const c = serve(["--transport", "http", "--port", "8080", "--read-only"], {
      ...BUILD,
      BUILD_CONFIRM_SPEND: "5",
      UPSTREAM_TIMEOUT_MS: "1500",
      MCP_MAX_SESSIONS: "7",
      MCP_SESSION_IDLE_MS: "250",
    });
    expect(c).toMatchObject({
      transport: "http",
      port: 8080,
      readOnly: true,
      upstreamTimeoutMs: 1500,
      maxSessions: 7,
      sessionIdleMs: 250,
    });
    expect(c.services.get("build")).toMatchObject({ BUILD_CONFIRM_SPEND: 5 });
    const sandbox = serve(["--sandbox"]);
    expect(sandbox.sandbox).toBe(true);
    expect(sandbox.services.size).toBe(0); // filled once the simulators run
  });

  it("polls a loopback upstream as fast as asked, a real one no faster than every 2 s", () => {
    const loopback = serve([], { ...BUILD, BUILD_API_BASE_URL: "http://127.0.0.1:4010" });
    expect(loopback.services.get("build")).toMatchObject({ BUILD_POLL_INTERVAL_MS: 1000 }); // the loopback default
    const fast = serve([], { ...BUILD, BUILD_API_BASE_URL: "http://127.0.0.1:4010", BUILD_POLL_INTERVAL_MS: "40" });
    expect(fast.services.get("build")).toMatchObject({ BUILD_POLL_INTERVAL_MS: 40 });
    const real = serve([], { ...BUILD, BUILD_POLL_INTERVAL_MS: "2000" });
    expect(real.services.get("build")).toMatchObject({ BUILD_POLL_INTERVAL_MS: 2000 });
  });

  it.each([
    [["--bogus"], {}, /^unknown flag --bogus; see --help for the flags$/],
    [["--transport", "carrier-pigeon"], {}, /^--transport must be stdio or http$/],
    [["--port", "70000"], {}, /^--port must be 0-65535$/],
    [
      ["--toolsets", ""],
      {},
      new RegExp(`^--toolsets is empty: name one or more of ${escapeRegExp(TOOLSET_LIST)}, or all$`),
    ],
    [["--toolsets", " , "], BUILD, /^--toolsets is empty: /],
    [
      ["--toolsets", "build,rockets"],
      BUILD,
      new RegExp(`^unknown toolset rockets; the toolsets are ${escapeRegExp(TOOLSET_LIST)}, or all$`),
    ],
    [["deploy"], {}, /^unknown command "deploy"; the only command is "sandbox"/],
    [[], { LOG_LEVEL: "loud" }, /^LOG_LEVEL must be debug, info, warn or error$/],
    [[], { UPSTREAM_TIMEOUT_MS: "-5" }, /^UPSTREAM_TIMEOUT_MS: must be positive$/],
    [[], { MCP_MAX_SESSIONS: "lots" }, /^MCP_MAX_SESSIONS: must be a number$/],
    [[], { MCP_REQUEST_STATE_KEY: "too-short" }, /^MCP_REQUEST_STATE_KEY must be at least 32 characters$/],
    [
      ["--transport", "http"],
      { MCP_STATE_URL: "redis://127.0.0.1:6379" },
      /^MCP_STATE_URL needs MCP_STATE_KEY: set it to 32\+ random characters/,
    ],
    [
      ["--transport", "http"],
      { MCP_STATE_URL: "http://127.0.0.1:6379", MCP_STATE_KEY: "k".repeat(32) },
      /^MCP_STATE_URL must be a redis:\/\/ or rediss:\/\/ URL$/,
    ],
    [
      ["--transport", "http"],
      { MCP_STATE_URL: "redis://127.0.0.1:6379", MCP_STATE_KEY: "short" },
      /^MCP_STATE_KEY must be at least 32 characters$/,
    ],
    [[], { MCP_CREDENTIALS: "caller" }, /^MCP_CREDENTIALS=caller needs --transport http/],
    [["--transport", "http"], { MCP_CREDENTIALS: "everyone" }, /^MCP_CREDENTIALS must be operator, caller or linked$/],
    [["--transport", "http"], { MCP_CREDENTIALS: "linked" }, /^MCP_CREDENTIALS=linked needs MCP_AUTH=oauth/],
    [["--transport", "http"], { MCP_AUTH: "password" }, /^MCP_AUTH must be none, token or oauth$/],
    [["--transport", "http"], { MCP_AUTH: "token" }, /^MCP_AUTH=token needs MCP_HTTP_TOKEN/],
    [[], { MCP_AUTH: "oauth", ...OAUTH }, /^MCP_AUTH=oauth needs --transport http/],
    [
      ["--transport", "http"],
      { MCP_AUTH: "oauth", MCP_AUTH_ISSUER: OAUTH.MCP_AUTH_ISSUER },
      /^MCP_AUTH=oauth needs MCP_PUBLIC_URL/,
    ],
    [
      ["--transport", "http"],
      { MCP_AUTH: "oauth", MCP_PUBLIC_URL: OAUTH.MCP_PUBLIC_URL },
      /^MCP_AUTH=oauth needs MCP_AUTH_ISSUER/,
    ],
    [
      ["--transport", "http"],
      { MCP_AUTH: "oauth", ...OAUTH, MCP_PUBLIC_URL: "http://mcp.example.com/mcp" },
      /^MCP_PUBLIC_URL must be https:\/\//,
    ],
    [
      ["--transport", "http"],
      { MCP_AUTH: "oauth", ...OAUTH, MCP_PUBLIC_URL: "https://mcp.example.com/mcp#x" },
      /^MCP_PUBLIC_URL must have no query or fragment/,
    ],
    [
      ["--transport", "http"],
      { MCP_AUTH: "oauth", ...OAUTH, MCP_AUTH_ISSUER: "not a url" },
      /^MCP_AUTH_ISSUER must be an http\(s\) URL$/,
    ],
    [
      ["--transport", "http"],
      { MCP_AUTH: "oauth", ...OAUTH, MCP_HTTP_TOKEN: "t".repeat(32) },
      /^MCP_HTTP_TOKEN and MCP_AUTH=oauth exclude each other/,
    ],
    [
      ["--transport", "http"],
      { MCP_AUTH: "oauth", ...OAUTH, MCP_AUTH_INTROSPECTION_URL: "https://idp.example.com/introspect" },
      /^MCP_AUTH_INTROSPECTION_URL needs MCP_AUTH_CLIENT_ID and MCP_AUTH_CLIENT_SECRET/,
    ],
    [
      ["--transport", "http"],
      { MCP_REPLICA_ID: "no spaces please" },
      /^MCP_REPLICA_ID must be 1-32 letters, digits or dashes$/,
    ],
    [["sandbox"], { SANDBOX_ACCOUNTS: "12" }, /^SANDBOX_ACCOUNTS must be a whole number from 1 to 9$/],
    [[], { SANDBOX_FAULTS: "[not json" }, /^SANDBOX_FAULTS must be a JSON array of faults$/],
    [
      ["--transport", "http", "--host", "0.0.0.0"],
      {},
      /^refusing to bind non-loopback host 0\.0\.0\.0 without MCP_HTTP_TOKEN/,
    ],
    [[], { ...BUILD, BUILD_POLL_INTERVAL_MS: "soon" }, /^BUILD_POLL_INTERVAL_MS: must be a number \(got "soon"\)$/],
    [
      [],
      { ...BUILD, BUILD_CONFIRM_SPEND: "sometimes" },
      /^BUILD_CONFIRM_SPEND: must be always, never, or a credit amount above which to ask \(got "sometimes"\)$/,
    ],
    [[], { ...BUILD, BUILD_API_BASE_URL: "ftp://x.example" }, /^BUILD_API_BASE_URL: must be an http\(s\) URL/],
  ])("refuses %j %j with a one-line message", (argv, env, message) => {
    expect(refusal(argv, env).message).toMatch(message);
  });

  it("reads OAuth settings: several issuers, audience defaulting to the public URL, a public bind allowed", () => {
    const config = serve(["--transport", "http", "--host", "0.0.0.0"], {
      MCP_AUTH: "oauth",
      MCP_CREDENTIALS: "linked",
      MCP_PUBLIC_URL: OAUTH.MCP_PUBLIC_URL,
      MCP_AUTH_ISSUER: "https://a.example.com, https://b.example.com/realms/x",
    });
    expect(config).toMatchObject({
      auth: "oauth",
      credentials: "linked",
      publicUrl: OAUTH.MCP_PUBLIC_URL,
      authIssuers: ["https://a.example.com", "https://b.example.com/realms/x"],
    });
    expect(config.authAudience).toBeUndefined();
    expect(serve(["--transport", "http"], { MCP_HTTP_TOKEN: "t".repeat(32) }).auth).toBe("token");
    expect(serve(["--transport", "http"]).auth).toBe("none");
  });

  it("names the toolset and what its service needs when the service is not configured", () => {
    expect(refusal(["--toolsets", "sizing"]).message).toBe(
      "toolset sizing needs the garment size recommendation API: set SIZING_API_KEY and SIZING_API_BASE_URL, " +
        "or start with --sandbox",
    );
    // The build service has a default base URL: only its key is missing.
    expect(refusal(["--toolsets", "drones,build_admin"], DRONES).message).toBe(
      "toolset build_admin needs the project build service: set BUILD_API_KEY, or start with --sandbox",
    );
    // --sandbox configures every service.
    expect(serve(["--sandbox", "--toolsets", "sizing"]).toolsets).toEqual(["sizing"]);
  });

  it.each([
    [
      { SIZING_API_KEY: "k" },
      "SIZING_API_KEY",
      "SIZING_API_BASE_URL",
      new RegExp(
        /^SIZING_API_KEY is set but SIZING_API_BASE_URL is not: set SIZING_API_BASE_URL to /.source +
          /the garment size recommendation API's base URL, or unset SIZING_API_KEY$/.source,
      ),
    ],
    [
      { SIZING_API_BASE_URL: "http://127.0.0.1:9/s" },
      "SIZING_API_BASE_URL",
      "SIZING_API_KEY",
      /^SIZING_API_BASE_URL is set but SIZING_API_KEY is not: /,
    ],
    [
      { DRONES_API_KEY: "k" },
      "DRONES_API_KEY",
      "DRONES_API_BASE_URL",
      /^DRONES_API_KEY is set but DRONES_API_BASE_URL is not: /,
    ],
    [
      { DRONES_API_BASE_URL: "http://127.0.0.1:9/d" },
      "DRONES_API_BASE_URL",
      "DRONES_API_KEY",
      /^DRONES_API_BASE_URL is set but DRONES_API_KEY is not: /,
    ],
    [
      { BUILD_API_BASE_URL: "https://build.example.com" },
      "BUILD_API_BASE_URL",
      "BUILD_API_KEY",
      new RegExp(
        /^BUILD_API_BASE_URL is set but BUILD_API_KEY is not: /.source +
          /set BUILD_API_KEY to use the project build service, or unset BUILD_API_BASE_URL$/.source,
      ),
    ],
  ])("refuses a service set only half (%j), naming both variables", (env, set, missing, message) => {
    const { message: text } = refusal([], env);
    expect(text).toMatch(message);
    expect(text).toContain(set);
    expect(text).toContain(missing);
    // Not even with only another service's toolset asked for: the user meant to use it.
    const [toolset, other] = set.startsWith("SIZING") ? ["drones", DRONES] : ["sizing", SIZING];
    expect(refusal(["--toolsets", toolset], { ...other, ...env }).message).toMatch(message);
  });

  it("names BUILD_API_BASE_URL when it is not a URL, and never prints a key", () => {
    const { message } = refusal([], { ...BUILD, BUILD_API_BASE_URL: "notaurl" });
    expect(message).toMatch(
      /^BUILD_API_BASE_URL: must be an http\(s\) URL, like https:\/\/api\.example\.com \(got "notaurl"\)$/,
    );
    expect(message).not.toContain(BUILD.BUILD_API_KEY);
  });

  it("refuses BUILD_POLL_INTERVAL_MS below 2000 against a non-loopback URL", () => {
    for (const env of [
      { ...BUILD, BUILD_POLL_INTERVAL_MS: "500" },
      { ...BUILD, BUILD_API_BASE_URL: "https://build.example.com", BUILD_POLL_INTERVAL_MS: "1999" },
    ]) {
      const { message } = refusal([], env);
      expect(message).toMatch(/^BUILD_POLL_INTERVAL_MS: must be at least 2000 ms for a real service/);
      expect(message).toContain(`(got "${env.BUILD_POLL_INTERVAL_MS}")`);
    }
  });

  it("warns in one line about flags that do nothing in this mode, and starts", () => {
    const c = serve(["--port", "4000"], BUILD);
    expect(c.transport).toBe("stdio");
    expect(c.warnings).toEqual(["--port has no effect with --transport stdio; it applies to --transport http"]);
    expect(serve(["--host", "0.0.0.0", "--port", "1"], BUILD).warnings).toEqual([
      "--port has no effect with --transport stdio; it applies to --transport http",
      "--host has no effect with --transport stdio; it applies to --transport http",
    ]);
    const sandboxed = serve(["--sandbox"], { ...BUILD, ...SIZING });
    expect(sandboxed.warnings).toHaveLength(1);
    expect(sandboxed.warnings[0]).toBe(
      "--sandbox points every service at the built-in simulators: BUILD_API_KEY, SIZING_API_BASE_URL, " +
        "SIZING_API_KEY ignored",
    );
    expect(sandboxed.warnings[0]).not.toContain(BUILD.BUILD_API_KEY);
    for (const w of [...c.warnings, ...sandboxed.warnings]) expect(w).not.toContain("\n");
  });

  it("allows a non-loopback bind when a token is set, and a loopback one (IPv6 too) without", () => {
    expect(serve(["--transport", "http", "--host", "0.0.0.0"], { MCP_HTTP_TOKEN: "t0ken-value" })).toMatchObject({
      host: "0.0.0.0",
      httpToken: "t0ken-value",
    });
    expect(serve(["--transport", "http", "--host", "::1"]).host).toBe("::1");
    expect(serve(["--transport", "http", "--host", "localhost"]).host).toBe("localhost");
  });

  it("reads MCP_ALLOWED_HOSTS as a trimmed, lower-case list (none by default)", () => {
    expect(serve([], { MCP_ALLOWED_HOSTS: " MCP.example.com , internal.example " }).allowedHosts).toEqual([
      "mcp.example.com",
      "internal.example",
    ]);
    expect(serve([], {}).allowedHosts).toEqual([]);
  });

  it("reads MCP_ALLOWED_ORIGINS as a trimmed list", () => {
    expect(serve([], { MCP_ALLOWED_ORIGINS: " https://app.example.com/ , http://[::1]:5173" }).allowedOrigins).toEqual([
      "https://app.example.com",
      "http://[::1]:5173",
    ]);
  });

  it("reads MCP_TRACE_RESOURCE_URIS as true or false, off by default (mcp.resource.uri is opt-in)", () => {
    expect(serve([], BUILD).traceResourceUris).toBe(false);
    expect(serve([], { ...BUILD, MCP_TRACE_RESOURCE_URIS: "true" }).traceResourceUris).toBe(true);
    expect(refusal([], { ...BUILD, MCP_TRACE_RESOURCE_URIS: "yes" }).message).toMatch(
      /MCP_TRACE_RESOURCE_URIS must be true or false/,
    );
  });

  it("parses the sandbox, help and version commands", () => {
    expect(parseCommand(["sandbox", "--port", "4555"], {})).toMatchObject({
      kind: "sandbox",
      port: 4555,
      host: "127.0.0.1",
    });
    expect(parseCommand(["--version"], {})).toEqual({ kind: "version" });
    expect(parseCommand(["--help"], {})).toEqual({ kind: "help" });
    expect(() => parseCommand(["sandbox", "--port", "99999"], {})).toThrow(/^--port must be 0-65535$/);
  });
});

describe("the per-user key header", () => {
  const SRC = fileURLToPath(new URL("../../src", import.meta.url));
  const CONFIG = join(SRC, "config.ts");

  it("is spelled only by config.ts (credentialHeader; shownCredentialHeader for help and start-up lines)", () => {
    const spelled = sourceFiles(SRC)
      .filter((file) => file !== CONFIG && /-api-key`/i.test(codeOf(file)))
      .map((file) => file.slice(SRC.length + 1));
    expect(spelled).toEqual([]);
  });

  it("reads and shows the same header for every service", () => {
    for (const s of SERVICES) {
      expect(shownCredentialHeader(s.name)).toMatch(/^X-[A-Z][a-z]*-Api-Key$/);
      expect(shownCredentialHeader(s.name).toLowerCase()).toBe(credentialHeader(s.name));
    }
  });
});
