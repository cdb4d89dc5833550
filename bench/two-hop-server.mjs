#!/usr/bin/env node
// The floor for a tool that calls an upstream: the minimal SDK server (bench/minimal-server.mjs)
// with one tool that makes one undici GET and returns the body, nothing else (no validation of
// the answer, no scrubbing, no deadline). Row 3 compares drones_get_drone with it: what
// switchboard-mcp adds over this is its own; the rest is two hops (stdio, then HTTP) in sequence.
import { McpServer } from "@modelcontextprotocol/server";
import { serveStdio } from "@modelcontextprotocol/server/stdio";
import { Pool } from "undici";
import { z } from "zod";

const { UPSTREAM_ORIGIN, UPSTREAM_PREFIX = "", UPSTREAM_KEY } = process.env;
const pool = new Pool(UPSTREAM_ORIGIN, { connections: 4 });
const headers = { authorization: `Bearer ${UPSTREAM_KEY}`, accept: "application/json" };

serveStdio(() => {
  const server = new McpServer({ name: "bench-two-hop", version: "1.0.0" });
  server.registerTool(
    "get",
    { title: "Get a drone", description: "GETs one drone.", inputSchema: z.object({ id: z.string() }) },
    async ({ id }) => {
      const path = `${UPSTREAM_PREFIX}/api/drones/${encodeURIComponent(id)}`;
      const res = await pool.request({ path, method: "GET", headers });
      return { content: [{ type: "text", text: await res.body.text() }] };
    },
  );
  return server;
});
