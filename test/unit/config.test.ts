import { describe, expect, it } from "vitest";
import { ConfigError, enabledToolsets, parseCommand } from "../../src/config.js";

const serve = (argv: string[], env: Record<string, string> = {}) => {
  const cmd = parseCommand(argv, env);
  if (cmd.kind !== "serve") throw new Error(`expected serve, got ${cmd.kind}`);
  return cmd.config;
};

describe("configuration", () => {
  it("applies the contract's defaults", () => {
    const c = serve([]);
    expect(c.transport).toBe("stdio");
    expect(c.host).toBe("127.0.0.1");
    expect(c.port).toBe(3000);
    expect(c.build.baseUrl).toBe("https://api-accounts.totalum.app");
    expect(c.build.keyHeader).toBe("api-key");
    expect(c.pollIntervalMs).toBe(12000);
    expect(c.confirmSpend).toBe("always");
    expect(c.upstreamTimeoutMs).toBe(30000);
    expect(c.logLevel).toBe("info");
    expect(enabledToolsets(c)).toEqual([]);
  });

  it("registers a service only when its key and base URL are set", () => {
    const c = serve([], { BUILD_API_KEY: "tlm_sk_x", SIZING_API_KEY: "k1", DRONES_API_BASE_URL: "http://127.0.0.1:9/drones" });
    expect(enabledToolsets(c)).toEqual(["build", "build_admin"]);
    const all = serve(["--toolsets", "sizing,drones"], {
      BUILD_API_KEY: "k",
      SIZING_API_KEY: "k",
      SIZING_API_BASE_URL: "http://127.0.0.1:9/s",
      DRONES_API_KEY: "k",
      DRONES_API_BASE_URL: "http://127.0.0.1:9/d",
    });
    expect(enabledToolsets(all)).toEqual(["sizing", "drones"]);
  });

  it("reads flags and numeric variables", () => {
    const c = serve(["--transport", "http", "--port", "8080", "--read-only", "--sandbox"], { BUILD_CONFIRM_SPEND: "5", UPSTREAM_TIMEOUT_MS: "1500" });
    expect(c).toMatchObject({ transport: "http", port: 8080, readOnly: true, sandbox: true, confirmSpend: 5, upstreamTimeoutMs: 1500 });
    expect(c.pollIntervalMs).toBe(1000); // sandbox default
  });

  it.each([
    [["--transport", "carrier-pigeon"], {}, /--transport must be stdio or http/],
    [["--port", "70000"], {}, /port/],
    [["--toolsets", "build,rockets"], {}, /--toolsets takes/],
    [[], { BUILD_POLL_INTERVAL_MS: "soon" }, /BUILD_POLL_INTERVAL_MS must be a number/],
    [[], { BUILD_CONFIRM_SPEND: "sometimes" }, /BUILD_CONFIRM_SPEND must be always, never, or a credit amount/],
    [[], { LOG_LEVEL: "loud" }, /LOG_LEVEL must be/],
    [[], { BUILD_API_BASE_URL: "ftp://x" }, /http/],
    [["--bogus"], {}, /Unknown option/],
    [["--transport", "http", "--host", "0.0.0.0"], {}, /without MCP_HTTP_TOKEN/],
  ])("rejects %j %j with a one-line message", (argv, env, message) => {
    let error: unknown;
    try {
      parseCommand(argv as string[], env as Record<string, string>);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(message);
    expect((error as Error).message).not.toContain("\n");
  });

  it("allows a non-loopback bind when a token is set", () => {
    expect(serve(["--transport", "http", "--host", "0.0.0.0"], { MCP_HTTP_TOKEN: "t0ken-value" }).host).toBe("0.0.0.0");
  });

  it("parses the sandbox command", () => {
    expect(parseCommand(["sandbox", "--port", "4555"], {})).toMatchObject({ kind: "sandbox", port: 4555 });
    expect(parseCommand(["--version"], {})).toEqual({ kind: "version" });
  });
});
