// Every coupling of our code to the SDK's internals or unwritten behaviour, one or more named tests
// each: the private members (src/core/mcp/sdk-internals.ts), the methods registerQuietly swaps, and
// the entry's checks and per-request transport that core/http/modern.ts reproduces. Each is driven
// through a real McpServer, client or createMcpHandler, so an SDK upgrade that changes one fails a
// test named after it instead of a user's first task. docs/architecture.md ("The SDK at arm's
// length") lists them and the public hook that would remove each.
import type { IncomingMessage } from "node:http";
import { Client } from "@modelcontextprotocol/client";
import {
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  createMcpHandler,
  isLegacyRequest,
  PROTOCOL_VERSION_META_KEY,
  InMemoryTransport,
  inputRequired,
  inputResponse,
  McpServer,
  ResourceTemplate,
  type jsonSchemaValidator,
  type ServerCapabilities,
  type ServerContext,
  type StandardSchemaWithJSON,
} from "@modelcontextprotocol/server";
import { afterEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import {
  prepareCompletions,
  registerQuietly,
  withInputRequired,
  wrapEveryRequestHandler,
  wrapRequestHandler,
} from "../../src/core/mcp/sdk-internals.js";
import { classifyPost, leanRequest, serveLean } from "../../src/core/http/modern.js";
import { MODERN_REVISION } from "../../src/core/mcp/era.js";
import { ajvFormValidator } from "../../src/core/mcp/form-validator.js";
import { newMcpServer, serverCapabilities, type ServerShell } from "../../src/core/mcp/shell.js";

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

type Handler = (tool: string, input: Record<string, unknown>, ctx: ServerContext) => Promise<any>;

/** A server with one tool "echo" whose handler is `handle`, and a 2025 client able to answer elicitations. */
async function pair(
  handle: Handler,
  setup: (server: McpServer) => void = () => undefined,
  capabilities: ServerCapabilities = { logging: {} },
  server = new McpServer({ name: "sdk-shape", version: "1" }, { capabilities }),
) {
  server.registerTool(
    "echo",
    { description: "echo", inputSchema: z.object({ text: z.string() }), outputSchema: z.object({ text: z.string() }) },
    ((input: Record<string, unknown>, ctx: ServerContext) => handle("echo", input, ctx)) as never,
  );
  setup(server);
  const client = new Client({ name: "sdk-shape", version: "1" }, { capabilities: { elicitation: { form: {} } } });
  client.setRequestHandler("elicitation/create", async () => ({ action: "accept", content: { confirm: true } }));
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  await client.connect(clientSide);
  closers.push(
    () => client.close(),
    () => server.close(),
  );
  return { server, client };
}

const echo: Handler = async (_tool, input) => ({
  content: [{ type: "text", text: String(input.text) }],
  structuredContent: { text: input.text },
});

/** A tool that asks the client to confirm (input_required), then echoes with the answer. */
const confirmFirst: Handler = async (_tool, input, ctx) => {
  const answer = inputResponse(ctx.mcpReq.inputResponses, "confirm");
  if (answer.kind !== "elicit") {
    return inputRequired({
      inputRequests: {
        confirm: inputRequired.elicit({
          message: "Go on?",
          requestedSchema: { type: "object", properties: { confirm: { type: "boolean" } }, required: ["confirm"] },
        }),
      },
    });
  }
  return echo("echo", { text: `${input.text} (${(answer.content as { confirm?: boolean }).confirm})` }, ctx);
};

/** The shell the instances built here share (server.ts builds its own the same way). */
const SHAPE_SHELL: ServerShell = {
  info: { name: "sdk-shape", version: "1", title: "sdk-shape" },
  instructions: "",
  tasks: false,
  completions: false,
  verifyRequestState: () => undefined,
  formValidator: ajvFormValidator,
};

describe("the SDK members sdk-internals.ts reaches", () => {
  it("_requestHandlers: a wrap of tools/call runs around the SDK's own handler", async () => {
    const seen: string[] = [];
    const { client } = await pair(echo, (server) =>
      wrapRequestHandler(server, "tools/call", (original) => async (request, ctx) => {
        seen.push(request.params.name);
        return original(request, ctx);
      }),
    );
    const result = await client.callTool({ name: "echo", arguments: { text: "hi" } });
    expect(result.structuredContent).toEqual({ text: "hi" });
    expect(seen).toEqual(["echo"]);
  });

  it("_requestHandlers: a method the SDK does not handle is named in the error", async () => {
    const { server } = await pair(echo);
    expect(() => wrapRequestHandler(server, "no/such", (o) => o)).toThrow(/no no\/such handler to wrap/);
  });

  it("_requestHandlers: every handler can be wrapped (tools/list, logging/setLevel, ping)", async () => {
    const methods: string[] = [];
    const { client } = await pair(echo, (server) =>
      wrapEveryRequestHandler(server, (original) => async (request, ctx) => {
        methods.push(request.method);
        return original(request, ctx);
      }),
    );
    await client.listTools();
    await client.setLoggingLevel("warning");
    await client.ping();
    expect(methods).toEqual(expect.arrayContaining(["tools/list", "logging/setLevel", "ping"]));
  });

  it(
    "_invokeInputRequiredCapableHandler: an input_required answer " +
      "becomes a question to the client, then the call goes on",
    async () => {
      const rounds: unknown[] = [];
      // The task path calls a handler of its own through the seam, outside the SDK's tools/call.
      const { client } = await pair(echo, (server) =>
        wrapRequestHandler(
          server,
          "tools/call",
          () => (request, ctx) =>
            withInputRequired(
              server,
              (req: any, c: ServerContext) => {
                rounds.push(c.mcpReq.inputResponses ? "answered" : "asked");
                return confirmFirst("echo", req.params.arguments, c);
              },
              request,
              ctx,
            ),
        ),
      );
      const result = await client.callTool({ name: "echo", arguments: { text: "spend" } });
      expect(rounds).toEqual(["asked", "answered"]);
      expect(result.structuredContent).toEqual({ text: "spend (true)" });
    },
  );
});

// A stdio start connects an instance before its tools load (core/stdio/serve.ts): registrations come
// after connect, on an instance whose capabilities (shell.ts) were declared at construction.
describe("McpServer members stdio's late registration swaps or calls (registerQuietly, prepareCompletions)", () => {
  const declared = serverCapabilities({ tasks: false, completions: true }, "legacy");
  const LIST_CHANGED = ["sendToolListChanged", "sendResourceListChanged", "sendPromptListChanged"] as const;

  it("registerQuietly: the three list-changed senders are McpServer methods of no argument", () => {
    for (const m of LIST_CHANGED) {
      expect({ m, type: typeof McpServer.prototype[m] }).toEqual({ m, type: "function" });
      expect({ m, arity: McpServer.prototype[m].length }).toEqual({ m, arity: 0 });
    }
  });

  it(
    "registerQuietly: register* on a connected instance announces " + "through them, so swapping them is silent",
    async () => {
      const { server, client } = await pair(echo, undefined, declared);
      const changed: string[] = [];
      for (const kind of ["tools", "resources", "prompts"] as const)
        client.setNotificationHandler(`notifications/${kind}/list_changed`, () => void changed.push(kind));
      const registerAll = (suffix: string) => {
        server.registerTool(`t${suffix}`, { description: "t", inputSchema: z.object({}) }, async () => ({
          content: [],
        }));
        server.registerResource(`r${suffix}`, `test://r${suffix}`, {}, async () => ({ contents: [] }));
        server.registerPrompt(`p${suffix}`, { description: "p" }, async () => ({ messages: [] }));
      };
      registerQuietly(server, () => registerAll("quiet"));
      // The in-memory pair delivers in order: a notification sent before the ping's answer is seen first.
      await client.ping();
      expect(changed).toEqual([]);
      registerAll("loud");
      await client.ping();
      expect(changed.sort()).toEqual(["prompts", "resources", "tools"]);
      expect(LIST_CHANGED.filter((m) => Object.hasOwn(server, m))).toEqual([]);
    },
  );

  it("prepareCompletions: setCompletionRequestHandler is a private McpServer method of no argument", () => {
    const proto = McpServer.prototype as unknown as { setCompletionRequestHandler?: unknown };
    expect(typeof proto.setCompletionRequestHandler).toBe("function");
    expect((proto.setCompletionRequestHandler as () => void).length).toBe(0);
  });

  it(
    "prepareCompletions: without it a completing template cannot " + "register once connected; with it, it completes",
    async () => {
      const template = (server: McpServer) =>
        server.registerResource(
          "item",
          new ResourceTemplate("test://item/{id}", { list: undefined, complete: { id: async () => ["a1", "a2"] } }),
          {},
          async (uri) => ({ contents: [{ uri: uri.href, text: "x" }] }),
        );
      const bare = await pair(echo, undefined, declared);
      expect(() => registerQuietly(bare.server, () => template(bare.server))).toThrow();

      const { server, client } = await pair(echo, (s) => prepareCompletions(s), declared);
      registerQuietly(server, () => template(server));
      expect(client.getServerCapabilities()?.completions).toEqual({});
      const ref = { type: "ref/resource" as const, uri: "test://item/{id}" };
      const done = await client.complete({ ref, argument: { name: "id", value: "a" } });
      expect(done.completion.values).toEqual(["a1", "a2"]);
    },
  );
});

// core/http/modern.ts re-implements the checks createMcpHandler makes before it dispatches (leanRequest)
// and serves through a subclass of the SDK's per-request transport (ExchangeTransport in serveLean).
// Each test holds the entry itself, in process, to what modern.ts assumes of it.
describe("the SDK entry's checks and per-request transport, as core/http/modern.ts reproduces them", () => {
  const shell = SHAPE_SHELL;
  /** A 2026-07-28 instance as server.ts builds one: "echo", "chatty" (a log line first), "headered" (Mcp-Param). */
  const modernServer = () => {
    const server = newMcpServer(shell, "modern");
    const text = z.object({ text: z.string() });
    server.registerTool("echo", { description: "e", inputSchema: text }, async (input) => ({
      content: [{ type: "text", text: input.text }],
    }));
    server.registerTool("chatty", { description: "c", inputSchema: text }, async (input, ctx) => {
      await ctx.mcpReq.notify({ method: "notifications/message", params: { level: "info", data: "working" } });
      return { content: [{ type: "text", text: input.text }] };
    });
    const region = z.object({ region: z.string().meta({ "x-mcp-header": "Region" }) });
    server.registerTool("headered", { description: "h", inputSchema: region }, async () => ({ content: [] }));
    return server;
  };

  interface Post {
    headers: Record<string, string>;
    body: { jsonrpc: "2.0"; id: number; method: string; params: Record<string, unknown> };
  }
  const post = (
    method: string,
    params: Record<string, unknown>,
    headers: Record<string, string | undefined> = {},
    meta: Record<string, unknown> = {},
  ): Post => {
    const name = params.name ?? params.taskId;
    const wanted: Record<string, string | undefined> = {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": MODERN_REVISION,
      "mcp-method": method,
      ...(name !== undefined ? { "mcp-name": String(name) } : {}),
      ...headers,
    };
    const _meta = {
      [PROTOCOL_VERSION_META_KEY]: MODERN_REVISION,
      [CLIENT_INFO_META_KEY]: { name: "sdk-shape", version: "1" },
      [CLIENT_CAPABILITIES_META_KEY]: {},
      ...meta,
    };
    const defined = Object.entries(wanted).filter((e): e is [string, string] => e[1] !== undefined);
    return {
      headers: Object.fromEntries(defined),
      body: { jsonrpc: "2.0", id: 7, method, params: { ...params, _meta } },
    };
  };
  const nodeRequest = (p: Post) => ({ headers: p.headers }) as unknown as IncomingMessage;
  const webRequest = (p: Post) =>
    new Request("http://127.0.0.1/mcp", { method: "POST", headers: p.headers, body: JSON.stringify(p.body) });
  const lean = (p: Post) => leanRequest(nodeRequest(p), classifyPost(nodeRequest(p), p.body), (n) => n !== "headered");

  /** The entry's answer to `p`, and whether it got as far as its factory (past every check before dispatch). */
  async function entry(p: Post) {
    let made = 0;
    const handler = createMcpHandler(
      () => {
        made++;
        return modernServer();
      },
      { legacy: "reject" },
    );
    try {
      const res = await handler.fetch(webRequest(p));
      const text = await res.text();
      const json = res.headers.get("content-type")?.includes("json") ? JSON.parse(text) : undefined;
      return { status: res.status, code: json?.error?.code as number | undefined, made, text };
    } finally {
      await handler.close();
    }
  }

  const call = { name: "echo", arguments: { text: "hi" } };
  const get = { taskId: "t-1" };

  /** Each request is declined by leanRequest and refused by the entry with its status and code, before its factory. */
  async function expectRefusedBeforeFactory(cases: Array<[string, Post, number, number]>) {
    for (const [what, p, status, code] of cases) {
      expect({ what, lean: lean(p) }).toEqual({ what, lean: undefined });
      const answer = await entry(p);
      expect({ what, status: answer.status, code: answer.code, made: answer.made }).toEqual({
        what,
        status,
        code,
        made: 0,
      });
    }
  }

  it(
    "leanRequest: what it declines, the entry refuses before its " + "factory; what it takes, the entry dispatches",
    async () => {
      const declined: Array<[string, Post, number, number]> = [
        ["Content-Type not JSON", post("tools/call", call, { "content-type": "text/plain" }), 415, -32000],
        ["no MCP-Protocol-Version", post("tools/call", call, { "mcp-protocol-version": undefined }), 400, -32020],
        ["no Mcp-Method", post("tasks/get", get, { "mcp-method": undefined }), 400, -32020],
        ["Mcp-Method not the body's", post("tools/call", call, { "mcp-method": "tools/list" }), 400, -32020],
        ["no Mcp-Name", post("tools/call", call, { "mcp-name": undefined }), 400, -32020],
        ["Mcp-Name not the body's", post("tools/call", call, { "mcp-name": "other" }), 400, -32020],
        ["Mcp-Name not the taskId", post("tasks/cancel", get, { "mcp-name": "t-2" }), 400, -32020],
        ["Mcp-Name bad Base64", post("tools/call", call, { "mcp-name": "=?base64?%%%?=" }), 400, -32020],
        [
          "revision not served",
          post(
            "tools/call",
            call,
            { "mcp-protocol-version": "2099-01-01" },
            { [PROTOCOL_VERSION_META_KEY]: "2099-01-01" },
          ),
          400,
          -32022,
        ],
      ];
      await expectRefusedBeforeFactory(declined);
      // Taken: the methods served lean need no client capability, and Mcp-Name is compared trimmed.
      const taken: Array<[string, Post]> = [
        ["tools/call", post("tools/call", call)],
        ["Mcp-Name padded", post("tools/call", call, { "mcp-name": " \techo\t " })],
        ["tasks/get", post("tasks/get", get)],
        ["tasks/update", post("tasks/update", get)],
        ["tasks/cancel", post("tasks/cancel", get)],
      ];
      for (const [what, p] of taken) {
        expect({ what, lean: lean(p) !== undefined }).toEqual({ what, lean: true });
        expect({ what, made: (await entry(p)).made }).toEqual({ what, made: 1 });
      }
    },
  );

  it(
    "leanRequest: a request failing several checks is answered by " + "the first in the order modern.ts gives",
    async () => {
      // Content-Type before the classifier; the classifier's header/body cross-check before the revision gate;
      // the revision gate before header presence; header presence before the factory.
      const cases: Array<[string, Post, number, number]> = [
        [
          "text/plain + wrong Mcp-Method",
          post("tools/call", call, { "content-type": "text/plain", "mcp-method": "x/y" }),
          415,
          -32000,
        ],
        [
          "wrong Mcp-Method + unserved revision",
          post("tools/call", call, { "mcp-method": "tools/list" }, { [PROTOCOL_VERSION_META_KEY]: "2099-01-01" }),
          400,
          -32020,
        ],
        [
          "unserved revision + no Mcp-Name",
          post(
            "tools/call",
            call,
            { "mcp-protocol-version": "2099-01-01", "mcp-name": undefined },
            {
              [PROTOCOL_VERSION_META_KEY]: "2099-01-01",
            },
          ),
          400,
          -32022,
        ],
      ];
      await expectRefusedBeforeFactory(cases);
    },
  );

  it(
    "plainToolsOf: the entry checks Mcp-Param headers of a tool " + "whose schema says x-mcp-header, after its factory",
    async () => {
      const p = post("tools/call", { name: "headered", arguments: { region: "eu" } });
      expect(lean(p)).toBeUndefined();
      const answer = await entry(p);
      expect({ status: answer.status, code: answer.code, made: answer.made }).toEqual({
        status: 400,
        code: -32020,
        made: 1,
      });
      expect(answer.text).toContain("Mcp-Param-Region");
      expect(
        (
          await entry(
            post("tools/call", { name: "headered", arguments: { region: "eu" } }, { "mcp-param-region": "eu" }),
          )
        ).status,
      ).toBe(200);
    },
  );

  it("classifyPost: the SDK's classifier on our parsed body routes as isLegacyRequest does", async () => {
    const legacyBody = { jsonrpc: "2.0", id: 1, method: "tools/list", params: {} };
    const samples: Post[] = [
      post("tools/call", call),
      { headers: { "content-type": "application/json" }, body: legacyBody as Post["body"] },
      post("tools/call", call, { "mcp-protocol-version": "2025-11-25" }),
    ];
    for (const p of samples) {
      const kind = classifyPost(nodeRequest(p), p.body).kind;
      expect({ kind, legacy: kind === "legacy" }).toEqual({ kind, legacy: await isLegacyRequest(webRequest(p)) });
    }
  });

  it("stateless.ts: the entry hands its factory the very Request given to fetch (a TenantRequest)", async () => {
    const request = webRequest(post("tools/call", call));
    let seen: unknown;
    const handler = createMcpHandler(
      ({ requestInfo }) => {
        seen = requestInfo;
        return modernServer();
      },
      { legacy: "reject" },
    );
    expect((await handler.fetch(request)).status).toBe(200);
    await handler.close();
    expect(seen).toBe(request);
  });

  it(
    "serveLean: a result is the entry's JSON answer; a " +
      "notification first leaves the SDK's stream; an instance " +
      "serves again",
    async () => {
      const server = modernServer();
      const transports: unknown[] = [];
      server.server.setNotificationHandler("notifications/cancelled", () => undefined);
      const serve = async (p: Post) => {
        const taken = lean(p);
        if (!taken) throw new Error("not lean");
        const exchange = serveLean(
          server,
          taken,
          () => undefined,
          () => undefined,
        );
        transports.push(server.server.transport);
        return exchange;
      };
      const p = post("tools/call", call);
      const direct = await serve(p);
      expect(direct).not.toBeInstanceOf(Response);
      const viaEntry = await entry(p);
      expect({ status: viaEntry.status, answer: JSON.parse((direct as { json: string }).json) }).toEqual({
        status: 200,
        answer: JSON.parse(viaEntry.text),
      });
      // Closed after the answer (pool.ts gives it back only then), and connectable again with a new transport.
      await vi.waitFor(() => expect(server.isConnected()).toBe(false));
      const streamed = await serve(post("tools/call", { name: "chatty", arguments: { text: "yo" } }));
      expect(streamed).toBeInstanceOf(Response);
      const frames = (await (streamed as Response).text()).split("\n").filter((l) => l.startsWith("data:"));
      expect(frames.map((l) => JSON.parse(l.slice(5)).method ?? "result")).toEqual(["notifications/message", "result"]);
      // holdToExchange (server.ts) tells exchanges apart by the Protocol's current transport.
      expect(transports[0]).toBeDefined();
      expect(transports[1]).not.toBe(transports[0]);
      await vi.waitFor(() => expect(server.server.transport).toBeUndefined());
    },
  );
});

describe("what the SDK does with what we register (registered-schemas.ts, shell.ts)", () => {
  it(
    "registered-schemas: the handler gets the value the Standard " +
      "Schema's validate returns; tools/list its JSON Schema",
    async () => {
      const targets: string[] = [];
      const jsonSchema = { type: "object", properties: { text: { type: "string" } } };
      const input: StandardSchemaWithJSON = {
        "~standard": {
          version: 1,
          vendor: "sdk-shape",
          validate: () => ({ value: { text: "parsed" } }),
          jsonSchema: {
            input: (options) => {
              targets.push(options.target);
              return jsonSchema;
            },
            output: () => jsonSchema,
          },
        },
      };
      const { client } = await pair(echo, (server) =>
        server.registerTool("passed", { description: "p", inputSchema: input }, async (args) => ({
          content: [{ type: "text", text: (args as { text: string }).text }],
        })),
      );
      const result = await client.callTool({ name: "passed", arguments: { text: "sent" } });
      expect(result.content).toEqual([{ type: "text", text: "parsed" }]);
      const { tools } = await client.listTools();
      expect(tools.find((t) => t.name === "passed")?.inputSchema).toMatchObject(jsonSchema);
      expect(targets.length).toBeGreaterThan(0);
    },
  );

  it(
    "shell.ts: an instance checks an elicitInput answer with its shell's formValidator, " + "which no import installs",
    async () => {
      const checked: unknown[] = [];
      const counting: jsonSchemaValidator = {
        getValidator(schema) {
          checked.push(schema);
          return ajvFormValidator.getValidator(schema);
        },
      };
      const shell: ServerShell = { ...SHAPE_SHELL, formValidator: counting };
      const { server, client } = await pair(confirmFirst, undefined, undefined, newMcpServer(shell, "legacy"));
      const requestedSchema = { type: "object" as const, properties: { confirm: { type: "boolean" as const } } };
      const answer = await server.server.elicitInput({ mode: "form", message: "Go on?", requestedSchema });
      expect(answer).toMatchObject({ action: "accept", content: { confirm: true } });
      expect(checked).toEqual([requestedSchema]);
      // The 2025 shim that sends our confirmation form (input_required) passes the answer on unchecked:
      // confirm.ts reads it itself. Should an SDK update start checking it, this count says so.
      const result = await client.callTool({ name: "echo", arguments: { text: "spend" } });
      expect(result.structuredContent).toEqual({ text: "spend (true)" });
      expect(checked).toHaveLength(1);
    },
  );

  it(
    "shell.ts: the SDK asks for the form validator only when it checks an answer, " + "not when built or connected",
    async () => {
      let asked = 0;
      const late = {
        getValidator: () => {
          asked++;
          throw new Error("not yet");
        },
      };
      const server = new McpServer({ name: "sdk-shape", version: "1" }, { jsonSchemaValidator: late as never });
      server.registerTool("t", { description: "t", inputSchema: z.object({}) }, async () => ({ content: [] }));
      const client = new Client({ name: "sdk-shape", version: "1" });
      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
      await server.connect(serverSide);
      await client.connect(clientSide);
      closers.push(
        () => client.close(),
        () => server.close(),
      );
      await client.listTools();
      await client.callTool({ name: "t", arguments: {} });
      expect(asked).toBe(0);
    },
  );
});
