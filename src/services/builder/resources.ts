import type { ResourceDef } from "../../core/service/resources.js";
import type { BuildDeps } from "./deps.js";

/** Defined once per process: each read acts with the calling tenant's client (`deps`). */
export function builderResources(): ResourceDef<BuildDeps>[] {
  return [
    {
      name: "build-account",
      uri: "build://account",
      title: "Build account balance",
      description: "Credit balance of the build-service account",
      read: (_uri, _vars, signal, { client }) => client.getAccount(signal),
    },
    {
      name: "build-credit-costs",
      uri: "build://credit-costs",
      title: "Build credit costs",
      description: "Credit price of each paid operation",
      read: (_uri, _vars, signal, { client }) => client.getCreditCosts(signal),
    },
    {
      name: "build-project",
      uri: "build://projects/{projectId}",
      title: "Build project",
      description: "Details of one project (agent, server, deployment, recovery, import)",
      list: async (signal, { client }) =>
        (await client.listProjects({ limit: 100 }, signal)).map((p) => ({
          uri: `build://projects/${String(p.projectId)}`,
          name: String(p.label ?? p.projectId),
          description: typeof p.description === "string" ? p.description.slice(0, 200) : undefined,
        })),
      complete: {
        projectId: async (value, { client }) => {
          const projects = await client.listProjects({ limit: 100, ...(value ? { search: value } : {}) });
          return projects.map((p) => String(p.projectId)).filter((id) => id.startsWith(value));
        },
      },
      read: (_uri, { projectId }, signal, { client }) => client.getProject(projectId, signal),
      secretRecord: ({ projectId }) => `project:${projectId}`,
    },
  ];
}
