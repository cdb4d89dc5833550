// A service is a folder and one registry line: a toy fourth service (test/fixtures/toy-service/src/:
// one read tool, no resources or prompts, and its simulator) joins the registries here exactly as
// one line in src/services/registry.ts and one in src/sandbox/registry.ts would add it, and then
// runs through --sandbox in this suite's era, shows up in every generated file and keeps the
// layering rules, with no other file changed.
import { readFileSync } from "node:fs";
import { relative } from "node:path";
import { fileURLToPath } from "node:url";
import type { Client } from "@modelcontextprotocol/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { configTable, publishedTools, serverJson, smitheryYaml, toolTables } from "../../scripts/manifest.js";
import { helpText, parseCommand } from "../../src/config.js";
import { launch, type Launched } from "../../src/launch.js";
import { SIMULATORS } from "../../src/sandbox/registry.js";
import type { AnySimulator } from "../../src/sandbox/simulator.js";
import { SERVICES } from "../../src/services/registry.js";
import { quotes, quotesSimulator, withToy } from "../fixtures/toy-service/index.js";
import { call, connectHttp, text } from "../harness.js";
import { relativeImports } from "../layering.js";

// The two registry lines.
const services = withToy(SERVICES, quotes);
const simulators = withToy<AnySimulator>(SIMULATORS, quotesSimulator);

/** The render's last line: where the quote came from, from the tenant's deps (its simulator's URL). */
const SOURCE = (id: string) =>
  new RegExp(`^"[^\n]+" \\([^)]+\\)\nSource: http://127\\.0\\.0\\.1:\\d+/\\S*api/quotes/${id}$`);

/** Its toolset is off by default (the default answer's token budget is spent): --toolsets all. */
const SANDBOX_HTTP = ["--sandbox", "--toolsets", "all", "--transport", "http", "--port", "0"];

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const FIXTURE = fileURLToPath(new URL("../fixtures/toy-service/src/", import.meta.url));

describe("a toy service through --sandbox", () => {
  let launched: Launched;
  let client: Client;
  beforeAll(async () => {
    const command = parseCommand(SANDBOX_HTTP, { LOG_LEVEL: "error" }, services);
    if (command.kind !== "serve") throw new Error(`expected serve, got ${command.kind}`);
    launched = await launch(command.config, { services, simulators });
    client = await connectHttp(launched.url!);
  });
  afterAll(async () => {
    await client?.close();
    await launched?.shutdown();
  });

  it("lists its tool among the others and says what it is for", async () => {
    const { tools } = await client.listTools();
    const tool = tools.find((t) => t.name === "quotes_get_quote");
    expect(tool).toMatchObject({ title: "Get a quote", annotations: { readOnlyHint: true } });
    expect(tools.some((t) => t.name === "drones_list_drones")).toBe(true);
    expect(client.getInstructions()).toContain("quotes_get_quote returns one quotation by id");
  });

  it("answers from its simulator, with the key --sandbox gave it", async () => {
    const result = await call(client, "quotes_get_quote", { id: "brevity" });
    expect(result.isError, text(result)).toBeFalsy();
    const quote = { id: "brevity", text: "Brevity is the soul of wit.", author: "William Shakespeare" };
    expect(result.structuredContent).toEqual(quote);
    // The summary's last line comes from the tenant's deps (read in render: ctx.deps).
    expect(text(result)).toMatch(SOURCE("brevity"));
    expect(text(result).split("\n")[0]).toBe('"Brevity is the soul of wit." (William Shakespeare)');
  });

  it("turns its upstream's error into the next step its hints declare", async () => {
    const result = await call(client, "quotes_get_quote", { id: "wit" });
    expect(result.isError).toBe(true);
    expect(text(result)).toContain("No quote wit");
    expect(text(result)).toContain("try brevity or patience");
  });

  it("declares no resources or prompts, and the others' are still served", async () => {
    const { resources } = await client.listResources();
    const { resourceTemplates } = await client.listResourceTemplates();
    const uris = [...resources.map((r) => r.uri), ...resourceTemplates.map((t) => t.uriTemplate)];
    expect(uris.some((u) => u.startsWith("drones://"))).toBe(true);
    expect(uris.some((u) => u.startsWith("quotes://"))).toBe(false);
    expect((await client.listPrompts()).prompts.length).toBeGreaterThan(0);
  });
});

// Per-user keys run the same tool code as one account: every hook gets the calling tenant's deps
// (ctx.deps), render included. With an ambient per-tenant scope around run alone, the render's
// read failed here only, after the upstream call was made.
describe("a toy service with per-user keys (MCP_CREDENTIALS=caller)", () => {
  let launched: Launched;
  const clients: Client[] = [];
  beforeAll(async () => {
    const command = parseCommand(SANDBOX_HTTP, { LOG_LEVEL: "error", MCP_CREDENTIALS: "caller" }, services);
    if (command.kind !== "serve") throw new Error(`expected serve, got ${command.kind}`);
    launched = await launch(command.config, { services, simulators });
  });
  afterAll(async () => {
    await Promise.allSettled(clients.map((c) => c.close()));
    await launched?.shutdown();
  });

  it("renders with the caller's own deps, and a caller without the key is told which header to send", async () => {
    const withKey = await connectHttp(launched.url!, { "x-quotes-api-key": quotesSimulator.demoKey });
    const withoutKey = await connectHttp(launched.url!, {});
    clients.push(withKey, withoutKey);
    const result = await call(withKey, "quotes_get_quote", { id: "patience" });
    expect(result.isError, text(result)).toBeFalsy();
    expect(text(result)).toMatch(SOURCE("patience"));
    const refused = await call(withoutKey, "quotes_get_quote", { id: "patience" });
    expect(refused.isError).toBe(true);
    expect(text(refused)).toContain("Send yours in the x-quotes-api-key header");
  });
});

describe("a toy service in what the registry generates", () => {
  it("--help lists its variables, its toolset and its per-user header", () => {
    const help = helpText(services);
    expect(help).toContain("QUOTES_API_BASE_URL");
    expect(help).toMatch(/^ {4}quotes +one quotation by id$/m);
    expect(help).toContain("X-Quotes-Api-Key");
  });

  it("smithery.yaml, server.json and the README's tables pick it up", async () => {
    expect(smitheryYaml(services)).toContain("quotesApiKey:");
    expect(configTable(services)).toContain("| `QUOTES_API_KEY` | API key of the quotation API");
    const existing = JSON.parse(readFileSync(`${ROOT}/server.json`, "utf8")) as Record<string, any>;
    expect(serverJson(existing, services)).toContain('"name": "QUOTES_API_KEY"');
    const { listed, defs } = await publishedTools(services);
    expect(listed.map((t) => t.name)).toContain("quotes_get_quote");
    const row = "| `quotes_get_quote` | One quotation by id, with its author. | GET /api/quotes/:id |";
    expect(toolTables(defs, services)).toContain(row);
  });
});

describe("a toy service keeps the layering rules", () => {
  // Paths inside the fixture's src/, which stands for the repository's (its core is a link to it).
  const importsOf = (file: string) => relativeImports(`${FIXTURE}${file}`).map((i) => relative(FIXTURE, i));

  it("the service imports only the core and itself", () => {
    const imports = ["services/quotes/index.ts", "services/quotes/implementation.ts"].flatMap(importsOf);
    expect(imports.length).toBeGreaterThan(0);
    expect(imports.filter((i) => !i.startsWith("core/") && !i.startsWith("services/quotes/"))).toEqual([]);
  });

  it("the simulator imports only the sandbox's router and declaration, and itself", () => {
    const imports = ["sandbox/simulators/quotes/declaration.ts", "sandbox/simulators/quotes/index.ts"].flatMap(
      importsOf,
    );
    const foreign = imports.filter(
      (i) => !["sandbox/router.ts", "sandbox/simulator.ts"].includes(i) && !i.startsWith("sandbox/simulators/quotes/"),
    );
    expect(imports.length).toBeGreaterThan(0);
    expect(foreign).toEqual([]);
  });
});
