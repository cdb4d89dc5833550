// Issue 28 over stdio: a client that spawns the server per session (Inspector CLI, say) and reruns
// a paid call after the server was killed mid-call gets no second launch, because the spend
// ledger lives in files under MCP_STATE_DIR. A state directory the server cannot use is a start-up
// warning, and every paid call then asks first (repeat: true spends). Launches are counted by the
// sandbox, not by the server.
import { spawn, spawnSync } from "node:child_process";
import { appendFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FAULTS } from "../../src/sandbox/faults.js";
import type { Sandbox } from "../../src/sandbox/index.js";
import { call, CLI, connectStdio, freshStateDir, sandboxEnv, testSandbox, text, until } from "../harness.js";

const LAUNCH = "POST /api/v1/vcaas/projects/launch";

describe("the spend ledger over stdio (issue 28)", () => {
  let sandbox: Sandbox;
  const launches = () => sandbox.build.router.count(LAUNCH);

  beforeAll(async () => {
    sandbox = await testSandbox();
  });
  afterAll(async () => {
    await sandbox?.close();
  });

  it("a server SIGKILLed mid-launch, a new one, the same call: checked and found, one launch", async () => {
    const dir = freshStateDir();
    const env = sandboxEnv(sandbox, { BUILD_CONFIRM_SPEND: "never", MCP_STATE_DIR: dir });
    const before = launches();
    // The service takes 2 s to act on the launch: the server dies with the POST in flight.
    sandbox.build.router.injectFault({
      method: "POST",
      path: "/api/v1/vcaas/projects/launch",
      times: 1,
      action: FAULTS.slow(2000),
    });
    const child = spawn(process.execPath, [CLI], { env, stdio: ["pipe", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString()));
    const send = (message: object) => child.stdin.write(`${JSON.stringify(message)}\n`);
    send({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
    });
    await until(
      async () => out,
      (o) => o.includes('"id":1'),
    );
    send({ jsonrpc: "2.0", method: "notifications/initialized" });
    send({
      jsonrpc: "2.0",
      id: 2,
      method: "tools/call",
      params: { name: "build_launch_project", arguments: { projectId: "respawned", prompt: "Landing page" } },
    });
    const records = () => {
      try {
        return readdirSync(join(dir, "ledger", "records")).filter((f) => !f.startsWith(".")).length;
      } catch {
        return 0;
      }
    };
    try {
      // The record is written before the request leaves; then the POST is in flight.
      await until(
        async () => records(),
        (n) => n === 1,
      );
      await new Promise((r) => setTimeout(r, 300));
    } finally {
      child.kill("SIGKILL");
    }
    await until(
      async () => launches() - before,
      (n) => n === 1,
    );
    expect(out).not.toContain('"id":2');
    // Nothing of the call is readable in the directory: names are HMACs, records sealed.
    const files = readdirSync(join(dir, "ledger", "records")).filter((f) => !f.startsWith("."));
    const stored = files.map((f) => readFileSync(join(dir, "ledger", "records", f), "utf8")).join("");
    expect(stored).not.toContain("respawned");
    expect(stored).not.toContain("Landing page");

    const next = await connectStdio(env);
    try {
      const again = await call(next.client, "build_launch_project", { projectId: "respawned", prompt: "Landing page" });
      expect(text(again)).toMatch(/^Same call as the one at .*its caller stopped before its outcome was known/s);
      expect(text(again)).toMatch(/Checked: found project respawned/);
      expect(text(again)).toMatch(/repeat: true/);
      expect(launches() - before).toBe(1);
      // Asked for on purpose, it spends.
      const forced = await call(next.client, "build_launch_project", {
        projectId: "respawned",
        prompt: "Landing page",
        repeat: true,
      });
      expect(forced.isError, text(forced)).toBeFalsy();
      expect(launches() - before).toBe(2);
    } finally {
      await next.close();
    }
  }, 60_000);

  it("a finished call is remembered by the next server too: the same call says what the first did", async () => {
    const env = sandboxEnv(sandbox, { BUILD_CONFIRM_SPEND: "never", MCP_STATE_DIR: freshStateDir() });
    const before = launches();
    const first = await connectStdio(env);
    const args = { projectId: "remembered", prompt: "Landing page" };
    expect((await call(first.client, "build_launch_project", args)).isError).toBeFalsy();
    await first.close();
    const second = await connectStdio(env);
    try {
      const again = await call(second.client, "build_launch_project", args);
      expect(text(again)).toMatch(/^Same call as the one at .*nothing was sent again.*Launched project remembered/s);
      expect(launches() - before).toBe(1);
    } finally {
      await second.close();
    }
  }, 60_000);

  it("an unusable state directory is a start-up warning, and every paid call asks first", async () => {
    const file = join(freshStateDir(), "not-a-directory");
    writeFileSync(file, "x");
    const corrupt = freshStateDir();
    mkdirSync(join(corrupt, "ledger"), { recursive: true });
    writeFileSync(join(corrupt, "ledger", "key"), "garbage");
    for (const dir of [file, corrupt]) {
      const conn = await connectStdio(sandboxEnv(sandbox, { BUILD_CONFIRM_SPEND: "never", MCP_STATE_DIR: dir }));
      try {
        // Reads cost nothing and are not asked. (A 2026-07-28 client sends no opening of its own:
        // this first request is what loads the tools, and the ledger with them.)
        expect((await call(conn.client, "build_get_account", {})).isError).toBeFalsy();
        await until(
          async () => conn.stderr(),
          (e) => e.includes("spend ledger unavailable"),
        );
        expect(conn.stderr()).toMatch(/every one asks first/);
        const before = launches();
        const args = { projectId: "asks-first", prompt: "Landing page" };
        const asked = await call(conn.client, "build_launch_project", args);
        expect(asked.isError).toBe(true);
        expect(text(asked)).toMatch(/cannot remember its paid calls .*Nothing was sent.*repeat: true/s);
        expect(launches() - before).toBe(0);
      } finally {
        await conn.close();
      }
    }
  }, 60_000);
});

describe("a full disk under the spend ledger (issue 28)", () => {
  let sandbox: Sandbox;
  let dir: string;
  let mounted = false;
  const launches = () => sandbox.build.router.count(LAUNCH);

  beforeAll(async () => {
    sandbox = await testSandbox();
    // A small filesystem of its own, so filling it harms nothing else (needs root: CI has it).
    dir = freshStateDir();
    mounted = spawnSync("mount", ["-t", "tmpfs", "-o", "size=512k", "tmpfs", dir]).status === 0;
    if (!mounted) console.warn("skipped: mounting a small tmpfs needs root (mount -t tmpfs)");
  });
  afterAll(async () => {
    if (mounted) spawnSync("umount", [dir]);
    await sandbox?.close();
  });

  it("a paid call on a full disk sends nothing, says retrying is safe; with room again it spends once", async (t) => {
    if (!mounted) t.skip();
    const conn = await connectStdio(sandboxEnv(sandbox, { BUILD_CONFIRM_SPEND: "never", MCP_STATE_DIR: dir }));
    const filler = join(dir, "filler");
    try {
      // Loads the tools and opens the ledger while there is room for its key.
      expect((await call(conn.client, "build_get_account", {})).isError).toBeFalsy();
      const chunk = Buffer.alloc(4096, 1);
      try {
        for (;;) appendFileSync(filler, chunk);
      } catch (err) {
        expect((err as NodeJS.ErrnoException).code).toBe("ENOSPC");
      }
      const before = launches();
      const args = { projectId: "full-disk", prompt: "Landing page" };
      const refused = await call(conn.client, "build_launch_project", args);
      expect(refused.isError).toBe(true);
      expect(text(refused)).toMatch(/state store is unavailable.*nothing was sent or spent.*retrying is safe/s);
      expect(launches() - before).toBe(0);
      rmSync(filler);
      const launched = await call(conn.client, "build_launch_project", args);
      expect(launched.isError, text(launched)).toBeFalsy();
      expect(launches() - before).toBe(1);
    } finally {
      await conn.close();
    }
  }, 60_000);
});

describe("whose records a stdio server finds (issue 28)", () => {
  let sandbox: Sandbox;
  const launchesOf = (account: number) => sandbox.accounts.build[account].simulator.router.count(LAUNCH);

  beforeAll(async () => {
    sandbox = await testSandbox({ accounts: 2 });
  });
  afterAll(async () => {
    await sandbox?.close();
  });

  it("another key on the same upstream and state directory is another account: its call is its own", async () => {
    const dir = freshStateDir();
    const args = { projectId: "same-name", prompt: "Landing page" };
    const first = await connectStdio(sandboxEnv(sandbox, { BUILD_CONFIRM_SPEND: "never", MCP_STATE_DIR: dir }));
    try {
      expect((await call(first.client, "build_launch_project", args)).isError).toBeFalsy();
    } finally {
      await first.close();
    }
    const other = sandbox.accounts.build[1].key;
    const env = sandboxEnv(sandbox, { BUILD_CONFIRM_SPEND: "never", MCP_STATE_DIR: dir, BUILD_API_KEY: other });
    const second = await connectStdio(env);
    try {
      const launched = await call(second.client, "build_launch_project", args);
      expect(launched.isError, text(launched)).toBeFalsy();
      expect(text(launched)).not.toMatch(/Same call/);
      expect([launchesOf(0), launchesOf(1)]).toEqual([1, 1]);
    } finally {
      await second.close();
    }
  }, 60_000);

  it("--sandbox twice on one state directory: the second run's launch is its own and can be followed", async () => {
    // The README's demo, run twice: the in-process sandbox forgets every call when its process
    // ends, so a record of the first run must not answer the second (it named a project the new
    // sandbox never had, and build_wait failed with PROJECT_NOT_FOUND).
    const env = { PATH: process.env.PATH ?? "", BUILD_CONFIRM_SPEND: "never", MCP_STATE_DIR: freshStateDir() };
    const args = { projectId: "demo-twice", prompt: "Landing page" };
    for (const run of [1, 2]) {
      const conn = await connectStdio(env, ["--sandbox"]);
      try {
        const launched = await call(conn.client, "build_launch_project", args);
        expect(launched.isError, `run ${run}: ${text(launched)}`).toBeFalsy();
        expect(text(launched)).not.toMatch(/Same call/);
        const project = await call(conn.client, "build_get_project", { projectId: "demo-twice" });
        expect(project.isError, `run ${run}: ${text(project)}`).toBeFalsy();
      } finally {
        await conn.close();
      }
    }
  }, 60_000);
});
