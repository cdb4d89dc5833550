#!/usr/bin/env node
// The race a draining replica's close of its idle keep-alive connections runs (docs/deployment.md,
// "SIGTERM: drain, then exit"): N kept-alive connections, each answered once, as a balancer caches
// them; SIGTERM; then each sends one more POST at a time spread over `--span` ms around `--at` ms
// after the signal, unless it saw the connection close first (as nginx drops a cached connection
// it saw closed). "lost": sent, then closed without an answer, what nginx turns into a 502.
//
//   npm run build && node scripts/drain-race.mjs [--cli dist/cli.js] [--at 2000] [--idle-ms 2000]
//
// --idle-ms sets MCP_DRAIN_IDLE_MS: at 2000 the replica closes the connections itself at --at, as
// before the fix at 2 s (with --cli of that build, --idle-ms is ignored): most POSTs sent then are
// lost. With the default (6000) every one is answered: the balancer, below it, closes first.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";

const { values: o } = parseArgs({
  options: {
    cli: { type: "string", default: "dist/cli.js" },
    at: { type: "string", default: "2000" },
    span: { type: "string", default: "100" },
    "idle-ms": { type: "string" },
    connections: { type: "string", default: "300" },
  },
});
const stateDir = mkdtempSync(join(tmpdir(), "drain-race-"));
const env = { PATH: process.env.PATH, MCP_STATE_DIR: stateDir };
if (o["idle-ms"]) env.MCP_DRAIN_IDLE_MS = o["idle-ms"];
const child = spawn(process.execPath, [o.cli, "--transport", "http", "--port", "0"], {
  env,
  stdio: ["ignore", "ignore", "pipe"],
});
let stderr = "";
const port = await new Promise((resolve, reject) => {
  child.once("exit", (code) => reject(new Error(`the server exited (${code}): ${stderr}`)));
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
    const m = /ready on http:\/\/[^\s"]+:(\d+)\/mcp/.exec(stderr);
    if (m) resolve(Number(m[1]));
  });
});
const meta = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientInfo": { name: "drain-race", version: "1" },
  "io.modelcontextprotocol/clientCapabilities": {},
};
const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: { _meta: meta } });
const post =
  `POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\n` +
  "accept: application/json, text/event-stream\r\nmcp-protocol-version: 2026-07-28\r\n" +
  `mcp-method: tools/list\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
const open = () =>
  new Promise((resolve) => {
    const c = { data: "", seenClosed: false, sent: false };
    c.socket = connect(port, "127.0.0.1", () => c.socket.write(post));
    c.socket.on("data", (chunk) => {
      c.data += chunk;
      if (!c.ready && c.data.endsWith("0\r\n\r\n")) {
        c.ready = true;
        c.data = "";
        resolve(c);
      }
    });
    c.socket.on("end", () => (c.seenClosed = true));
    c.socket.on("close", () => (c.seenClosed = true));
    c.socket.on("error", () => undefined);
  });
const conns = await Promise.all(Array.from({ length: Number(o.connections) }, open));
const exited = new Promise((resolve) => child.once("exit", resolve));
child.kill("SIGTERM");
const t0 = performance.now();
const first = Number(o.at) - Number(o.span) / 2;
await new Promise((r) => setTimeout(r, Math.max(0, first - 20)));
for (let i = 0; i < conns.length; ) {
  const due = first + (i * Number(o.span)) / conns.length;
  if (performance.now() - t0 < due) {
    await new Promise((r) => setImmediate(r)); // lets close events in, as nginx's loop does
    continue;
  }
  const c = conns[i++];
  if (c.seenClosed) continue;
  c.sent = true;
  c.socket.write(post);
}
// Each sent POST ends answered (the connection closes after it) or lost (closed without one).
for (const until = Date.now() + 20_000; Date.now() < until && conns.some((c) => c.sent && !c.seenClosed); )
  await new Promise((r) => setTimeout(r, 50));
const sent = conns.filter((c) => c.sent);
const answered = sent.filter((c) => /^HTTP\/1\.1 200/.test(c.data)).length;
for (const c of conns) c.socket.destroy();
const code = await exited;
rmSync(stateDir, { recursive: true, force: true });
const result = { cli: o.cli, at: Number(o.at), idleMs: o["idle-ms"] ?? "default", sent: sent.length };
console.log(
  JSON.stringify({
    ...result,
    answered,
    lost: sent.length - answered,
    skipped: conns.length - sent.length,
    exit: code,
  }),
);
