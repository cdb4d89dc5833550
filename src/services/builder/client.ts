import { pathId } from "../../core/base/path-id.js";
import type { UpstreamClient } from "../../core/upstream/upstream.js";
import { BillingClient } from "./api/billing.js";
import { DatabaseClient } from "./api/database.js";
import { FigmaClient } from "./api/figma.js";
import { FilesClient } from "./api/files.js";
import { GithubClient } from "./api/github.js";
import { GroupsClient } from "./api/groups.js";
import { LogsAndDiffClient } from "./api/logs-and-diff.js";
import { pagingHeaders } from "./api/paging.js";
import { ProjectAdminClient } from "./api/project-admin.js";
import { TransferClient } from "./api/transfer.js";
import { WebhooksClient } from "./api/webhooks.js";
import type { AgentStatus, ConversationMessage, ProjectDetails } from "./schemas.js";

const API = "/api/v1/vcaas";
const p = (projectId: string) => `${API}/projects/${pathId(projectId)}`;

export type Json = Record<string, unknown>;

interface ListProjectsQuery {
  limit?: number;
  skip?: number;
  search?: string;
  sortField?: "date" | "lastModified";
  sortDirection?: "asc" | "desc";
  groupId?: string;
  createdFrom?: string;
  createdTo?: string;
}

/**
 * One typed method per build-service operation (paths per the two build spec files): the projects,
 * the agent, deployments, versions, secrets, domain and database reads here; every other area in
 * its own client under api/, reached as a property (`client.groups.createGroup(...)`), made on first use.
 */
export class BuildClient {
  private _billing?: BillingClient;
  private _database?: DatabaseClient;
  private _figma?: FigmaClient;
  private _files?: FilesClient;
  private _github?: GithubClient;
  private _groups?: GroupsClient;
  private _logsAndDiff?: LogsAndDiffClient;
  private _projectAdmin?: ProjectAdminClient;
  private _transfer?: TransferClient;
  private _webhooks?: WebhooksClient;

  constructor(readonly http: UpstreamClient) {}

  // Each area's client is made on its first call: most tenants never reach most areas.
  get billing(): BillingClient {
    this._billing ??= new BillingClient(this.http);
    return this._billing;
  }
  get database(): DatabaseClient {
    this._database ??= new DatabaseClient(this.http);
    return this._database;
  }
  get figma(): FigmaClient {
    this._figma ??= new FigmaClient(this.http);
    return this._figma;
  }
  get files(): FilesClient {
    this._files ??= new FilesClient(this.http);
    return this._files;
  }
  get github(): GithubClient {
    this._github ??= new GithubClient(this.http);
    return this._github;
  }
  get groups(): GroupsClient {
    this._groups ??= new GroupsClient(this.http);
    return this._groups;
  }
  get logsAndDiff(): LogsAndDiffClient {
    this._logsAndDiff ??= new LogsAndDiffClient(this.http);
    return this._logsAndDiff;
  }
  get projectAdmin(): ProjectAdminClient {
    this._projectAdmin ??= new ProjectAdminClient(this.http);
    return this._projectAdmin;
  }
  get transfer(): TransferClient {
    this._transfer ??= new TransferClient(this.http);
    return this._transfer;
  }
  get webhooks(): WebhooksClient {
    this._webhooks ??= new WebhooksClient(this.http);
    return this._webhooks;
  }

  getAccount(signal?: AbortSignal) {
    return this.http.request<{ credits: number; recurrentCredits?: number; oneTimeCredits?: number }>({
      method: "GET",
      path: `${API}/account`,
      signal,
    });
  }
  getCreditCosts(signal?: AbortSignal) {
    return this.http.request<{ creditCosts: Record<string, number> }>({
      method: "GET",
      path: `${API}/credit-costs`,
      signal,
    });
  }
  listProjects(query: ListProjectsQuery, signal?: AbortSignal) {
    return this.http.request<Json[]>({ method: "GET", path: `${API}/projects`, query: { ...query }, signal });
  }
  /** A page of projects with the paging headers (X-Total-Count, X-Has-More, X-Limit, X-Skip). */
  async listProjectsPage(query: ListProjectsQuery, signal?: AbortSignal) {
    const { data, headers } = await this.http.requestFull<Json[]>({
      method: "GET",
      path: `${API}/projects`,
      query: { ...query },
      signal,
    });
    return { projects: data, ...pagingHeaders(headers) };
  }
  getProject(projectId: string, signal?: AbortSignal) {
    return this.http.request<ProjectDetails>({ method: "GET", path: p(projectId), signal });
  }
  createProject(body: Json, signal?: AbortSignal) {
    return this.http.request<Json>({ method: "POST", path: `${API}/projects`, body, signal });
  }
  launchProject(body: Json, signal?: AbortSignal) {
    return this.http.request<Json & { projectId: string; agent?: { started: boolean } }>({
      method: "POST",
      path: `${API}/projects/launch`,
      body,
      signal,
    });
  }
  deleteProject(projectId: string, signal?: AbortSignal) {
    return this.http.request<unknown>({ method: "DELETE", path: p(projectId), signal });
  }
  startAgent(
    projectId: string,
    body: { prompt?: string; inputFiles?: Json[]; multiPrompt?: { prompts?: string[]; letTotalumDecide?: boolean } },
    signal?: AbortSignal,
  ) {
    return this.http.request<Json>({ method: "POST", path: `${p(projectId)}/agent/start`, body, signal });
  }
  getAgentStatus(projectId: string, signal?: AbortSignal) {
    return this.http.request<AgentStatus>({ method: "GET", path: `${p(projectId)}/agent/status`, signal });
  }
  getConversation(projectId: string, signal?: AbortSignal) {
    return this.http.request<{ conversation: ConversationMessage[] }>({
      method: "GET",
      path: `${p(projectId)}/agent/full-conversation`,
      signal,
    });
  }
  stopAgent(projectId: string, signal?: AbortSignal) {
    return this.http.request<unknown>({ method: "POST", path: `${p(projectId)}/agent/stop`, body: {}, signal });
  }
  restartServer(projectId: string, signal?: AbortSignal) {
    return this.http.request<unknown>({
      method: "POST",
      path: `${p(projectId)}/agent/server/start-or-restart`,
      body: {},
      signal,
    });
  }
  deploy(projectId: string, signal?: AbortSignal) {
    return this.http.request<Json>({ method: "POST", path: `${p(projectId)}/deployments/deploy`, body: {}, signal });
  }
  getDeploymentStatus(projectId: string, signal?: AbortSignal) {
    return this.http.request<Json>({ method: "GET", path: `${p(projectId)}/deployments/status`, signal });
  }
  listVersions(projectId: string, query: { limit?: number; skip?: number }, signal?: AbortSignal) {
    return this.http.request<{ versions: Json[]; totalCount?: number }>({
      method: "GET",
      path: `${p(projectId)}/versions`,
      query,
      signal,
    });
  }
  recoverVersion(projectId: string, versionId: string, signal?: AbortSignal) {
    return this.http.request<unknown>({
      method: "POST",
      path: `${p(projectId)}/versions/${pathId(versionId)}/recover`,
      body: {},
      signal,
    });
  }
  getLogs(projectId: string, signal?: AbortSignal) {
    return this.http.request<{ logs: string }>({ method: "GET", path: `${p(projectId)}/backend/dev/logs`, signal });
  }
  setSecret(
    projectId: string,
    body: { secretName: string; secretValue: string; environment?: string },
    signal?: AbortSignal,
  ) {
    return this.http.request<unknown>({ method: "POST", path: `${p(projectId)}/secrets`, body, signal });
  }
  deleteSecret(projectId: string, secretId: string, signal?: AbortSignal) {
    return this.http.request<unknown>({
      method: "DELETE",
      path: `${p(projectId)}/secrets/${pathId(secretId)}`,
      signal,
    });
  }
  setDomain(projectId: string, hostname: string, signal?: AbortSignal) {
    return this.http.request<unknown>({ method: "PUT", path: `${p(projectId)}/domain`, body: { hostname }, signal });
  }
  removeDomain(projectId: string, signal?: AbortSignal) {
    return this.http.request<unknown>({ method: "DELETE", path: `${p(projectId)}/domain`, signal });
  }
  getTables(projectId: string, signal?: AbortSignal) {
    return this.http.request<{ tables: Json[] }>({
      method: "GET",
      path: `${p(projectId)}/database/tables-structure`,
      signal,
    });
  }
  queryDatabase(projectId: string, body: { tableName: string; queryOptions?: Json }, signal?: AbortSignal) {
    return this.http.request<{ results: Json[] }>({
      method: "POST",
      path: `${p(projectId)}/database/query`,
      body,
      signal,
      idempotent: true,
    });
  }
}
