// A client that identifies itself by a Client ID Metadata Document (draft-ietf-oauth-client-id-
// metadata-document): its client_id is an https URL, and the provider fetches the document there.
// On loopback that needs TLS the provider trusts: a throwaway self-signed certificate for 127.0.0.1
// (made by the openssl CLI), trusted only by the provider's own fetch (`fetchTrusting`), never by
// the process or the server under test.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, request } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const haveOpenssl = (() => {
  try {
    execFileSync("openssl", ["version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();

export function sayIfOpensslMissing(suite: string): void {
  if (!haveOpenssl) console.warn(`${suite}: skipped, the openssl CLI is not installed (apt-get install openssl)`);
}

export interface MetadataHost {
  /** The document's URL: the client's client_id. */
  clientId: string;
  /** The certificate the host serves (PEM): the only one the provider's fetch trusts. */
  ca: string;
  /** GETs of the document so far. */
  fetches(): number;
  close(): Promise<void>;
}

/**
 * Serves a public client's metadata document over https on 127.0.0.1: redirect to `redirectUri`,
 * and `scope`, the scopes it may ask for (docs/deployment.md#oauth: all three of ours, or a
 * step-up is refused).
 */
export async function startMetadataHost(redirectUri: string, scope: string): Promise<MetadataHost> {
  const dir = mkdtempSync(join(tmpdir(), "cimd-"));
  let key: string;
  let cert: string;
  try {
    execFileSync(
      "openssl",
      [
        ...["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1"],
        ...["-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
        ...["-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem")],
      ],
      { stdio: "ignore" },
    );
    key = readFileSync(join(dir, "key.pem"), "utf8");
    cert = readFileSync(join(dir, "cert.pem"), "utf8");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  let fetches = 0;
  let clientId = "";
  const server = createServer({ key, cert }, (req, res) => {
    if (req.method !== "GET" || req.url !== "/oauth/client-metadata.json") return res.writeHead(404).end();
    fetches++;
    const document = {
      client_id: clientId,
      client_name: "switchboard e2e (metadata document)",
      client_uri: new URL("/", clientId).href,
      redirect_uris: [redirectUri],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
      scope,
    };
    res.writeHead(200, { "content-type": "application/json", "cache-control": "max-age=60" });
    res.end(JSON.stringify(document));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  clientId = `https://127.0.0.1:${(server.address() as AddressInfo).port}/oauth/client-metadata.json`;
  return {
    clientId,
    ca: cert,
    fetches: () => fetches,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/**
 * A fetch for the provider's outgoing requests that trusts `ca` (and nothing else). It ignores the
 * provider's own dispatcher, which refuses loopback addresses (SSRF protection): the one address
 * it is given here is the test's own metadata host.
 */
export function fetchTrusting(ca: string): typeof fetch {
  return (input, init) =>
    new Promise<Response>((resolve, reject) => {
      const headers: Record<string, string> = {};
      new Headers(init?.headers).forEach((value, name) => {
        headers[name] = value;
      });
      const req = request(
        String(input instanceof Request ? input.url : input),
        { method: init?.method ?? "GET", headers, ca, signal: init?.signal ?? undefined },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (chunk: Buffer) => chunks.push(chunk));
          res.on("error", reject);
          res.on("end", () => {
            const answer = new Headers();
            for (const [name, value] of Object.entries(res.headers))
              if (typeof value === "string") answer.set(name, value);
            resolve(new Response(Buffer.concat(chunks), { status: res.statusCode ?? 502, headers: answer }));
          });
        },
      );
      req.on("error", reject);
      req.end();
    });
}
