import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";

/** A request as a simulator route sees it: already parsed, path parameters extracted. */
export interface SimRequest {
  method: string;
  path: string;
  params: Record<string, string>;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  /** Parsed JSON body, or undefined when the request had none. */
  body: unknown;
  /** A multipart/form-data body (uploads), parsed; a malformed one comes as an empty form. */
  form?: SimForm;
}

export interface SimForm {
  fields: Record<string, string>;
  files: Record<string, { name: string; type: string; bytes: Buffer }>;
}

export interface SimResponse {
  status: number;
  /** Serialised as JSON unless `raw` is set. */
  body?: unknown;
  raw?: string;
  headers?: Record<string, string>;
}

export type Route = (req: SimRequest) => SimResponse | Promise<SimResponse>;

export interface RouterOptions {
  /** Runs before every route; returning a response short-circuits (e.g. a 401). */
  authorize?: (req: SimRequest) => SimResponse | undefined;
  /** Answer for an unknown path or method. */
  notFound?: (req: SimRequest) => SimResponse;
  /** Answer for a body that is not JSON. */
  badJson?: (req: SimRequest) => SimResponse;
}

/**
 * A scripted misbehaviour: the next `times` requests matching `method` and `path` get `action`
 * instead of the simulator's answer. Used by tests, the soak script and the control endpoint.
 */
export interface Fault {
  method?: string;
  /** Exact path, or a RegExp tested against the path (without query). */
  path?: string | RegExp;
  /** How many matching requests to hit; default 1. Infinity for "until cleared". */
  times?: number;
  action:
    | { kind: "respond"; response: SimResponse }
    | { kind: "delay"; ms: number }
    | { kind: "hang" }
    | { kind: "reset" };
}

interface CompiledRoute {
  method: string;
  pattern: string;
  segments: string[];
  route: Route;
}

const MAX_BODY_BYTES = 16 * 1024 * 1024;

/**
 * A deliberately small router for the sandbox simulators: method + `/path/:param` patterns,
 * JSON bodies, and a per-route hit counter that tests and benchmarks read to count upstream
 * requests.
 */
export class Router {
  private readonly routes: CompiledRoute[] = [];
  /** `METHOD /pattern` -> number of requests answered by that route. */
  readonly hits = new Map<string, number>();
  /** `METHOD /actual/path` -> requests received, faulted ones included. */
  readonly received = new Map<string, number>();
  private faults: Array<Fault & { left: number }> = [];

  constructor(private readonly options: RouterOptions = {}) {}

  on(method: string, pattern: string, route: Route): this {
    this.routes.push({ method: method.toUpperCase(), pattern, segments: split(pattern), route });
    return this;
  }

  injectFault(fault: Fault): void {
    this.faults.push({ ...fault, left: fault.times ?? 1 });
  }

  clearFaults(): void {
    this.faults = [];
  }

  private takeFault(method: string, path: string): Fault["action"] | undefined {
    const fault = this.faults.find(
      (f) =>
        (!f.method || f.method.toUpperCase() === method) &&
        (!f.path || (typeof f.path === "string" ? f.path === path : f.path.test(path))),
    );
    if (!fault) return undefined;
    if (--fault.left <= 0) this.faults = this.faults.filter((f) => f !== fault);
    return fault.action;
  }

  /** Total hits on routes matching `METHOD /pattern`, or on all routes. */
  count(key?: string): number {
    if (key) return this.hits.get(key) ?? 0;
    let total = 0;
    for (const n of this.hits.values()) total += n;
    return total;
  }

  /** Handles a node request whose URL path is relative to this router. */
  async handle(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    const url = new URL(path, "http://sandbox.invalid");
    const simReq: SimRequest = {
      method: (req.method ?? "GET").toUpperCase(),
      path: url.pathname,
      params: {},
      query: url.searchParams,
      headers: req.headers,
      body: undefined,
    };
    const receivedKey = `${simReq.method} ${simReq.path}`;
    this.received.set(receivedKey, (this.received.get(receivedKey) ?? 0) + 1);
    const fault = this.takeFault(simReq.method, simReq.path);
    if (fault?.kind === "reset") {
      req.socket.destroy();
      return;
    }
    if (fault?.kind === "hang") return; // never answers; the client's timeout must fire
    if (fault?.kind === "respond") {
      await readBody(req).catch(() => "");
      send(res, fault.response);
      return;
    }
    let answer: SimResponse;
    try {
      const bytes = await readBody(req);
      // A slow service has the request in full and acts on it late, even when the client gave up meanwhile.
      if (fault?.kind === "delay") await new Promise((r) => setTimeout(r, fault.ms));
      const type = String(req.headers["content-type"] ?? "");
      if (/^multipart\/form-data/i.test(type)) simReq.form = await parseForm(bytes, type);
      else if (bytes.length > 0) {
        try {
          simReq.body = JSON.parse(bytes.toString("utf8"));
        } catch {
          send(res, this.options.badJson?.(simReq) ?? { status: 400, body: { error: "Body is not JSON" } });
          return;
        }
      }
      answer = await this.dispatch(simReq);
    } catch (err) {
      answer = { status: 500, body: { error: err instanceof Error ? err.message : String(err) } };
    }
    send(res, answer);
  }

  private async dispatch(req: SimRequest): Promise<SimResponse> {
    const denied = this.options.authorize?.(req);
    if (denied) return denied;
    const segments = split(req.path);
    for (const candidate of this.routes) {
      if (candidate.method !== req.method) continue;
      const params = match(candidate.segments, segments);
      if (!params) continue;
      req.params = params;
      const key = `${candidate.method} ${candidate.pattern}`;
      this.hits.set(key, (this.hits.get(key) ?? 0) + 1);
      return candidate.route(req);
    }
    return this.options.notFound?.(req) ?? { status: 404, body: { error: `No route ${req.method} ${req.path}` } };
  }
}

function split(path: string): string[] {
  return path.split("/").filter((s) => s.length > 0);
}

function match(pattern: string[], actual: string[]): Record<string, string> | undefined {
  if (pattern.length !== actual.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    const p = pattern[i];
    const a = actual[i];
    if (p.startsWith(":")) {
      try {
        params[p.slice(1)] = decodeURIComponent(a);
      } catch {
        return undefined;
      }
    } else if (p !== a) {
      return undefined;
    }
  }
  return params;
}

async function parseForm(bytes: Buffer, type: string): Promise<SimForm> {
  const form: SimForm = { fields: {}, files: {} };
  let data: FormData;
  try {
    data = await new Response(bytes, { headers: { "content-type": type } }).formData();
  } catch {
    return form;
  }
  for (const [name, value] of data.entries()) {
    if (typeof value === "string") form.fields[name] = value;
    else form.files[name] = { name: value.name, type: value.type, bytes: Buffer.from(await value.arrayBuffer()) };
  }
  return form;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new Error("Request body too large");
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

function send(res: ServerResponse, answer: SimResponse): void {
  if (res.destroyed) return;
  const payload = answer.raw ?? (answer.body === undefined ? "" : JSON.stringify(answer.body));
  res.writeHead(answer.status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(payload),
    ...answer.headers,
  });
  res.end(payload);
}

/** Reads a bearer token from `Authorization`, or undefined. */
export function bearerToken(req: SimRequest): string | undefined {
  const header = req.headers.authorization;
  if (typeof header !== "string") return undefined;
  const m = /^Bearer\s+(.+)$/i.exec(header.trim());
  return m ? m[1] : undefined;
}
