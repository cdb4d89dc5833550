// Types of scripts/tls.mjs for the TypeScript tests.

export interface TestCert {
  dir: string;
  certFile: string;
  keyFile: string;
  /** PEM: the self-signed certificate, which is also the CA the sandbox trusts. */
  cert: string;
  key: string;
}

export interface TlsTerminator {
  port: number;
  /** Where requests go (http://127.0.0.1:<port>), set once the backend listens. */
  target?: URL;
  close(): Promise<void>;
}

export declare function makeCert(): TestCert;
export declare function tlsTerminator(cert: TestCert): Promise<TlsTerminator>;
