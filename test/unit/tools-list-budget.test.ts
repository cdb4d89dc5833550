// The token budget of the default tools/list answer (bench row 2: ≤ 6,000 o200k tokens for the whole
// answer, ≤ 4,000 for what a host forwards to the model), counted as the bench counts it: the answer's
// JSON as the server sent it, with the same tokenizer. In-process, definitions only: no upstream, no child.
import { Client } from "@modelcontextprotocol/client";
import { InMemoryTransport } from "@modelcontextprotocol/server";
import { countTokens } from "gpt-tokenizer/encoding/o200k_base";
import { describe, expect, it } from "vitest";
import { allServicesConfig } from "../../scripts/manifest.js";
import { createMcpServer } from "../../src/core/mcp/server.js";
import { createApp } from "../../src/server.js";
import { loadServices, SERVICES } from "../../src/services/registry.js";

const WHOLE_ANSWER_BUDGET = 6000;
const MODEL_PART_BUDGET = 4000;

/** Every tools/list page exactly as the server sent it, for the default toolsets (no --toolsets). */
async function defaultToolsListPages(): Promise<Array<{ tools: Array<Record<string, unknown>> }>> {
  const app = createApp({ ...allServicesConfig(), toolsets: undefined }, undefined, await loadServices(SERVICES));
  const server = createMcpServer(app.runtime, "legacy");
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: "budget", version: "1" });
  await client.connect(clientSide);
  const pages: Array<{ tools: Array<Record<string, unknown>> }> = [];
  const onmessage = clientSide.onmessage;
  clientSide.onmessage = (message, extra) => {
    const result = (message as { result?: { tools?: unknown } }).result;
    if (result?.tools) pages.push(result as (typeof pages)[number]);
    onmessage?.(message, extra);
  };
  let cursor: string | undefined;
  do cursor = (await client.listTools(cursor ? { cursor } : undefined)).nextCursor;
  while (cursor);
  await client.close();
  await app.close();
  return pages;
}

describe("the default tools/list answer's token budget (o200k, as bench/context-cost.mjs counts)", () => {
  it(`stays within ${WHOLE_ANSWER_BUDGET} tokens whole and ${MODEL_PART_BUDGET} for the model's part`, async () => {
    const pages = await defaultToolsListPages();
    const tools = pages.flatMap((p) => p.tools);
    // Not vacuous: the default toolsets of all three services are listed.
    expect(tools.map((t) => String(t.name).split("_")[0])).toEqual(
      expect.arrayContaining(["build", "sizing", "drones"]),
    );
    expect(tools.length).toBeGreaterThan(20);
    const whole = pages.reduce((sum, page) => sum + countTokens(JSON.stringify(page)), 0);
    const model = tools.reduce(
      (sum, t) =>
        sum + countTokens(JSON.stringify({ name: t.name, description: t.description, inputSchema: t.inputSchema })),
      0,
    );
    expect(whole, "the whole default tools/list answer (o200k tokens)").toBeLessThanOrEqual(WHOLE_ANSWER_BUDGET);
    expect(model, "name + description + input schema (o200k tokens)").toBeLessThanOrEqual(MODEL_PART_BUDGET);
  });
});
