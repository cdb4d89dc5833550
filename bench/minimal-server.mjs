#!/usr/bin/env node
// The smallest useful MCP server on the same SDK as switchboard-mcp: one tool, stdio, loaded from
// node_modules (not bundled). The cold-start row "minimal SDK server" is the price of the SDK
// itself; switchboard-mcp's own start-up cost is what it adds on top.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const server = new McpServer({ name: "bench-minimal", version: "1.0.0" });
server.registerTool(
  "echo",
  { title: "Echo", description: "Returns its input.", inputSchema: { text: z.string() } },
  async ({ text }) => ({ content: [{ type: "text", text }] }),
);
await server.connect(new StdioServerTransport());
