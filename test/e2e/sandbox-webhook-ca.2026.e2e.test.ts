// The standalone `switchboard-mcp sandbox` command delivers build webhooks over real HTTPS to an
// address whose certificate only SANDBOX_WEBHOOK_CA vouches for (issue 31): an operator's proxy in
// front of a server under test, here a bare HTTPS listener that records what it is sent. Without
// the variable the same delivery fails its TLS handshake; a path that is no certificate stops the
// command with a line naming the variable.
import { type ChildProcess, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeCert, type TestCert } from "../../scripts/tls.mjs";
import { CLI, sleep, until } from "../harness.js";

const API = "/api/v1/vcaas";

interface Received {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: { event: string; data: { projectId: string } };
}

interface Standalone {
  child: ChildProcess;
  stderr: () => string;
  base: string;
  key: string;
}

/** `switchboard-mcp sandbox --port 0` with `env`: its build base URL and key, from what it prints. */
async function sandboxCommand(env: Record<string, string>): Promise<Standalone> {
  const child = spawn(process.execPath, [CLI, "sandbox", "--port", "0"], {
    env: { ...process.env, SANDBOX_TIME_SCALE: "3000", ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr!.on("data", (c: Buffer) => {
    stderr += c.toString();
  });
  const printed = await until(
    async () => stderr,
    (s) => /BUILD_API_KEY=\S+/.test(s) || child.exitCode !== null,
  );
  const base = /BUILD_API_BASE_URL=(\S+)/.exec(printed)?.[1] ?? "";
  const key = /BUILD_API_KEY=(\S+)/.exec(printed)?.[1] ?? "";
  return { child, stderr: () => stderr, base, key };
}

describe("switchboard-mcp sandbox: SANDBOX_WEBHOOK_CA", () => {
  let cert: TestCert;
  let receiver: Server;
  let port: number;
  const received: Received[] = [];
  const started: ChildProcess[] = [];

  beforeAll(async () => {
    cert = makeCert();
    receiver = createServer({ cert: cert.cert, key: cert.key }, (req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => {
        body += c.toString();
      });
      req.on("end", () => {
        received.push({ path: req.url ?? "", headers: req.headers, body: JSON.parse(body) });
        res.writeHead(202).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    port = (receiver.address() as AddressInfo).port;
  });
  afterAll(async () => {
    for (const child of started) child.kill("SIGTERM");
    receiver?.closeAllConnections();
    await new Promise((resolve) => receiver?.close(resolve));
  });

  /** Subscribes agent.prompt.finished to the receiver under `path`, then runs a 1-minute prompt. */
  async function deliverOne(s: Standalone, path: string): Promise<void> {
    const headers = { "api-key": s.key, "content-type": "application/json" };
    const put = await fetch(`${s.base}${API}/webhooks`, {
      method: "PUT",
      headers,
      body: JSON.stringify({
        url: `https://localhost:${port}${path}`,
        event: "agent.prompt.finished",
        headers: { "x-test-secret": "s3" },
      }),
    });
    expect(put.status, await put.clone().text()).toBe(200);
    const run = await fetch(`${s.base}${API}/projects/acme-storefront/agent/start`, {
      method: "POST",
      headers,
      body: JSON.stringify({ prompt: "Add a footer [minutes=1]" }),
    });
    expect(run.status, await run.clone().text()).toBe(200);
  }

  it("trusts the CA it names for its deliveries, and only with it", async () => {
    const file = join(cert.dir, "ca.pem");
    writeFileSync(file, cert.cert);
    const trusting = await sandboxCommand({ SANDBOX_WEBHOOK_CA: file });
    started.push(trusting.child);
    await deliverOne(trusting, "/hooks/trusted");
    const [delivery] = await until(
      async () => received.filter((r) => r.path === "/hooks/trusted"),
      (list) => list.length === 1,
    );
    expect(delivery.headers["x-test-secret"]).toBe("s3");
    expect(delivery.body).toMatchObject({ event: "agent.prompt.finished", data: { projectId: "acme-storefront" } });

    // The same, without the variable: the certificate is unknown, nothing arrives.
    const plain = await sandboxCommand({});
    started.push(plain.child);
    await deliverOne(plain, "/hooks/untrusted");
    await sleep(1500);
    expect(received.filter((r) => r.path === "/hooks/untrusted")).toEqual([]);
  });

  it("refuses a path that holds no certificate, naming the variable", async () => {
    const file = join(cert.dir, "not-a-cert.txt");
    writeFileSync(file, "hello");
    for (const bad of [file, join(cert.dir, "missing.pem")]) {
      const failed = await sandboxCommand({ SANDBOX_WEBHOOK_CA: bad });
      await until(
        async () => failed.child.exitCode,
        (code) => code !== null,
      );
      expect(failed.child.exitCode).not.toBe(0);
      expect(failed.stderr()).toMatch(
        /SANDBOX_WEBHOOK_CA: .*(holds no PEM certificate|cannot read).*PEM certificate file/,
      );
    }
  });
});
