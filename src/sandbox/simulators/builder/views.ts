import { held } from "./freshness.js";
import {
  SANDBOX_APPS_DOMAIN,
  iso,
  productionHost,
  type Batch,
  type Message,
  type Secret,
  type SimProject,
} from "./state.js";

/** JSON views of the simulated state, as the operations answer them. Times are ISO strings. */

export function agentStatusOf(p: SimProject): "idle" | "init" | "done" {
  if (!p.run) return "idle";
  return p.run.state === "running" ? "init" : "done";
}

/** A message as the conversation shows it, stamped with the real time it was written (wallTime). */
export function messageView(m: Message, wallTime: (simMs: number) => number) {
  return { ...m, createdAt: iso(wallTime(m.createdAt)) };
}

/** Secret values are never shown. */
export function secretView(s: Secret) {
  return { _id: s._id, secretName: s.secretName, environment: s.environment };
}

/** §9: record names are relative to the zone, taken here as the hostname's last two labels (assumed). */
export function customDomainView(p: SimProject) {
  const d = p.customDomain!;
  const name = d.hostname.split(".").slice(0, -2).join(".");
  return {
    hostname: d.hostname,
    status: d.status,
    sslStatus: d.sslStatus,
    dnsRecordsToAdd: [
      { type: "CNAME", name, value: productionHost(p.projectId) },
      { type: "TXT", name: `_cf-custom-hostname.${name}`, value: d.token },
    ],
  };
}

export function importView(p: SimProject, now: number) {
  const lock = p.importLock;
  if (!lock) return null;
  const failed = lock.failAt !== undefined && lock.failAt <= now;
  return {
    startedAt: iso(lock.startedAt),
    errorMessage: failed ? "The import failed while restoring the database; the project was left unchanged" : undefined,
  };
}

export function batchActive(b: Batch): boolean {
  return b.status === "planning" || b.status === "executing" || b.status === "paused";
}

/** `multiPrompt` of agent/status and the details. */
export function batchView(b: Batch) {
  return {
    status: b.status,
    totalPrompts: b.prompts.length,
    currentPromptIndex: b.currentPromptIndex,
    prompts: b.prompts.map((item) => ({ ...item })),
    startedAt: iso(b.startedAt),
    updatedAt: iso(b.updatedAt),
  };
}

/** The latest deployment as deployments/status and the details show it (null when never deployed). */
export function deploymentView(p: SimProject) {
  const d = p.deployment;
  return d && { status: d.status, createdAt: iso(d.createdAt), versionId: d.versionId };
}

export function recoveryView(p: SimProject) {
  const r = p.recovery;
  return r && { status: r.status, versionId: r.versionId, startedAt: iso(r.startedAt), errorMessage: r.errorMessage };
}

/** An entry of the project list. */
export function listItemView(p: SimProject) {
  return {
    projectId: p.projectId,
    description: p.description,
    plan: p.plan,
    createdAt: iso(p.createdAt),
    label: p.label,
    groupId: p.groupId,
    previewImageUrl: p.previewImageUrl,
    lastModifiedAt: iso(p.lastModifiedAt),
    productionProjectUrl: productionHost(p.projectId),
  };
}

/**
 * §3: the live preview is empty before any server start; the cached snapshot exists once an
 * archived server had run (assumed), and developmentUrlFieldToUse names it while the server sleeps.
 */
function previewUrls(p: SimProject) {
  const temporal = p.serverStarted ? `https://${p.projectId}.dev.${SANDBOX_APPS_DOMAIN}` : "";
  const asleep = p.server.status === "Archived" || p.server.status === "Archiving";
  const cached = p.serverStarted && asleep ? `https://previews.${SANDBOX_APPS_DOMAIN}/${p.projectId}/cached/` : "";
  const field = cached ? "cachedDevelopmentUrl" : "temporalDevelopmentProjectUrl";
  return { temporalDevelopmentProjectUrl: temporal, cachedDevelopmentUrl: cached, developmentUrlFieldToUse: field };
}

/**
 * The project details; `now` is the simulated time (it decides whether an import has failed yet
 * and whether reads still show the state from before a call: freshness.ts).
 */
export function detailsView(p: SimProject, now: number) {
  return {
    projectId: p.projectId,
    label: p.label,
    groupId: p.groupId,
    previewImageUrl: p.previewImageUrl,
    description: p.description,
    plan: p.plan,
    createdAt: iso(p.createdAt),
    lastModifiedAt: iso(p.lastModifiedAt),
    agentProcessStatus: agentStatusOf(p),
    agentServerStatus: held(p, "agentServerStatus", now, p.server.status),
    deployment: held(p, "deployment", now, deploymentView(p)),
    versionRecovery: held(p, "versionRecovery", now, recoveryView(p)),
    importInProgress: held(p, "importInProgress", now, importView(p, now)),
    secrets: p.secrets.map(secretView),
    customDomain: p.customDomain && customDomainView(p),
    productionProjectUrl: p.customDomain?.status === "active" ? p.customDomain.hostname : productionHost(p.projectId),
    ...previewUrls(p),
    totalCreditsSpent: p.totalCreditsSpent,
    creditLimits: { ...p.creditLimits },
    ...(p.batch ? { multiPrompt: batchView(p.batch) } : {}),
  };
}
