import type { Readable, Writable } from "node:stream";
import {
  type JSONRPCMessage,
  parseJSONRPCMessage,
  serializeMessage,
  type Transport,
} from "@modelcontextprotocol/server";

/** The largest line served: a launch with a 12 MB attachment is ~16 MB of base64 plus JSON. */
const MAX_LINE_BYTES = 20 * 1024 * 1024;

/**
 * stdio for serveStdio, with the answers a client needs when a line is wrong: a line that is not
 * JSON gets -32700, a line that is JSON but not JSON-RPC gets -32600, and a line over the limit is
 * dropped with -32600 saying so, while the server keeps answering. (The SDK's own transport skips
 * malformed lines silently and closes on a line over 10 MB.)
 */
export class LineTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  /** Sees every message before the server does (the resource follower of listen streams). */
  observe?: (message: JSONRPCMessage) => void;
  /** Returns true to keep a message back; `deliver` hands it on later (core/stdio/serve.ts). */
  hold?: (message: JSONRPCMessage) => boolean;
  /** Runs after a message is written to stdout. */
  sent?: (message: JSONRPCMessage) => void;
  /** Runs once stdin has ended and the server has been told. */
  afterClose?: () => void;
  private chunks: Buffer[] = [];
  private size = 0;
  private dropping = false;
  private closed = false;

  constructor(
    private readonly stdin: Readable,
    private readonly stdout: Writable,
    private readonly maxLineBytes = MAX_LINE_BYTES,
  ) {}

  async start(): Promise<void> {
    this.stdin.on("data", this.onData);
    this.stdin.once("end", () => void this.close());
    this.stdin.once("error", (err) => this.onerror?.(err));
  }

  private readonly onData = (chunk: Buffer) => {
    let start = 0;
    for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, start)) {
      this.append(chunk.subarray(start, nl));
      this.endLine();
      start = nl + 1;
    }
    this.append(chunk.subarray(start));
  };

  private append(part: Buffer): void {
    if (part.length === 0 || this.dropping) return;
    this.size += part.length;
    if (this.size > this.maxLineBytes) {
      this.dropping = true;
      this.chunks = [];
      return;
    }
    this.chunks.push(part);
  }

  private endLine(): void {
    if (this.dropping) {
      this.reply(
        null,
        -32600,
        `Request too large: a line of more than ${this.maxLineBytes} bytes was dropped unread. ` +
          "Send less (attach large files by URL).",
      );
    } else if (this.size > 0) {
      this.handleLine(Buffer.concat(this.chunks, this.size).toString("utf8"));
    }
    this.chunks = [];
    this.size = 0;
    this.dropping = false;
  }

  private handleLine(line: string): void {
    if (line.trim() === "") return;
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch {
      this.reply(null, -32700, "Parse error: the line is not valid JSON");
      return;
    }
    let message: JSONRPCMessage;
    try {
      message = parseJSONRPCMessage(json);
    } catch {
      const id = (json as { id?: unknown })?.id;
      this.reply(
        typeof id === "string" || typeof id === "number" ? id : null,
        -32600,
        "Invalid request: not a JSON-RPC 2.0 message",
      );
      return;
    }
    if (!this.hold?.(message)) this.deliver(message);
  }

  deliver(message: JSONRPCMessage): void {
    this.observe?.(message);
    this.onmessage?.(message);
  }

  private reply(id: string | number | null, code: number, message: string): void {
    this.write(`${JSON.stringify({ jsonrpc: "2.0", id, error: { code, message } })}\n`);
  }

  async send(message: JSONRPCMessage): Promise<void> {
    this.write(serializeMessage(message));
    this.sent?.(message);
  }

  private write(text: string): void {
    if (!this.closed) this.stdout.write(text);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stdin.off("data", this.onData);
    this.onclose?.();
    this.afterClose?.();
  }
}
