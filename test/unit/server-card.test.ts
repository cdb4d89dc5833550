// The server card (src/server-card.ts) must pass the Server Card extension's published schema
// (vendored in scripts/server-card/, pinned by its hash) in every way the server is run, and say
// what server.json and the first answer say: name, version, protocol revisions.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { SUPPORTED_PROTOCOL_VERSIONS } from "@modelcontextprotocol/server";
import { describe, expect, it } from "vitest";
import { allServicesConfig } from "../../scripts/manifest.js";
import { credentialHeader, type Config } from "../../src/config.js";
import { AUTHORIZATION_META, SERVER_CARD_SCHEMA, serverCard } from "../../src/server-card.js";
import { SERVICES } from "../../src/services/registry.js";
import { cardProblems, SERVER_CARD_SCHEMA_PATH } from "../server-card.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const schemaBytes = readFileSync(SERVER_CARD_SCHEMA_PATH);
/** sha256 of schema.json at experimental-ext-server-card@8924e08 (scripts/server-card/README.md). */
const SCHEMA_SHA256 = "2c772b51edb367f154771d84ddbae87ddba00a624422c8e46f218a9ac03bf042";
const serverJson = JSON.parse(readFileSync(join(ROOT, "server.json"), "utf8")) as Record<string, any>;

const ENDPOINT = "https://mcp.example.com/mcp";
const run = (over: Partial<Config>): Config => ({ ...allServicesConfig(), transport: "http", ...over });

describe("the server card (SEP-2127)", () => {
  it("the vendored schema is the extension's published one", () => {
    expect(createHash("sha256").update(schemaBytes).digest("hex")).toBe(SCHEMA_SHA256);
  });

  it("passes the schema however the server runs: open, with a token, per-caller keys, OAuth", () => {
    const configs: Array<Partial<Config>> = [
      {},
      { auth: "token", httpToken: "t".repeat(32) } as Partial<Config>,
      { credentials: "caller" },
      {
        auth: "oauth",
        credentials: "linked",
        publicUrl: ENDPOINT,
        authIssuers: ["https://login.example.com/realms/acme"],
      },
    ];
    for (const over of configs) expect(cardProblems(serverCard(run(over), SERVICES, ENDPOINT))).toEqual([]);
  });

  it("says what server.json and the first answer say", () => {
    const card = serverCard(run({}), SERVICES, ENDPOINT) as Record<string, any>;
    expect(card.$schema).toBe(SERVER_CARD_SCHEMA);
    for (const field of ["name", "title", "description", "version", "repository"])
      expect(card[field], field).toEqual(serverJson[field]);
    expect(card.remotes).toEqual([
      {
        type: "streamable-http",
        url: ENDPOINT,
        supportedProtocolVersions: [...SUPPORTED_PROTOCOL_VERSIONS, "2026-07-28"],
      },
    ]);
    expect(card._meta).toBeUndefined();
  });

  it("states what a caller must send: the token, their keys, or OAuth with the metadata URL", () => {
    const token = serverCard(run({ auth: "token" }), SERVICES, ENDPOINT) as Record<string, any>;
    expect(token.remotes[0].headers).toEqual([
      expect.objectContaining({ name: "Authorization", isRequired: true, isSecret: true, value: "Bearer {token}" }),
    ]);
    const caller = serverCard(run({ credentials: "caller" }), SERVICES, ENDPOINT) as Record<string, any>;
    const headers = caller.remotes[0].headers.map((h: { name: string }) => h.name);
    expect(headers.slice(0, 3)).toEqual(["x-build-api-key", "x-sizing-api-key", "x-drones-api-key"]);
    expect(headers).toEqual(SERVICES.map((s) => credentialHeader(s.name)));
    const oauth = serverCard(
      run({ auth: "oauth", publicUrl: ENDPOINT, authIssuers: ["https://login.example.com/realms/acme"] }),
      SERVICES,
      ENDPOINT,
    ) as Record<string, any>;
    expect(oauth._meta[AUTHORIZATION_META]).toEqual({
      type: "oauth2",
      required: true,
      protectedResourceMetadata: "https://mcp.example.com/.well-known/oauth-protected-resource/mcp",
      authorizationServers: ["https://login.example.com/realms/acme"],
    });
  });

  it("the schema check has teeth: a bad name, a long description, a remote without a URL are refused", () => {
    const broken = serverCard(run({}), SERVICES, ENDPOINT) as Record<string, any>;
    broken.name = "no-slash";
    broken.description = "x".repeat(101);
    delete broken.remotes[0].url;
    const found = cardProblems(broken).join("\n");
    expect(found).toMatch(/\/name must match pattern/);
    expect(found).toMatch(/\/description must NOT have more than 100 characters/);
    expect(found).toMatch(/\/remotes\/0 must have required property 'url'/);
  });
});
