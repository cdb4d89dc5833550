// Goal 2: context cost. The tools/list answer, as sent on the wire, in o200k tokens.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { countTokens } from "gpt-tokenizer/encoding/o200k_base";
import { CLI, NODE, bridge, bridgeEnv, everything } from "./lib.mjs";

export const TOOLSETS = ["build", "build_admin", "sizing", "drones"];

/**
 * The bridge tool that does the same upstream operation as a switchboard-mcp tool (names as
 * openapi-mcp-server 1.16.1 abbreviates the operationIds of docs/openapi/*.yaml). build_wait,
 * drones_fleet_summary and drones_find_nearest have no single upstream operation.
 */
export const BRIDGE_EQUIVALENT = {
  build_get_account: "get-acct-info",
  build_get_credit_costs: "get-credit-costs",
  build_list_projects: "lst-projects",
  build_get_project: "get-project-details",
  build_create_project: "crt-project-without-building",
  build_launch_project: "launch-project",
  build_start_agent: "start-agent",
  build_get_agent_status: "get-agent-status",
  build_get_conversation: "get-full-conversation",
  build_stop_agent: "stop-agent",
  build_deploy: "deploy-project",
  build_get_deployment_status: "get-deployment-status",
  build_delete_project: "del-project",
  build_list_versions: "lst-versions",
  build_recover_version: "recover-ver",
  build_get_logs: "get-dev-server-logs",
  build_restart_server: "start-or-restart-server",
  build_set_secret: "crt-secret",
  build_delete_secret: "del-secret",
  build_set_domain: "set-custom-domain",
  build_remove_domain: "remove-custom-domain",
  build_get_database_schema: "get-database-tables-structure",
  build_query_database: "qry-database",
  build_update_project: "upd-project",
  build_set_credit_limits: "set-credit-limits",
  build_get_spending: "get-spending-analytics",
  build_get_production_logs: "get-production-logs",
  build_get_version_diff: "get-ver-diff",
  build_create_record: "crt-record",
  build_update_record: "upd-record",
  build_delete_record: "del-record",
  build_link_records: "link-records",
  build_unlink_records: "unlink-records",
  build_get_source_code: "get-source-code",
  build_upload_file: "upload-file",
  build_list_files: "get-file-tree",
  build_read_file: "get-file-content",
  build_write_file: "write-file-content",
  build_rebuild: "rebuild-project",
  build_get_rebuild_status: "get-rebuild-status",
  build_connect_github: "connect-github",
  build_disconnect_github: "disconnect-github",
  build_get_github_status: "get-github-status",
  build_pull_github: "pull-github",
  build_get_github_pull_status: "get-github-pull-status",
  build_get_env_names: "get-github-env",
  build_connect_figma: "connect-figma",
  build_get_figma_status: "get-figma-status",
  build_disconnect_figma: "disconnect-figma",
  build_validate_figma_token: "validate-figma-token",
  build_add_webhook: "crt-webhook",
  build_list_webhooks: "lst-webhooks",
  build_delete_webhook: "del-webhook",
  build_export_project: "export-project",
  build_import_project: "import-project",
  build_create_group: "crt-project-grp",
  build_list_groups: "lst-project-grps",
  build_get_group: "get-project-grp",
  build_update_group: "upd-project-grp",
  build_delete_group: "del-project-grp",
  sizing_get_catalog: "get-catalog",
  sizing_recommend_size: "recommend-size",
  sizing_create_try_on: "crt-try-on",
  drones_list_drones: "lst-drones",
  drones_get_drone: "get-drone",
  drones_list_missions: "lst-missions",
  drones_get_mission: "get-mission",
  drones_list_alerts: "lst-alerts",
  drones_get_alert: "get-alert",
  drones_update_alert: "upd-alert",
  drones_list_api_keys: "lst-keys",
};

/** Every tools/list page exactly as the server sent it (the SDK client would drop unknown keys). */
async function wireToolsList(command, args, env) {
  const transport = new StdioClientTransport({
    command,
    args,
    env: env ?? { PATH: process.env.PATH ?? "" },
    stderr: "ignore",
  });
  const client = new Client({ name: "switchboard-bench", version: "1.0.0" });
  await client.connect(transport);
  const pages = [];
  const onmessage = transport.onmessage;
  transport.onmessage = (message, extra) => {
    if (message?.result?.tools) pages.push(message.result);
    onmessage?.(message, extra);
  };
  let cursor;
  do {
    const r = await client.listTools(cursor ? { cursor } : undefined);
    cursor = r.nextCursor;
  } while (cursor);
  await client.close();
  return pages;
}

const tokens = (value) => countTokens(typeof value === "string" ? value : JSON.stringify(value));

function analyse(pages) {
  const tools = pages.flatMap((p) => p.tools);
  const total = pages.reduce((sum, p) => sum + tokens(p), 0);
  const perTool = tools.map((t) => {
    const { description, inputSchema, outputSchema, annotations, ...rest } = t;
    return {
      name: t.name,
      tokens: tokens(t),
      description: description ? tokens(description) : 0,
      inputSchema: inputSchema ? tokens(inputSchema) : 0,
      outputSchema: outputSchema ? tokens(outputSchema) : 0,
      annotations: annotations ? tokens(annotations) : 0,
      other: tokens(rest),
    };
  });
  const parts = Object.fromEntries(
    ["description", "inputSchema", "outputSchema", "annotations"].map((k) => [
      k,
      perTool.reduce((s, t) => s + t[k], 0),
    ]),
  );
  return { tools: tools.length, total, perToolAverage: total / Math.max(1, tools.length), parts, perTool };
}

/** What a host forwards to the model for one tool: its name, description and input schema. */
const modelTokens = (pages) =>
  pages
    .flatMap((p) => p.tools)
    .reduce((sum, t) => sum + tokens({ name: t.name, description: t.description, inputSchema: t.inputSchema }), 0);

export async function contextCost({ sandbox, log }) {
  const result = {};
  // switchboard-mcp: the default toolsets, every toolset, then one run per toolset.
  const defaultPages = await wireToolsList(NODE, [CLI, "--sandbox"]);
  result.defaults = { ...analyse(defaultPages), model: modelTokens(defaultPages) };
  const allPages = await wireToolsList(NODE, [CLI, "--sandbox", "--toolsets", "all"]);
  result.switchboard = { ...analyse(allPages), model: modelTokens(allPages) };
  result.switchboard.toolsets = {};
  for (const ts of TOOLSETS) {
    const a = analyse(await wireToolsList(NODE, [CLI, "--sandbox", "--toolsets", ts]));
    result.switchboard.toolsets[ts] = {
      tools: a.tools,
      total: a.total,
      perToolAverage: a.perToolAverage,
      names: a.perTool.map((t) => t.name),
    };
  }
  log("context cost: switchboard-mcp done");

  const ev = everything();
  result.everything = { version: ev.version, ...analyse(await wireToolsList(NODE, [ev.path, "stdio"])) };

  // The generic OpenAPI bridge, one instance per upstream API, fed docs/openapi/*.yaml.
  const br = bridge();
  result.bridge = { version: br.version, apis: {} };
  const all = [];
  for (const api of ["build", "sizing", "drones"]) {
    const pages = await wireToolsList(NODE, [br.path], bridgeEnv(sandbox, api));
    all.push(...pages);
    const a = analyse(pages);
    result.bridge.apis[api] = { tools: a.tools, total: a.total, perToolAverage: a.perToolAverage };
  }
  Object.assign(result.bridge, analyse(all), { model: modelTokens(all) });
  log("context cost: peers done");

  const s = result.switchboard;
  const bridgeTokens = new Map(result.bridge.perTool.map((t) => [t.name, t.tokens]));
  for (const t of s.perTool)
    t.bridgeEquivalent = BRIDGE_EQUIVALENT[t.name]
      ? { name: BRIDGE_EQUIVALENT[t.name], tokens: bridgeTokens.get(BRIDGE_EQUIVALENT[t.name]) }
      : undefined;
  const d = result.defaults;
  const perToolAll = s.model / Math.max(1, s.tools);
  const bridgeModelPerTool = result.bridge.model / Math.max(1, result.bridge.tools);
  result.goals = {
    defaultsModel: {
      text: "default toolsets: name + description + input schema ≤ 4,000 tokens",
      value: d.model,
      met: d.model <= 4000,
    },
    defaultsWhole: {
      text: "default toolsets: the whole tools/list answer ≤ 6,000 tokens",
      value: d.total,
      met: d.total <= 6000,
    },
    allPerTool: {
      text: "--toolsets all: name + description + input schema ≤ 130 tokens per tool",
      value: perToolAll,
      met: perToolAll <= 130,
    },
    modelPerTool: {
      text: "name + description + input schema per tool < the bridge's",
      value: perToolAll,
      bridge: bridgeModelPerTool,
      met: perToolAll < bridgeModelPerTool,
    },
    // Ours carries output schemas and annotations; the bridge's tools have neither.
    perTool: {
      text: "whole tools/list answer per tool < the bridge's",
      value: s.perToolAverage,
      bridge: result.bridge.perToolAverage,
      met: s.perToolAverage < result.bridge.perToolAverage,
    },
  };
  return result;
}
