import type { McpUiHostCapabilities, McpUiHostContext } from "@modelcontextprotocol/ext-apps";
import type { CallToolResult } from "@modelcontextprotocol/client";
import { isObject, type Json } from "./format.js";

/**
 * The view side of the MCP Apps protocol (ext-apps 2.x, spec 2026-01-26): JSON-RPC 2.0 over
 * postMessage with the host window.
 *
 * Why not the SDK's `App` class: it carries the MCP client's Protocol and zod, about 100 KB gzip
 * even with zod's locales stripped, which leaves no room for a map under the 150 KB budget. The
 * wire protocol is small and stable, and the browser test runs every view against the SDK's own
 * host-side AppBridge, so a divergence fails there.
 */

export const PROTOCOL_VERSION = "2026-01-26";

export type ToolResult = CallToolResult;

export interface BridgeEvents {
  toolinput: { arguments?: Json };
  toolresult: ToolResult;
  toolcancelled: { reason?: string };
  /** The merged host context after the handshake and after every change. */
  hostcontext: McpUiHostContext;
  teardown: Json;
}

type Listener<K extends keyof BridgeEvents> = (params: BridgeEvents[K]) => void;

interface Pending {
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
  timer: ReturnType<typeof setTimeout>;
}

const NOTIFICATION_EVENTS: Record<string, keyof BridgeEvents> = {
  "ui/notifications/tool-input": "toolinput",
  "ui/notifications/tool-result": "toolresult",
  "ui/notifications/tool-cancelled": "toolcancelled",
};

export class ViewBridge {
  hostContext: McpUiHostContext = {};
  hostCapabilities: McpUiHostCapabilities = {};
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly listeners: { [K in keyof BridgeEvents]?: Array<Listener<K>> } = {};
  private stopSizeWatch?: () => void;

  constructor(
    private readonly appInfo: { name: string; version: string },
    private readonly host: Window = window.parent,
  ) {}

  on<K extends keyof BridgeEvents>(event: K, listener: Listener<K>): void {
    (this.listeners[event] ??= [] as never[]).push(listener as never);
  }

  /** Handshake: ui/initialize, then ui/notifications/initialized; then size reports start. */
  async connect(): Promise<void> {
    window.addEventListener("message", this.onMessage);
    const result = await this.request("ui/initialize", {
      appInfo: this.appInfo,
      appCapabilities: { availableDisplayModes: ["inline"] },
      protocolVersion: PROTOCOL_VERSION,
    });
    if (!isObject(result)) throw new Error("The host answered ui/initialize without a result object.");
    this.hostCapabilities = isObject(result.hostCapabilities) ? (result.hostCapabilities as McpUiHostCapabilities) : {};
    this.hostContext = isObject(result.hostContext) ? (result.hostContext as McpUiHostContext) : {};
    this.notify("ui/notifications/initialized", {});
    this.emit("hostcontext", this.hostContext);
    this.stopSizeWatch = watchSize((height) => this.notify("ui/notifications/size-changed", { height }));
  }

  get canCallTools(): boolean {
    return isObject(this.hostCapabilities.serverTools);
  }

  /** tools/call on the server that owns this view, proxied by the host. Tool errors come back as isError results. */
  async callServerTool(params: { name: string; arguments?: Json }, timeoutMs = 60_000): Promise<ToolResult> {
    const result = await this.request(
      "tools/call",
      { name: params.name, arguments: params.arguments ?? {} },
      timeoutMs,
    );
    if (!isObject(result)) throw new Error(`The host answered tools/call ${params.name} without a result.`);
    return result as ToolResult;
  }

  /** Asks the host to open a link (a sandboxed view cannot navigate or open windows itself). */
  async openLink(url: string): Promise<boolean> {
    const result = await this.request("ui/open-link", { url }, 30_000);
    return !(isObject(result) && result.isError === true);
  }

  close(): void {
    window.removeEventListener("message", this.onMessage);
    this.stopSizeWatch?.();
    for (const [id, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(new Error("The view was closed."));
      this.pending.delete(id);
    }
  }

  private emit<K extends keyof BridgeEvents>(event: K, params: BridgeEvents[K]): void {
    for (const listener of (this.listeners[event] ?? []) as Array<Listener<K>>) {
      try {
        listener(params);
      } catch (err) {
        console.error(`[view] ${event} listener failed`, err);
      }
    }
  }

  private post(message: Json): void {
    // The host frame's origin is not knowable from inside an opaque-origin sandbox, hence "*";
    // nothing secret is ever sent, and incoming messages are only accepted from the host window.
    this.host.postMessage({ jsonrpc: "2.0", ...message }, "*");
  }

  private request(method: string, params: Json, timeoutMs = 30_000): Promise<unknown> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`${method} got no answer within ${Math.round(timeoutMs / 1000)} s.`));
      }, timeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      this.post({ id, method, params });
    });
  }

  private notify(method: string, params: Json): void {
    this.post({ method, params });
  }

  private readonly onMessage = (event: MessageEvent): void => {
    if (event.source !== this.host) return;
    const msg: unknown = event.data;
    if (!isObject(msg) || msg.jsonrpc !== "2.0") return;
    if (typeof msg.method === "string") {
      if (msg.id !== undefined) void this.answer(msg.id, msg.method, isObject(msg.params) ? msg.params : {});
      else this.onNotification(msg.method, isObject(msg.params) ? msg.params : {});
      return;
    }
    if (typeof msg.id !== "number") return;
    const pending = this.pending.get(msg.id);
    if (!pending) return;
    this.pending.delete(msg.id);
    clearTimeout(pending.timer);
    if (isObject(msg.error))
      pending.reject(
        new Error(typeof msg.error.message === "string" ? msg.error.message : "The host returned an error."),
      );
    else pending.resolve(msg.result);
  };

  private onNotification(method: string, params: Json): void {
    if (method === "ui/notifications/host-context-changed") {
      this.hostContext = { ...this.hostContext, ...(params as McpUiHostContext) };
      this.emit("hostcontext", this.hostContext);
      return;
    }
    const event = NOTIFICATION_EVENTS[method];
    if (event) this.emit(event, params as never);
  }

  private async answer(id: unknown, method: string, params: Json): Promise<void> {
    if (method === "ping") return this.post({ id, result: {} });
    if (method === "ui/resource-teardown") {
      this.emit("teardown", params);
      this.post({ id, result: {} });
      return;
    }
    this.post({ id, error: { code: -32601, message: `Method not found: ${method}` } });
  }
}

/** Reports the document's natural height whenever it changes (once per frame at most). */
function watchSize(report: (height: number) => void): () => void {
  let last = -1;
  let scheduled = false;
  const measure = () => {
    scheduled = false;
    const root = document.documentElement;
    // Measured at max-content so the document can shrink below the iframe's current height.
    const previous = root.style.height;
    root.style.height = "max-content";
    const height = Math.ceil(root.getBoundingClientRect().height);
    root.style.height = previous;
    if (height !== last) {
      last = height;
      report(height);
    }
  };
  const schedule = () => {
    if (scheduled) return;
    scheduled = true;
    requestAnimationFrame(measure);
  };
  const observer = new ResizeObserver(schedule);
  observer.observe(document.documentElement);
  observer.observe(document.body);
  schedule();
  return () => observer.disconnect();
}
