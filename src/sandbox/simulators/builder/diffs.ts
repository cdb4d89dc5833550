import type { BuildContext } from "./context.js";
import { fail, type BuildRoutes } from "./routes.js";
import { hash, sha1, type SimProject, type Version } from "./state.js";

/**
 * GET version-diff?commitSha= (reference §7): the unified diff a version introduced, computed "on
 * the sandbox", so only while the dev server is Active (else 400 NO_ACTIVE_SANDBOX). A commitSha
 * is matched as a prefix of a version's commitSha (7-40 hex, any case); none matches: 404
 * COMMIT_NOT_FOUND (ours). An area that knows a version's real change (a file write, a pull)
 * gives it with setVersionDiff; otherwise a diff is made up from the version's prompt: prompt
 * markers [big-diff] (60 files of 80 lines) and [no-changes] (an empty diff).
 */

const diffs = new WeakMap<Version, string>();

export function setVersionDiff(version: Version, diff: string): void {
  diffs.set(version, diff);
}

export function registerVersionDiffRoutes(_ctx: BuildContext, routes: BuildRoutes): void {
  routes.onProject("GET", "/version-diff", (p, req) => versionDiff(p, req.query.get("commitSha")));
}

function versionDiff(p: SimProject, raw: string | null) {
  if (raw === null || raw === "") fail(400, "MISSING_COMMIT_SHA", "The commitSha query parameter is required");
  if (!/^[0-9a-f]{7,40}$/i.test(raw))
    fail(400, "INVALID_COMMIT_SHA", "commitSha must be 7 to 40 hexadecimal characters");
  if (p.server.status !== "Active")
    fail(
      400,
      "NO_ACTIVE_SANDBOX",
      `The sandbox of ${p.projectId} is not running (${p.server.status}); start the server to compute diffs`,
    );
  const sha = raw.toLowerCase();
  const version = [...p.versions].reverse().find((v) => v.commitSha.startsWith(sha));
  if (!version) fail(404, "COMMIT_NOT_FOUND", `No version of ${p.projectId} has commit ${raw}`);
  return { commitSha: version.commitSha, diff: diffs.get(version) ?? madeUpDiff(p, version) };
}

const FILES = [
  "src/pages/Home.tsx",
  "src/components/Header.tsx",
  "src/api/routes.ts",
  "src/styles/theme.css",
  "src/db/schema.ts",
  "src/pages/Admin.tsx",
  "README.md",
];

function madeUpDiff(p: SimProject, v: Version): string {
  if (v.prompt.includes("[no-changes]")) return "";
  const index = p.versions.indexOf(v);
  if (index === 0)
    return fileDiff(
      "package.json",
      [],
      [
        `{`,
        `  "name": "${p.projectId}",`,
        `  "private": true,`,
        `  "scripts": { "dev": "vite", "build": "vite build" }`,
        `}`,
      ],
      v,
    );
  const big = v.prompt.includes("[big-diff]");
  const count = big ? 60 : 1 + (hash(v.commitSha) % 3);
  const lines = big ? 80 : 4 + (hash(`${v.commitSha}:n`) % 6);
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    const path = big
      ? `src/generated/module-${String(i).padStart(2, "0")}.ts`
      : FILES[(hash(v.commitSha) + i) % FILES.length];
    const removed = [`// ${path}: before "${v.name}"`, `export const version = ${index};`];
    const added = [`// ${v.commitMessage || v.name}`, `export const version = ${index + 1};`];
    for (let n = 0; n < lines; n++)
      added.push(`export const step${n} = "${sha1(`${v.commitSha}:${i}:${n}`).slice(0, 16)}";`);
    out.push(fileDiff(path, removed, added, v, i));
  }
  return out.join("");
}

function fileDiff(path: string, removed: string[], added: string[], v: Version, i = 0): string {
  const before = removed.length ? sha1(`${v.commitSha}:${path}:before`).slice(0, 7) : "0000000";
  const after = sha1(`${v.commitSha}:${path}:after:${i}`).slice(0, 7);
  const header = removed.length
    ? `diff --git a/${path} b/${path}\nindex ${before}..${after} 100644\n--- a/${path}\n+++ b/${path}\n`
    : `diff --git a/${path} b/${path}\nnew file mode 100644\nindex ${before}..${after}\n--- /dev/null\n+++ b/${path}\n`;
  const hunk = `@@ -${removed.length ? 1 : 0},${removed.length} +1,${added.length} @@\n`;
  return header + hunk + removed.map((l) => `-${l}\n`).join("") + added.map((l) => `+${l}\n`).join("");
}
