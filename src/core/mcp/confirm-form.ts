import { inputRequired, type ServerContext } from "@modelcontextprotocol/server";
import type { NeedsInput } from "../tools/tool.js";
import type { TenantRuntime } from "./runtime.js";

/** A confirmation the user has not answered yet: ask in-band, with a signed single-use state. */
export async function askForInput(rt: TenantRuntime, need: NeedsInput, ctx: ServerContext) {
  const { title, message } = need.request;
  const confirm = { type: "boolean" as const, title, description: message, default: false };
  const schema = { type: "object" as const, properties: { confirm }, required: ["confirm"] };
  return inputRequired({
    inputRequests: {
      [need.key]: inputRequired.elicit({ message: rt.egress.text(need.request.message), requestedSchema: schema }),
    },
    requestState: await rt.definition.confirmations.mint(need.state as never, ctx),
  });
}
