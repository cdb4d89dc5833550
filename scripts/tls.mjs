// A certificate made by openssl at run time, and a TLS terminator in the calling process: what an
// operator's proxy does in front of the server, so webhooks are delivered over real HTTPS
// (test/e2e/builder-push.2026.e2e.test.ts, bench/push.mjs; the cluster test uses nginx instead).
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A self-signed certificate for localhost and 127.0.0.1, valid for a day (it is its own CA). */
export function makeCert() {
  const dir = mkdtempSync(join(tmpdir(), "sb-tls-"));
  const certFile = join(dir, "cert.pem");
  const keyFile = join(dir, "key.pem");
  const subject = ["-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"];
  execFileSync(
    "openssl",
    ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", keyFile, "-out", certFile, "-days", "1", ...subject],
    { stdio: "ignore" },
  );
  return { dir, certFile, keyFile, cert: readFileSync(certFile, "utf8"), key: readFileSync(keyFile, "utf8") };
}

/** HTTPS on a free loopback port, forwarding every request over plain HTTP to `target` once set. */
export async function tlsTerminator(cert) {
  const t = { port: 0, target: undefined, close: async () => undefined };
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
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.port = server.address().port;
  t.close = () =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return t;
}
