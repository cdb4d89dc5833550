import type { ServiceImplementation } from "../../core/service/service.js";
import type { ToolDef } from "../../core/tools/tool.js";
import { isLoopbackUrl } from "../../core/service/settings.js";
import { viewResource } from "../../core/service/views.js";
import { BuildClient } from "./client.js";
import { CreditGuard } from "./credits.js";
import { buildReplies } from "./spend.js";
import type { BuildDeps } from "./deps.js";
import { WrittenSecrets } from "./written-secrets.js";
import { BuildPush } from "./push.js";
import { type BuildSettings, builder } from "./index.js";
import { builderPrompts } from "./prompts.js";
import { builderResources } from "./resources.js";
import type { AgentStatus, ProjectDetails } from "./schemas.js";
import { projectWatcher } from "./subscriptions.js";
import { agentTools } from "./tools/agent.js";
import { fileTools } from "./tools/files.js";
import { githubTools } from "./tools/github.js";
import { billingTools } from "./tools/billing.js";
import { figmaTools } from "./tools/figma.js";
import { logsAndDiffTools } from "./tools/logs-and-diff.js";
import { operationTools } from "./tools/operations.js";
import { webhookTools } from "./tools/webhooks.js";
import { projectTools } from "./tools/projects.js";
import { databaseTools } from "./tools/database.js";
import { transferTools } from "./tools/transfer.js";
import { groupTools } from "./tools/groups.js";
import { projectAdminTools } from "./tools/project-admin.js";
import { acceptsDelivery } from "./webhook-payload.js";

/** A secret a call supplies belongs to its project: that project's later outputs are scrubbed of it. */
function scopedToProject(defs: ToolDef<any, any, BuildDeps>[]): ToolDef<any, any, BuildDeps>[] {
  return defs.map((def) => ({ ...def, secretRecord: projectRecord }));
}
const projectRecord = (input: { projectId?: unknown }) =>
  typeof input.projectId === "string" ? `project:${input.projectId}` : undefined;

/** The build service's tools and client (index.ts declares the service). */
export const builderImplementation: ServiceImplementation<BuildSettings, BuildDeps> = {
  acceptsDelivery,
  // Each group is built only when one of its toolsets is on (the default is build alone).
  tools: (on = () => true) =>
    scopedToProject([
      ...(on("build") || on("build_admin") ? projectTools() : []),
      ...(on("build") ? agentTools() : []),
      ...(on("build") || on("build_admin") ? operationTools() : []),
      ...(on("build_admin") ? logsAndDiffTools() : []),
      ...(on("build_figma") ? figmaTools() : []),
      ...(on("build_webhooks") ? webhookTools() : []),
      ...(on("build_billing") ? billingTools() : []),
      ...(on("build_files") ? fileTools() : []),
      ...(on("build_github") ? githubTools() : []),
      ...(on("build_database") ? databaseTools() : []),
      ...(on("build_transfer") ? transferTools() : []),
      ...(on("build_groups") ? groupTools() : []),
      ...(on("build_admin") ? projectAdminTools() : []),
    ]),
  resources: (s) => [
    ...builderResources(),
    ...(builder.views ?? []).map((view) => viewResource(view, { loopback: isLoopbackUrl(s.BUILD_API_BASE_URL) })),
  ],
  prompts: builderPrompts,
  watch: projectWatcher,
  create(s, host) {
    const keyHeader = s.BUILD_API_KEY_HEADER;
    const header =
      keyHeader.toLowerCase() === "authorization"
        ? { authorization: `Bearer ${s.BUILD_API_KEY}` }
        : { [keyHeader]: s.BUILD_API_KEY };
    // The replies price a spend with the cost table the guard read before it (spend.ts).
    const prices = { guard: undefined as CreditGuard | undefined };
    const envelope = buildReplies((key) => prices.guard?.price(key));
    const http = host.upstream({ baseUrl: s.BUILD_API_BASE_URL, headers: header, envelope });
    const client = new BuildClient(http);
    const pollOptions = { intervalMs: s.BUILD_POLL_INTERVAL_MS, logger: host.logger };
    const push =
      host.push &&
      new BuildPush(
        host.push,
        () => client.webhooks,
        { normalMs: s.BUILD_POLL_INTERVAL_MS, slowMs: s.BUILD_WEBHOOK_POLL_MS },
        host.logger,
      );
    const deps: BuildDeps = {
      client,
      push,
      // Agent runs are what deliveries announce: only their polls slow down while push is healthy.
      agentPoller: host.createPoller<AgentStatus>("agent", (id, signal) => client.getAgentStatus(id, signal), {
        ...pollOptions,
        pace: push?.pace,
      }),
      projectPoller: host.createPoller<ProjectDetails>(
        "project",
        (id, signal) => client.getProject(id, signal),
        pollOptions,
      ),
      rebuildPoller: host.createPoller(
        "rebuild",
        (id, signal) => client.files.getRebuildStatus(id, signal),
        pollOptions,
      ),
      pullPoller: host.createPoller("pull", (id, signal) => client.github.getPullStatus(id, signal), pollOptions),
      guard: (prices.guard = new CreditGuard(client, s.BUILD_CONFIRM_SPEND)),
      writtenSecrets: new WrittenSecrets(),
      sealing: { seal: host.seal, open: host.open },
    };
    if (push) push.pollers = [deps.agentPoller, deps.projectPoller, deps.rebuildPoller, deps.pullPoller];
    return {
      deps,
      taskPollIntervalMs: s.BUILD_POLL_INTERVAL_MS,
      ...(push ? { unlinked: () => push.unsubscribe() } : {}),
      close: () => {
        push?.close();
        return http.close();
      },
    };
  },
};
