// A certificate made by openssl at test time, and a TLS terminator in the test process: what an
// operator's proxy does in front of the server, so webhooks are delivered over real HTTPS.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface TestCert {
  dir: string;
  certFile: string;
  keyFile: string;
  /** PEM: the self-signed certificate, which is also the CA the sandbox trusts. */
  cert: string;
  key: string;
}

/** A self-signed certificate for localhost and 127.0.0.1, valid for a day. */
export function makeCert(): TestCert {
  const dir = mkdtempSync(join(tmpdir(), "sb-tls-"));
  const certFile = join(dir, "cert.pem");
  const keyFile = join(dir, "key.pem");
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-keyout",
      keyFile,
      "-out",
      certFile,
      "-days",
      "1",
      "-subj",
      "/CN=localhost",
      "-addext",
      "subjectAltName=DNS:localhost,IP:127.0.0.1",
    ],
    { stdio: "ignore" },
  );
  return { dir, certFile, keyFile, cert: readFileSync(certFile, "utf8"), key: readFileSync(keyFile, "utf8") };
}

export interface TlsTerminator {
  port: number;
  /** Where requests go (http://127.0.0.1:<port>), set once the backend listens. */
  target?: URL;
  close(): Promise<void>;
}

/** HTTPS on a free loopback port, forwarding every request to `target` over plain HTTP. */
export async function tlsTerminator(cert: TestCert): Promise<TlsTerminator> {
  const t: TlsTerminator = { port: 0, close: async () => undefined };
  const server = https.createServer({ cert: cert.cert, key: cert.key }, (req, res) => {
    if (!t.target) return void res.writeHead(502).end();
    const upstream = http.request(
      { host: t.target.hostname, port: t.target.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.once("error", () => res.writeHead(502).end());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.port = (server.address() as AddressInfo).port;
  t.close = () =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return t;
}
