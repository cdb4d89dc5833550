import { randomUUID } from "node:crypto";
import {
  inputRequired,
  inputResponse,
  UrlElicitationRequiredError,
  type CallToolResult,
  type InputRequiredResult,
  type McpServer,
  type ServerContext,
} from "@modelcontextprotocol/server";
import { envelopeCapabilities } from "./envelope.js";
import type { TenantRuntime } from "./runtime.js";
import type { ToolDef } from "../tools/tool.js";
import { TICKET_TTL_MS } from "../vault/tickets.js";

/** One tenant's linked keys as a tool call sees them (ENV.credentials=linked). */
export interface Linking {
  /** The service whose key a tool acts with, when that key is linked per user. */
  serviceOf(def: ToolDef<any, any>): { name: string; title: string } | undefined;
  /** Reads the tenant's linked keys, puts them to use, and says whether `service` has one. */
  ensure(service: string): Promise<boolean>;
  /** A fresh single-use link to the connect page, bound to this tenant, the service and the elicitation. */
  link(service: string, elicitationId: string): Promise<string>;
  /** The service's key was linked, and the store lost it since (Redis restarted without it). */
  lost?(service: string): boolean;
}

/** What a link round trip carries in its signed requestState. */
interface LinkState {
  kind: "link";
  service: string;
  elicitationId: string;
  until: number;
}

/** How often a parked call looks for the key the user is linking. */
const POLL_MS = 500;

const inputKey = (service: string) => `link_${service}`;

/**
 * Before a tool that needs a linked key runs: when the caller has not linked it, ask them to, in
 * their browser (URL-mode elicitation), never in the chat. The call goes on once the key is there:
 * on 2025-11-25 the SDK's shim sends elicitation/create and re-enters here, where the call waits
 * for the link and then notifies notifications/elicitation/complete; on 2026-07-28 the client
 * retries with the answer and the retry finds the key (or waits briefly for it). A client that
 * cannot open URLs gets URLElicitationRequiredError (-32042) on 2025, an isError result with the
 * link on 2026-07-28 (which has no such error). Undefined: go on with the call.
 */
export async function linkGate(
  server: McpServer,
  rt: TenantRuntime,
  def: ToolDef<any, any>,
  ctx: ServerContext,
): Promise<CallToolResult | InputRequiredResult | undefined> {
  const service = rt.linking?.serviceOf(def);
  if (!rt.linking || !service) return undefined;
  const linking = rt.linking;
  const modern = ctx.mcpReq.envelope !== undefined;
  const state = ctx.mcpReq.requestState<LinkState | Record<string, unknown> | string>();
  const returning = typeof state === "object" && state?.kind === "link" && state.service === service.name;
  if (await linking.ensure(service.name)) {
    if (returning && !modern) await notifyComplete(server, (state as LinkState).elicitationId);
    return undefined;
  }
  if (returning) {
    const answer = inputResponse(ctx.mcpReq.inputResponses, inputKey(service.name));
    if (answer.kind === "elicit" && answer.action !== "accept") {
      const how = answer.action === "decline" ? "declined" : "dismissed";
      return refusal(
        `No ${service.title} key was linked (the link was ${how}); nothing was sent upstream. ` +
          `Call ${def.name} again to get a new link.`,
      );
    }
    const link = state as LinkState;
    if (await waitForLink(linking, service.name, ctx.mcpReq.signal, link.until)) {
      if (!modern) await notifyComplete(server, link.elicitationId);
      return undefined;
    }
    return refusal(
      `The ${service.title} key was not linked in time; nothing was sent upstream. ` +
        `Call ${def.name} again for a new link (each works once, for ${TICKET_TTL_MS / 60_000} minutes).`,
    );
  }

  const elicitationId = randomUUID();
  const url = await linking.link(service.name, elicitationId);
  const message =
    (linking.lost?.(service.name)
      ? `Your ${service.title} key is no longer linked: the server's store restarted and lost it. `
      : "") +
    `${def.title} needs your ${service.title} API key. Open this page to link it: ` +
    "you paste it there, so it never passes through this chat. The call goes on once it is linked.";
  if (canOpenUrls(server, ctx, modern)) {
    const next: LinkState = { kind: "link", service: service.name, elicitationId, until: Date.now() + TICKET_TTL_MS };
    return inputRequired({
      // 2025-11-25 names the elicitation (the completion notice refers to it); 2026-07-28 has no such id.
      inputRequests: {
        [inputKey(service.name)]: inputRequired.elicitUrl({ message, url, ...(modern ? {} : { elicitationId }) } as {
          message: string;
          url: string;
        }),
      },
      requestState: await rt.definition.confirmations.mint(next as never, ctx),
    });
  }
  if (!modern) throw new UrlElicitationRequiredError([{ mode: "url", message, url, elicitationId }]);
  return refusal(
    `${message}\n\n${url}\n\nThe link works once, for ${TICKET_TTL_MS / 60_000} minutes; ` +
      `the user opens it in a browser (never type the key into the chat). Then call ${def.name} again.`,
  );
}

function canOpenUrls(server: McpServer, ctx: ServerContext, modern: boolean): boolean {
  const caps = modern ? envelopeCapabilities(ctx) : server.server.getClientCapabilities();
  return (caps?.elicitation as { url?: unknown } | undefined)?.url !== undefined;
}

async function waitForLink(linking: Linking, service: string, signal: AbortSignal, until: number): Promise<boolean> {
  for (;;) {
    if (await linking.ensure(service)) return true;
    if (signal.aborted || Date.now() > until) return false;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

async function notifyComplete(server: McpServer, elicitationId: string): Promise<void> {
  try {
    await server.server.createElicitationCompletionNotifier(elicitationId)();
  } catch {
    // the client went away, or never declared URL mode: the call goes on all the same
  }
}

function refusal(text: string): CallToolResult {
  return { content: [{ type: "text", text }], isError: true };
}
