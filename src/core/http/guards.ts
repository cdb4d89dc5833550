import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { isLoopbackHost } from "../base/loopback.js";
import { telemetry } from "../base/telemetry.js";
import { ENV } from "../base/settings.js";

export { LOOPBACK_ORIGINS } from "../base/loopback.js";

/**
 * Host header check against DNS rebinding: a loopback bind answers loopback names, and the names the
 * operator lists (ENV.allowedHosts).
 */
export function hostAllowed(
  host: string | undefined,
  loopbackOnly: boolean,
  allowedHosts: readonly string[] = [],
): boolean {
  if (!loopbackOnly) return true; // a non-loopback bind requires the bearer token instead
  if (!host) return false;
  const name = (host.startsWith("[") ? host.slice(0, host.indexOf("]") + 1) : host.split(":")[0]).toLowerCase();
  return isLoopbackHost(name) || allowedHosts.includes(name);
}

/** `http://[::1]:5173` matches `http://[::1]` (any port) or itself. */
export function originAllowed(origin: string, allowed: string[]): boolean {
  let parsed: URL;
  try {
    parsed = new URL(origin);
  } catch {
    return false;
  }
  // URL keeps IPv6 hostnames in brackets already: never add a second pair.
  const withoutPort = `${parsed.protocol}//${parsed.hostname}`;
  const withPort = `${parsed.protocol}//${parsed.host}`;
  return (
    allowed.includes("*") || allowed.includes(withPort) || allowed.includes(withoutPort) || allowed.includes(origin)
  );
}

const digest = (value: string) => createHash("sha256").update(value).digest();

/** Compares digests so neither the length nor the content of the token leaks through timing. */
export function tokenChecker(token: string | undefined): ((authorization: string | undefined) => boolean) | undefined {
  if (!token) return undefined;
  const expected = digest(token);
  return (authorization) => {
    const m = /^Bearer\s+(.+)$/i.exec(authorization ?? "");
    return m !== null && timingSafeEqual(digest(m[1].trim()), expected);
  };
}

/** A body that trickles in slower than this is dropped: a client sends its request at once. */
export const BODY_DEADLINE_MS = 30_000;

/** The first bytes of every body are not counted in the body budget: small requests never wait on big uploads. */
const UNCOUNTED_BODY_BYTES = 64 * 1024;

/** What the transport's limits (limits.ts) set for every request's body: its deadline and the shared byte budget. */
export interface BodyPolicy {
  deadlineMs: number;
  budget?: { tryTake(bytes: number): boolean; release(bytes: number): void };
}

/**
 * The body, or why not. `closeWith`: the body was not read to the end, so the answer closes the
 * connection (with these headers too).
 */
export type ReadAnswer = {
  value?: unknown;
  error?: string;
  status: number;
  code: number;
  closeWith?: Record<string, string>;
};

/**
 * Reads a JSON body up to `max` bytes within the policy's deadline. Past the limit or the deadline,
 * or when the shared body budget is spent, it stops reading without closing the socket (the answer
 * must still reach the client), and says so (`closeWith`): the connection is closed once that answer
 * has been sent. A body aborted mid-way drops its buffers and its share of the budget at once.
 */
export function readJson(
  req: IncomingMessage,
  max: number,
  policy: BodyPolicy = { deadlineMs: BODY_DEADLINE_MS },
): Promise<ReadAnswer> {
  const deadline = policy.deadlineMs;
  const budget = policy.budget;
  return new Promise((resolve) => {
    let chunks: Buffer[] = [];
    let size = 0;
    /** Bytes of this body counted in the shared budget (all but the first UNCOUNTED_BODY_BYTES). */
    let held = 0;
    const settle = (answer: ReadAnswer) => {
      cleanup();
      chunks = [];
      budget?.release(held);
      held = 0;
      resolve(answer);
    };
    const stop = (answer: { error: string; status: number; code: number }, headers?: Record<string, string>) => {
      req.pause();
      settle({ ...answer, closeWith: headers ?? {} });
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) return stop({ error: `Request body larger than ${max} bytes`, status: 413, code: -32600 });
      const counted = Math.max(0, size - UNCOUNTED_BODY_BYTES) - held;
      if (counted > 0 && budget) {
        if (!budget.tryTake(counted)) {
          telemetry.add("caps", 1, { setting: ENV.bodyBudgetBytes });
          return stop(
            {
              error:
                "Server busy: request bodies being received at once are at the server's limit " +
                `(${ENV.bodyBudgetBytes}); retry in a few seconds`,
              status: 503,
              code: -32000,
            },
            { "retry-after": "5" },
          );
        }
        held += counted;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      const text = Buffer.concat(chunks, size).toString("utf8");
      chunks = [];
      try {
        settle({ value: JSON.parse(text), status: 200, code: 0 });
      } catch {
        settle({ error: "Parse error: the body is not valid JSON", status: 400, code: -32700 });
      }
    };
    const onError = () => stop({ error: "The request body could not be read", status: 400, code: -32600 });
    // An aborted upload ends in "error" (or "close" alone): either way its buffers go now, not at the deadline.
    const onClose = () => {
      if (!req.complete) onError();
    };
    const timer = setTimeout(
      () => stop({ error: `Request body not received within ${deadline / 1000} s`, status: 408, code: -32600 }),
      deadline,
    );
    const cleanup = () => {
      clearTimeout(timer);
      req.off("data", onData).off("end", onEnd).off("error", onError).off("close", onClose);
    };
    req.on("data", onData).once("end", onEnd).once("error", onError).once("close", onClose);
  });
}

/**
 * Answers to this request close its connection once sent (an unauthenticated request, a body left
 * unread: do not hold its socket). The headers go on the response itself, so any answer carries them.
 */
export function closeAfterAnswer(res: ServerResponse, headers: Record<string, string> = {}): void {
  if (res.headersSent) return;
  res.setHeader("connection", "close");
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  res.once("finish", () => res.req.destroy());
}

export function plain(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent) return void res.end();
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}

/** A request refused for what its headers carry (a key sent twice, say): answered with `status` and this message. */
export class RequestRefused extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = "RequestRefused";
  }
}

export function rpcError(
  res: ServerResponse,
  status: number,
  code: number,
  message: string,
  headers?: Record<string, string>,
): void {
  plain(res, status, { jsonrpc: "2.0", error: { code, message }, id: null }, headers);
}

/** A web Request for the SDK's fetch-shaped entries, from a node request whose body we already read. */
export function toWebRequest(req: IncomingMessage, body: unknown, signal: AbortSignal): Request {
  return new Request(...webRequestOf(req, body, signal));
}

/** The URL and init of `toWebRequest` (for a subclass of Request that carries more). */
export function webRequestOf(req: IncomingMessage, body: unknown, signal: AbortSignal): [string, RequestInit] {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(", ") : value);
  }
  const url = `http://${req.headers.host ?? "localhost"}${req.url ?? "/"}`;
  const method = req.method ?? "GET";
  return [
    url,
    {
      method,
      headers,
      signal,
      ...(body !== undefined && method !== "GET" && method !== "HEAD" ? { body: JSON.stringify(body) } : {}),
    },
  ];
}

/** Streams a web Response back through node's response (SSE streams included). */
export async function sendWebResponse(response: Response, res: ServerResponse): Promise<void> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => (headers[name] = value));
  res.writeHead(response.status, headers);
  if (!response.body) return void res.end();
  const reader = response.body.getReader();
  res.once("close", () => void reader.cancel().catch(() => undefined));
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      res.write(value);
    }
  } catch {
    // the client went away mid-stream
  } finally {
    res.end();
  }
}
