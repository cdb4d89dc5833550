import { afterAll, describe, expect, it } from "vitest";
import {
  destroyRawSockets,
  MODERN,
  openRaw,
  request2026,
  sleep,
  spawnHttpServer,
  until,
  type RawSocket,
} from "../harness.js";

/**
 * SIGTERM with idle keep-alive connections open, as a balancer holds them (docs/deployment.md,
 * "SIGTERM: drain, then exit"): the replica leaves them to the balancer, which closes each when its
 * own idle timeout passes, and answers a request that still arrives on one. Raw sockets stand in
 * for nginx's cached upstream connections. The server answers both eras alike: one era runs this.
 */
describe.runIf(MODERN)("drain: idle keep-alive connections are the balancer's to close", () => {
  afterAll(() => destroyRawSockets());

  /** A 2026-07-28 tools/list as nginx passes it on: a POST on a kept-alive HTTP/1.1 connection. */
  const post = (port: number) => {
    const { headers, body } = request2026("tools/list");
    const lines = Object.entries({ ...headers, host: `127.0.0.1:${port}`, "content-length": body.length });
    return `POST /mcp HTTP/1.1\r\n${lines.map(([k, v]) => `${k}: ${v}`).join("\r\n")}\r\n\r\n${body}`;
  };
  /** The nth answer on the socket, whole (chunked: ends with the empty chunk), or "" once it closed. */
  const answer = async (raw: RawSocket, nth: number) => {
    const done = () => {
      const answers = raw.data().split(/(?=HTTP\/1\.1 )/);
      return answers.length >= nth && answers[nth - 1].endsWith("0\r\n\r\n") ? answers[nth - 1] : undefined;
    };
    await until(
      async () => done() ?? (raw.closedAt !== undefined ? "" : undefined),
      (a) => a !== undefined,
    );
    return done() ?? "";
  };
  const start = (drainIdleMs: number) =>
    spawnHttpServer({ PATH: process.env.PATH ?? "", MCP_DRAIN_MS: "10000", MCP_DRAIN_IDLE_MS: String(drainIdleMs) });
  const exited = (child: { once(e: "exit", f: (code: number | null) => void): unknown }) =>
    new Promise<number | null>((resolve) => child.once("exit", resolve));

  it("a POST on an idle connection 2.5 s into the drain is answered (connection: close), then it exits", async () => {
    const server = await start(4000);
    const port = Number(new URL(server.url).port);
    const raw = await openRaw(port, post(port));
    expect(await answer(raw, 1)).toMatch(/^HTTP\/1\.1 200 [\s\S]*keep-alive/i);
    const exit = exited(server.child);
    server.child.kill("SIGTERM");
    // Past the 2 s the replica used to keep idle connections (a POST sent then was lost: nginx's 502),
    // inside a balancer's idle timeout below MCP_DRAIN_IDLE_MS.
    await sleep(2500);
    expect(raw.closedAt).toBeUndefined();
    raw.socket.write(post(port));
    const last = await answer(raw, 2);
    expect(last).toMatch(/^HTTP\/1\.1 200 /);
    expect(last).toMatch(/^connection: close\r$/im);
    await raw.closed;
    // No connection left: the drain ends at once, not at MCP_DRAIN_IDLE_MS (4 s after SIGTERM).
    const closedAt = raw.closedAt!;
    expect(await exit).toBe(0);
    expect(performance.now() - closedAt).toBeLessThan(1000);
  });

  it("ends as soon as the balancer closed its idle connections", async () => {
    const server = await start(20_000);
    const port = Number(new URL(server.url).port);
    const raws = await Promise.all([1, 2, 3].map(() => openRaw(port, post(port))));
    for (const raw of raws) expect(await answer(raw, 1)).toMatch(/^HTTP\/1\.1 200 /);
    const exit = exited(server.child);
    const signalled = performance.now();
    server.child.kill("SIGTERM");
    await sleep(500);
    for (const raw of raws) raw.socket.end();
    expect(await exit).toBe(0);
    expect(performance.now() - signalled).toBeLessThan(3000);
  });

  it("closes connections still idle after MCP_DRAIN_IDLE_MS itself, and exits 0", async () => {
    const server = await start(1000);
    const port = Number(new URL(server.url).port);
    const raw = await openRaw(port, post(port));
    expect(await answer(raw, 1)).toMatch(/^HTTP\/1\.1 200 /);
    const exit = exited(server.child);
    const signalled = performance.now();
    server.child.kill("SIGTERM");
    await raw.closed;
    expect(raw.closedAt! - signalled).toBeGreaterThanOrEqual(900);
    expect(await exit).toBe(0);
  });
});
