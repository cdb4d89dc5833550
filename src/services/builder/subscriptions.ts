import type { ResourceWatcher } from "../../core/service/resources.js";
import type { BuildDeps } from "./deps.js";
import type { ProjectDetails } from "./schemas.js";

/** Any id create or launch returned: a suffixed one can be longer than the 35 characters a new id may have. */
const PROJECT_URI = /^build:\/\/projects\/([^/?#]{1,200})$/;

/** The parts of a project whose change a subscriber hears about. */
function fingerprint(p: ProjectDetails): string {
  return JSON.stringify([
    p.agentProcessStatus,
    p.agentServerStatus,
    p.deployment?.status,
    p.deployment?.versionId,
    p.versionRecovery?.status,
    p.importInProgress ? (p.importInProgress.errorMessage ?? "running") : null,
    p.previewImageUrl,
    p.customDomain?.status,
  ]);
}

/**
 * Watches build://projects/{projectId} through the subscribing tenant's shared project poller; with
 * BUILD_WEBHOOKS=on, a project.credit_limit.reached delivery for the project is a change too.
 */
export const projectWatcher: ResourceWatcher<BuildDeps> = (uri, onChange, { projectPoller, push }) => {
  const m = PROJECT_URI.exec(uri);
  if (!m) return undefined;
  let last: string | undefined;
  let projectId: string;
  try {
    projectId = decodeURIComponent(m[1]);
  } catch {
    return undefined;
  }
  const unfollow = projectPoller.follow(projectId, (result) => {
    if (result.value === undefined) return;
    const now = fingerprint(result.value);
    if (last !== undefined && now !== last) onChange();
    last = now;
  });
  const unhear = push?.onCreditLimit(projectId, () => onChange());
  return () => {
    unhear?.();
    unfollow();
  };
};
