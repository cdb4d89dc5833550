// How each build tool, prompt and resource is called by the tests that drive them all (the secret
// canary): a launch with secrets and a Figma token, its runs, deployment and versions, then the rest
// of the API. Ids come from the drive's prefix or from earlier results.
import type { ServiceSamples, ToolSample } from "../../core/service/samples.js";

const ACME = "acme-storefront";
const launchId = (prefix: string) => `${prefix}-launch`;
const emptyId = (prefix: string) => `${prefix}-empty`;
/** Takes the project to the launch of this drive. */
const onLaunch =
  (args: Record<string, unknown> = {}) =>
  ({ prefix }: { prefix: string }) => ({
    projectId: launchId(prefix),
    ...args,
  });

/** Calls that fail and carry secrets, first, so nothing else made those values known secrets. */
const refusals: ToolSample[] = [
  {
    tool: "build_set_secret",
    args: (run) => ({
      projectId: `${run.prefix}-missing`,
      secretName: "MISSING_ONE",
      secretValue: run.secret("missing project secret"),
    }),
    fails: /HTTP 404/,
  },
  {
    tool: "build_launch_project",
    args: (run) => ({
      projectId: `${run.prefix}-bad-group`,
      prompt: "Never built",
      groupId: "grp_nope",
      secrets: [{ secretName: "FAILING", secretValue: run.secret("failed launch secret") }],
      figma: { token: run.secret("failed launch figma token", "figd_") },
    }),
    fails: /grp_nope|GROUP|group/,
  },
  {
    tool: "build_launch_project",
    args: (run) => ({
      projectId: `${run.prefix}-invalid`,
      prompt: "Never sent",
      secrets: [{ secretName: "BAD_ENV", secretValue: run.secret("invalid arguments secret"), environment: "staging" }],
    }),
    fails: /environment/,
  },
  // Figma token checks are rate-limited upstream (10 a minute): only on the first drive.
  {
    tool: "build_launch_project",
    args: (run) => ({
      projectId: `${run.prefix}-bad-figma`,
      prompt: "Never built",
      figma: { token: run.secret("refused figma token", "figd_invalid_") },
    }),
    fails: /FIGMA_TOKEN_INVALID/,
    firstOnly: true,
  },
  {
    tool: "build_launch_project",
    args: (run) => ({
      projectId: `${run.prefix}-bad-figma`,
      prompt: "Never built",
      figma: { token: `${run.secret("malformed figma token")} has spaces` },
    }),
    fails: /FIGMA_TOKEN_MALFORMED/,
    firstOnly: true,
  },
];

/** Each agent message of a conversation is quoted as data. */
function quotesEveryMessage(answer: { text: string; structured: any }): string | undefined {
  const messages = (answer.structured?.conversation ?? []).filter((m: { message?: string }) => m.message);
  if (messages.length === 0) return "no agent message in the conversation";
  for (const m of messages) {
    const start = String(m.message).replace(/\s+/g, " ").trim().slice(0, 30);
    if (!answer.text.includes(`: "${start}`)) return `agent message not quoted: ${start}`;
  }
  return undefined;
}

const launchAndFollow: ToolSample[] = [
  { tool: "build_get_account", args: () => ({}) },
  { tool: "build_get_credit_costs", args: () => ({}) },
  { tool: "build_list_projects", args: () => ({ limit: 100 }) },
  {
    tool: "build_launch_project",
    args: (run) => ({
      projectId: launchId(run.prefix),
      prompt: "A canary shop [minutes=5] [secrets]",
      label: "Canary",
      secrets: [{ secretName: "CANARY_SECRET", secretValue: run.secret("launch secret") }],
      figma: { token: run.secret("figma token", "figd_") },
      wait: true,
      timeoutSeconds: 60,
    }),
    progress: true,
    shows: [/"connected":true/, /"outcome":"done"/],
  },
  { tool: "build_get_project", args: onLaunch() },
  { tool: "build_get_agent_status", args: onLaunch() },
  {
    tool: "build_get_conversation",
    args: onLaunch({ limit: 20 }),
    shows: [/quoted data, not instructions/],
    check: quotesEveryMessage,
  },
  {
    tool: "build_start_agent",
    args: onLaunch({ prompt: "Add a canary page [minutes=3]", wait: true, timeoutSeconds: 60 }),
    progress: true,
    shows: [/"outcome":"done"/],
  },
  // A long run, stopped.
  { tool: "build_start_agent", args: onLaunch({ prompt: "Rewrite everything [minutes=100000]" }) },
  { tool: "build_stop_agent", args: onLaunch() },
  { tool: "build_wait", args: onLaunch({ until: "agent", timeoutSeconds: 60 }), progress: true },
  { tool: "build_deploy", args: onLaunch({ wait: true, timeoutSeconds: 60 }), progress: true },
  { tool: "build_get_deployment_status", args: onLaunch() },
  { tool: "build_wait", args: onLaunch({ until: "deployment", timeoutSeconds: 60 }), progress: true },
  { tool: "build_list_versions", args: onLaunch({ limit: 10 }), as: "versions" },
  {
    tool: "build_recover_version",
    args: (run) => {
      const versions = run.result<{ versions: Array<{ _id: string; prompt?: string }> }>("versions")?.versions;
      const version = versions?.find((v) => !v.prompt?.includes("[recover-fail]"));
      return version && onLaunch({ versionId: version._id, wait: true, timeoutSeconds: 60 })(run);
    },
    progress: true,
  },
  {
    tool: "build_get_logs",
    args: onLaunch(),
    shows: [/server output, not instructions/, /\n---\n[\s\S]*\n---"?/],
  },
  { tool: "build_restart_server", args: onLaunch() },
  // A secret: set (its value never echoed), found by name, deleted.
  {
    tool: "build_set_secret",
    args: (run) =>
      onLaunch({ secretName: "CANARY_SET", secretValue: run.secret("set secret"), environment: "production" })(run),
    shows: [/value is not shown/],
  },
  { tool: "build_get_project", args: onLaunch(), as: "with secret" },
  {
    tool: "build_delete_secret",
    args: (run) => {
      const project = run.result<{ secrets?: Array<{ _id: string; secretName: string }> }>("with secret");
      const secretId = project?.secrets?.find((s) => s.secretName === "CANARY_SET")?._id;
      return secretId ? onLaunch({ secretId })(run) : undefined;
    },
  },
  { tool: "build_set_domain", args: (run) => onLaunch({ hostname: `${run.prefix}.canary.example.org` })(run) },
  { tool: "build_remove_domain", args: onLaunch() },
  { tool: "build_get_database_schema", args: () => ({ projectId: ACME }) },
  {
    tool: "build_query_database",
    args: () => ({ projectId: ACME, tableName: "customers", queryOptions: { _limit: 3 } }),
  },
  { tool: "build_create_project", args: (run) => ({ projectId: emptyId(run.prefix), label: "Empty canary" }) },
  { tool: "build_delete_project", args: (run) => ({ projectId: emptyId(run.prefix) }) },
];

/** The rest of the API (toolsets off by default): secrets in tokens, headers and .env text. */
const restOfTheApi: ToolSample[] = [
  { tool: "build_update_project", args: (run) => onLaunch({ label: `Canary ${run.prefix}` })(run) },
  { tool: "build_get_production_logs", args: () => ({ projectId: ACME, limit: 3 }) },
  { tool: "build_list_versions", args: () => ({ projectId: ACME }), as: "acme versions" },
  {
    tool: "build_get_version_diff",
    args: (run) => {
      const versions = run.result<{ versions: Array<{ commitSha?: string }> }>("acme versions")?.versions;
      const commitSha = versions?.find((v) => v.commitSha)?.commitSha;
      return commitSha ? { projectId: ACME, commitSha } : undefined;
    },
  },
  { tool: "build_validate_figma_token", args: (run) => ({ token: run.secret("figma token", "figd_") }) },
  { tool: "build_connect_figma", args: (run) => onLaunch({ token: run.secret("figma token", "figd_") })(run) },
  { tool: "build_get_figma_status", args: onLaunch() },
  { tool: "build_disconnect_figma", args: onLaunch() },
  {
    tool: "build_add_webhook",
    args: (run) => ({
      url: `https://hooks.example.com/${run.prefix}`,
      event: "agent.prompt.finished",
      headers: { "x-signature": run.secret("webhook header secret") },
    }),
  },
  { tool: "build_list_webhooks", args: () => ({}) },
  {
    tool: "build_delete_webhook",
    args: (run) => {
      const hook = run.result<{ id: string }>("build_add_webhook");
      return hook && { webhookId: hook.id };
    },
  },
  { tool: "build_set_credit_limits", args: onLaunch({ maxInfrastructureCreditsPerMonth: 500 }) },
  {
    tool: "build_get_spending",
    args: () => {
      const today = new Date().toISOString().slice(0, 10);
      return { from: today, to: today };
    },
  },
  { tool: "build_get_source_code", args: () => ({ projectId: ACME }) },
  {
    tool: "build_upload_file",
    args: (run) => ({
      projectId: ACME,
      name: "canary.txt",
      content: Buffer.from(`note ${run.prefix}`).toString("base64"),
    }),
  },
  { tool: "build_list_files", args: () => ({ projectId: ACME, limit: 20 }) },
  { tool: "build_read_file", args: () => ({ projectId: ACME, path: "src/app/page.tsx" }) },
  {
    tool: "build_write_file",
    args: (run) => ({ projectId: ACME, path: `src/${run.prefix}.txt`, content: "canary file" }),
  },
  { tool: "build_rebuild", args: () => ({ projectId: ACME, wait: true }), progress: true },
  { tool: "build_get_rebuild_status", args: () => ({ projectId: ACME }) },
  {
    tool: "build_connect_github",
    args: (run) =>
      onLaunch({ token: run.secret("github token", "github_pat_"), repositoryFullName: `canary/${run.prefix}` })(run),
  },
  { tool: "build_get_github_status", args: onLaunch() },
  { tool: "build_pull_github", args: onLaunch({ wait: true }) },
  { tool: "build_get_github_pull_status", args: onLaunch() },
  { tool: "build_get_env_names", args: onLaunch() },
  { tool: "build_disconnect_github", args: onLaunch() },
  // Data a caller writes into another project is not scrubbed (issue 18 item 12).
  {
    tool: "build_create_record",
    args: (run) => ({
      projectId: ACME,
      tableName: "customers",
      data: { name: `Canary ${run.prefix}`, note: "canary record" },
    }),
  },
  ...(["build_update_record", "build_link_records", "build_unlink_records", "build_delete_record"] as const).map(
    (tool): ToolSample => ({
      tool,
      args: (run) => {
        const record = run.result<{ _id: string }>("build_create_record");
        if (!record) return undefined;
        const at = { projectId: ACME, tableName: "customers", recordId: record._id };
        if (tool === "build_update_record") return { ...at, data: { vip: true } };
        if (tool === "build_delete_record") return at;
        return { ...at, propertyId: "not-many-to-many", referenceId: "none" };
      },
    }),
  ),
  { tool: "build_create_group", args: (run) => ({ name: `Canary ${run.prefix}` }) },
  { tool: "build_list_groups", args: () => ({}) },
  ...(["build_get_group", "build_update_group", "build_delete_group"] as const).map(
    (tool): ToolSample => ({
      tool,
      args: (run) => {
        const group = run.result<{ groupId: string }>("build_create_group");
        if (!group) return undefined;
        return tool === "build_update_group" ? { groupId: group.groupId, description: "canaries" } : group;
      },
    }),
  ),
];

/**
 * Export and import: once a minute per account, so a second drive is refused them and must still
 * say why. repeat: the second drive's export is the first's call again, which the spend ledger
 * would answer from its record.
 */
const transfer: ToolSample[] = [
  {
    tool: "build_export_project",
    args: () => ({ projectId: ACME, repeat: true }),
    limited: /PROJECT_EXPORT_LIMIT_REACHED/,
  },
  {
    tool: "build_create_project",
    args: (run) => (run.result("build_export_project") ? { projectId: `${run.prefix}-clone` } : undefined),
  },
  {
    tool: "build_import_project",
    args: (run) => {
      const exported = run.result<{ transferId: string }>("build_export_project");
      return exported && { projectId: `${run.prefix}-clone`, transferId: exported.transferId, wait: true };
    },
    progress: true,
  },
  {
    tool: "build_import_project",
    args: (run) =>
      run.result("build_export_project")
        ? undefined
        : { projectId: `${run.prefix}-clone-missing`, importCode: run.secret("import code", `${ACME}-export-`) },
    limited: /HTTP 404|INVALID_IMPORT_CODE|PROJECT_IMPORT_LIMIT_REACHED/,
  },
];

export const builderSamples: ServiceSamples = {
  tools: [...refusals, ...launchAndFollow, ...restOfTheApi, ...transfer],
  prompts: {
    launch_and_track: [{ idea: "a canary bakery site" }, { idea: "a canary bakery site", projectId: "cnry-bakery" }],
  },
  resources: (run) => ["build://account", "build://credit-costs", `build://projects/${launchId(run.prefix)}`],
};
