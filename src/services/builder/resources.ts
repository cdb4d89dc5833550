import { ResourceTemplate, type McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { decodeVariable, jsonResource } from "../../core/resources.js";
import type { BuildClient } from "./client.js";

export function registerBuildResources(server: McpServer, client: BuildClient): void {
  server.registerResource(
    "build-account",
    "build://account",
    { title: "Build account balance", description: "Credit balance of the build-service account", mimeType: "application/json" },
    (uri) => jsonResource(uri, () => client.getAccount()),
  );
  server.registerResource(
    "build-credit-costs",
    "build://credit-costs",
    { title: "Build credit costs", description: "Credit price of each paid operation", mimeType: "application/json" },
    (uri) => jsonResource(uri, () => client.getCreditCosts()),
  );
  server.registerResource(
    "build-project",
    new ResourceTemplate("build://projects/{projectId}", {
      list: async () => {
        const projects = await client.listProjects({ limit: 100 });
        return {
          resources: projects.map((p) => ({
            uri: `build://projects/${String(p.projectId)}`,
            name: String(p.label ?? p.projectId),
            description: typeof p.description === "string" ? p.description.slice(0, 200) : undefined,
            mimeType: "application/json",
          })),
        };
      },
      complete: {
        projectId: async (value) => {
          const projects = await client.listProjects({ limit: 100, ...(value ? { search: value } : {}) });
          return projects.map((p) => String(p.projectId)).filter((id) => id.startsWith(value)).slice(0, 100);
        },
      },
    }),
    { title: "Build project", description: "Details of one project (agent, server, deployment, recovery, import)", mimeType: "application/json" },
    (uri, { projectId }) => jsonResource(uri, () => client.getProject(decodeVariable(uri, projectId))),
  );
}
