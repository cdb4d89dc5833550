import type { Config } from "../../config.js";
import { registerServiceHints } from "../../core/errors.js";
import type { Logger } from "../../core/logger.js";
import type { Service } from "../../core/service.js";
import { UpstreamClient } from "../../core/upstream.js";
import { SharedPoller } from "../../core/poller.js";
import { BuildClient } from "./client.js";
import { CreditGuard } from "./credits.js";
import type { AgentStatus, ProjectDetails } from "./schemas.js";
import { projectWatcher } from "./subscriptions.js";
import type { WaitDeps } from "./waits.js";
import { registerBuildPrompts } from "./prompts.js";
import { registerBuildResources } from "./resources.js";
import { agentTools } from "./tools/agent.js";
import { operationTools } from "./tools/operations.js";
import { projectTools } from "./tools/projects.js";

export interface BuildDeps extends WaitDeps {
  guard: CreditGuard;
}

registerServiceHints("build", "BUILD_API_KEY", {
  INSUFFICIENT_CREDITS: "the balance is too low: check build_get_account and build_get_credit_costs, and top up before retrying.",
  MAX_PROJECTS_REACHED: "the plan's project limit is in use: delete a project (build_delete_project) or upgrade the plan.",
  PROJECT_ALREADY_EXISTS: "the id and six suffixed variants are taken: choose a different projectId.",
  RATE_LIMIT_EXCEEDED: "projects are being created faster than the plan allows: wait a minute, then retry once.",
  RATE_LIMITED: "too many design token checks (10 per minute): wait a minute, then retry.",
  DESIGN_RATE_LIMITED: "the design tool is rate-limiting the token check: retry shortly.",
  DESIGN_UNREACHABLE: "the design tool could not be reached: retry shortly, or launch without design.",
  DESIGN_TOKEN_INVALID: "the design tool rejected the token: create a new personal access token.",
  DESIGN_TOKEN_FORBIDDEN: "the token lacks required scopes: create one with file read access.",
  DESIGN_TOKEN_MALFORMED: "the value is not a design tool personal access token: copy the whole token.",
  INVALID_PROJECT_GROUP: "the group does not exist, is not yours, or is full: omit groupId or pick another group.",
  AGENT_RUNNING: "an agent run is active: wait for it with build_wait { until: \"agent\" } or stop it with build_stop_agent.",
  DEPLOYMENT_RUNNING: "a deployment is running: wait for it with build_wait { until: \"deployment\" }.",
  RECOVERY_RUNNING: "a version recovery is running: wait for it with build_wait { until: \"versionRecovery\" }.",
  SERVER_NOT_READY: "the dev server was down and is being started (START_SERVER was charged): wait a minute, then deploy again.",
  PROJECT_NOT_FOUND: "no project has that id: call build_list_projects to find it.",
  LAUNCH_PROJECT_ERROR: "the project could not be created; read the reason above, fix it and launch again.",
});

export function createBuildService(config: Config, logger: Logger): Service {
  const { baseUrl, apiKey, keyHeader } = config.build;
  const header = keyHeader.toLowerCase() === "authorization" ? { authorization: `Bearer ${apiKey}` } : { [keyHeader]: apiKey ?? "" };
  const http = new UpstreamClient({
    service: "build",
    baseUrl,
    headers: header,
    envelope: "errors-data",
    timeoutMs: config.upstreamTimeoutMs,
    logger,
    keyVariable: "BUILD_API_KEY",
  });
  const client = new BuildClient(http);
  const pollOptions = { intervalMs: config.pollIntervalMs, logger };
  const deps: BuildDeps = {
    client,
    agentPoller: new SharedPoller<AgentStatus>((id, signal) => client.getAgentStatus(id, signal), pollOptions),
    projectPoller: new SharedPoller<ProjectDetails>((id, signal) => client.getProject(id, signal), pollOptions),
    guard: new CreditGuard(client, config.confirmSpend),
  };
  return {
    name: "build",
    watchResource: projectWatcher(deps.projectPoller),
    tools: [...projectTools(deps), ...agentTools(deps), ...operationTools(deps)],
    registerResources: (server) => registerBuildResources(server, client),
    registerPrompts: (server) => registerBuildPrompts(server),
    close: () => http.close(),
  };
}
