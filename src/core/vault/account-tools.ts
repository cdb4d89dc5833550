import { z } from "zod";
import { toolsWith, ToolError, type ToolDef } from "../tools/tool.js";
import { ACCOUNT_TOOLSET } from "./account-toolset.js";
import type { LinkedKey } from "./vault.js";

/** What the account tools act on: the calling user's own linked keys. */
export interface AccountDeps {
  linked(): Promise<LinkedKey[]>;
  unlink(service: string): Promise<boolean>;
}

const linkedService = z.object({
  service: z.string(),
  title: z.string(),
  linked: z.boolean(),
  lastFour: z.string().optional(),
  linkedAt: z.string().optional(),
});

const defineTool = toolsWith<AccountDeps>();

/** Toolset `account` (ENV.credentials=linked): which keys the user linked, and unlinking one. */
export function accountTools(
  services: ReadonlyArray<{ name: string; title: string }>,
): ToolDef<any, any, AccountDeps>[] {
  const names = services.map((s) => s.name) as [string, ...string[]];
  const titleOf = (name: string) => services.find((s) => s.name === name)?.title ?? name;
  return [
    defineTool({
      name: "account_linked_services",
      title: "Linked services",
      description:
        "Which upstream services you have linked a key for (last four characters only, never the " +
        "key). A tool of a service you have not linked asks you to link it through a page.",
      toolset: ACCOUNT_TOOLSET,
      kind: "read",
      input: {},
      output: z.object({ services: z.array(linkedService) }),
      run: async (_input, { deps }) => {
        const linked = new Map((await deps.linked()).map((k) => [k.service, k]));
        return {
          services: services.map((s) => ({
            service: s.name,
            title: s.title,
            linked: linked.has(s.name),
            ...(linked.has(s.name)
              ? { lastFour: linked.get(s.name)!.lastFour, linkedAt: linked.get(s.name)!.linkedAt }
              : {}),
          })),
        };
      },
      render: (out) =>
        out.services
          .map(
            (s) =>
              `${s.service}: ${s.linked ? `linked (key ending ${s.lastFour}, since ${s.linkedAt})` : "not linked"}`,
          )
          .join("\n"),
    }),
    defineTool({
      name: "account_unlink_service",
      title: "Unlink a service",
      description:
        "Forget the key you linked for one service; its tools ask for a new link next time. To " +
        "rotate a key, unlink, then link again.",
      toolset: ACCOUNT_TOOLSET,
      kind: "destructive",
      input: {
        service: z
          .enum(names, { error: `service must be one of ${names.join(", ")}` })
          .describe("The service whose key to forget"),
      },
      output: z.object({ service: z.string(), unlinked: z.boolean() }),
      run: async ({ service }, { deps }) => {
        const unlinked = await deps.unlink(service);
        if (!unlinked)
          throw new ToolError(`No ${titleOf(service)} key was linked; nothing changed.`, { service, unlinked: false });
        return { service, unlinked };
      },
      render: (out) => `The ${titleOf(out.service)} key is unlinked; its tools will ask for a new link.`,
    }),
  ];
}
