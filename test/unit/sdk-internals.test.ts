// The SDK's private members this server relies on (src/core/mcp/sdk-internals.ts), each driven
// through a real McpServer and client here, so an SDK upgrade that renames or reshapes one fails
// `npm test` instead of a user's first task. docs/architecture.md ("The SDK at arm's length")
// proposes the public hook that would remove each.
import { Client } from "@modelcontextprotocol/client";
import {
  InMemoryTransport,
  inputRequired,
  inputResponse,
  McpServer,
  type ServerContext,
} from "@modelcontextprotocol/server";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { withInputRequired, wrapEveryRequestHandler, wrapRequestHandler } from "../../src/core/mcp/sdk-internals.js";

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

type Handler = (tool: string, input: Record<string, unknown>, ctx: ServerContext) => Promise<any>;

/** A server with one tool "echo" whose handler is `handle`, and a 2025 client able to answer elicitations. */
async function pair(handle: Handler, setup: (server: McpServer) => void = () => undefined) {
  const server = new McpServer({ name: "sdk-shape", version: "1" }, { capabilities: { logging: {} } });
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

  it("_invokeInputRequiredCapableHandler: an input_required answer becomes a question to the client, then the call goes on", async () => {
    const asks: unknown[] = [];
    const confirmFirst: Handler = async (_tool, input, ctx) => {
      const answer = inputResponse(ctx.mcpReq.inputResponses, "confirm");
      if (answer.kind !== "elicit") {
        asks.push(input.text);
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
    // The task path calls a handler of its own through the seam, outside the SDK's tools/call.
    const { client } = await pair(echo, (server) =>
      wrapRequestHandler(
        server,
        "tools/call",
        () => (request, ctx) =>
          withInputRequired(
            server,
            (req: any, c: ServerContext) => confirmFirst("echo", req.params.arguments, c),
            request,
            ctx,
          ),
      ),
    );
    const result = await client.callTool({ name: "echo", arguments: { text: "spend" } });
    expect(asks).toEqual(["spend"]);
    expect(result.structuredContent).toEqual({ text: "spend (true)" });
  });
});
