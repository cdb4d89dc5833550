#!/usr/bin/env node
// The smallest useful MCP server on the same SDK as switchboard-mcp (v2): one tool, stdio, both
// protocol eras, loaded from node_modules (not bundled). The cold-start row "minimal SDK server"
// is the price of the SDK itself; switchboard-mcp's own start-up cost is what it adds on top.
import { McpServer } from "@modelcontextprotocol/server";
import { serveStdio } from "@modelcontextprotocol/server/stdio";
import { z } from "zod";

serveStdio(() => {
  const server = new McpServer({ name: "bench-minimal", version: "1.0.0" });
  server.registerTool(
    "echo",
    { title: "Echo", description: "Returns its input.", inputSchema: z.object({ text: z.string() }) },
    async ({ text }) => ({
      content: [{ type: "text", text }],
    }),
  );
  return server;
});
