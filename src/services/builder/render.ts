import type { ProjectDetails, WaitResult } from "./schemas.js";
import { credits as creditsText, trimLine } from "../../core/base/text.js";

/** Short text summaries of build-service objects. Upstream free text is quoted, never bare. */

export function projectLine(p: {
  projectId: string;
  label?: string;
  description?: string;
  createdAt?: string;
  lastModifiedAt?: string;
}): string {
  const name = p.label && p.label !== p.projectId ? `${p.projectId} ("${trimLine(p.label, 60)}")` : p.projectId;
  const when = p.lastModifiedAt ?? p.createdAt;
  return `- ${name}${when ? `, modified ${when}` : ""}${p.description ? `: "${trimLine(p.description, 80)}"` : ""}`;
}

export function projectSummary(p: ProjectDetails): string {
  const lines = [`Project ${p.projectId}${p.label ? ` ("${trimLine(p.label, 60)}")` : ""}`];
  lines.push(`Agent: ${p.agentProcessStatus ?? "unknown"} · dev server: ${p.agentServerStatus ?? "unknown"}`);
  if (p.deployment)
    lines.push(
      `Deployment: ${p.deployment.status ?? "none"}${p.deployment.createdAt ? ` (${p.deployment.createdAt})` : ""}`,
    );
  else lines.push("Deployment: never deployed");
  // §3: productionProjectUrl is there before any deployment and 404s until one succeeded.
  if (p.productionProjectUrl && p.deployment?.status === "success")
    lines.push(`Production: ${withScheme(p.productionProjectUrl)}`);
  else if (p.productionProjectUrl)
    lines.push(`Production address (serves only after a successful deployment): ${withScheme(p.productionProjectUrl)}`);
  if (p.versionRecovery) {
    const { status, errorMessage } = p.versionRecovery;
    lines.push(`Version recovery: ${status}${errorMessage ? ` ("${trimLine(errorMessage)}")` : ""}`);
  }
  if (p.importInProgress) lines.push(`Import in progress since ${p.importInProgress.startedAt ?? "?"}`);
  if (p.multiPrompt) lines.push(batchSummary(p.multiPrompt));
  if (p.customDomain) lines.push(`Custom domain: ${p.customDomain.hostname} (${p.customDomain.status ?? "?"})`);
  if (p.secrets?.length) lines.push(`Secrets: ${p.secrets.map((s) => s.secretName).join(", ")}`);
  if (typeof p.totalCreditsSpent === "number") lines.push(`Credits spent: ${p.totalCreditsSpent}`);
  const preview = livePreviewUrl(p);
  if (preview) lines.push(`Preview: ${preview}`);
  if (p.previewImageUrl) lines.push(`Screenshot: ${p.previewImageUrl}`);
  return lines.join("\n");
}

export function waitSummary(w: WaitResult): string {
  const credits = w.creditsSpent !== undefined ? `, ${creditsText(w.creditsSpent)}` : "";
  // Work that goes on is followed again and again: one line each time, not the whole project.
  if (w.outcome === "timed_out") {
    return w.creditsSpent !== undefined ? `${w.message} So far: ${creditsText(w.creditsSpent)}.` : w.message;
  }
  return `${w.message} (waited ${w.elapsedSeconds}s over ${w.polls} polls${credits})\n${projectSummary(w.project)}`;
}

/** One line for a multi-prompt batch: its status and where it stands. */
export function batchSummary(b: NonNullable<ProjectDetails["multiPrompt"]>): string {
  const prompts = b.prompts ?? [];
  const total = b.totalPrompts ?? prompts.length;
  const done = prompts.filter((p) => p.status === "done").length;
  const failed = prompts.filter((p) => p.status === "failed").length;
  const at = (b.currentPromptIndex ?? -1) >= 0 ? `, at prompt ${(b.currentPromptIndex ?? 0) + 1} of ${total}` : "";
  return `Multi-prompt batch: ${b.status}${at} (${done} done${failed ? `, ${failed} failed` : ""} of ${total})`;
}

/**
 * T10: the preview to show is the field `developmentUrlFieldToUse` names (a field name, never a
 * URL; absent → temporalDevelopmentProjectUrl), or the other one when the named field is empty [RC].
 */
export function livePreviewUrl(p: ProjectDetails): string | undefined {
  const fields = ["temporalDevelopmentProjectUrl", "cachedDevelopmentUrl"] as const;
  const named = fields.find((f) => f === p.developmentUrlFieldToUse) ?? fields[0];
  const pick = (f: (typeof fields)[number]) => (typeof p[f] === "string" && p[f] ? withScheme(p[f]) : undefined);
  return pick(named) ?? pick(fields.find((f) => f !== named)!);
}

export function withScheme(host: string): string {
  return /^https?:\/\//.test(host) ? host : `https://${host}`;
}
