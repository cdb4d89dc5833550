import type { IncomingMessage } from "node:http";
import { isInitializeRequest } from "@modelcontextprotocol/server";
import { classifyPost, leanRequest, type LeanRequest } from "./modern.js";
import { type Admitted, type Refusal, rpcRefusal, send } from "./pipeline.js";

/** Where an admitted request goes: a 2025 session's, or one of the 2026 (stateless) paths. */
export type Route =
  /** 2025: a request of an open session (any method: POST, the GET stream, DELETE). */
  | { to: "session"; id: string }
  /** 2025: an initialize without a session, which opens one. */
  | { to: "initialize" }
  /** 2025: anything else without a session. */
  | { to: "refused"; refusal: Refusal }
  /** 2026: tools/call or tasks/* past every check the SDK's entry makes (modern.ts). */
  | { to: "lean"; lean: LeanRequest }
  /** 2026: a subscriptions/listen stream. */
  | { to: "listen" }
  /** 2026: anything else, and every malformed request: the SDK's entry answers it. */
  | { to: "modern" };

/**
 * The era decision, from the request's headers and parsed body. The SDK's classification runs
 * once: what `isLegacyRequest` and `createMcpHandler`'s routing both run. `plainTool` (modern.ts
 * plainToolsOf) says whether a tool may take the lean path.
 */
export function routeByEra(req: IncomingMessage, body: unknown, plainTool: (name: string) => boolean): Route {
  const sessionId = req.headers["mcp-session-id"];
  if (typeof sessionId === "string") return { to: "session", id: sessionId };
  const outcome = req.method === "POST" ? classifyPost(req, body) : undefined;
  if (outcome?.kind === "legacy") {
    if (isInitializeRequest(body)) return { to: "initialize" };
    const message = "Bad request: no mcp-session-id header, and the body is not an initialize request";
    return { to: "refused", refusal: rpcRefusal(400, -32000, message) };
  }
  const lean = outcome && leanRequest(req, outcome, plainTool);
  if (lean) return { to: "lean", lean };
  return (body as { method?: unknown } | undefined)?.method === "subscriptions/listen"
    ? { to: "listen" }
    : { to: "modern" };
}

/** The handlers of each path: sessions.ts (2025), stateless.ts (2026). Each answers the request. */
export interface EraHandlers {
  session(a: Admitted, id: string): Promise<void>;
  initialize(a: Admitted): Promise<void>;
  lean(a: Admitted, lean: LeanRequest): Promise<void>;
  listen(a: Admitted): Promise<void>;
  modern(a: Admitted): Promise<void>;
}

/** Hands an admitted request to the handler of its route. */
export function dispatch(a: Admitted, route: Route, handlers: EraHandlers): Promise<void> {
  switch (route.to) {
    case "session":
      return handlers.session(a, route.id);
    case "initialize":
      return handlers.initialize(a);
    case "refused":
      return Promise.resolve(send(a.res, route.refusal));
    case "lean":
      return handlers.lean(a, route.lean);
    case "listen":
      return handlers.listen(a);
    case "modern":
      return handlers.modern(a);
  }
}
