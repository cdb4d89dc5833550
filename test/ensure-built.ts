// Global setup of the projects that spawn dist/cli.js: rebuild it first when a source is newer,
// so an end-to-end run never tests a stale build silently (npm test builds anyway; this is for
// `npx vitest run --project 'e2e-2026*' ...` after an edit).
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

export default function setup(): void {
  const script = fileURLToPath(new URL("../scripts/ensure-built.mjs", import.meta.url));
  const result = spawnSync(process.execPath, [script], { stdio: ["ignore", "inherit", "inherit"] });
  if (result.status !== 0) throw new Error(`building dist/ failed (exit ${result.status}): run node scripts/build.mjs`);
}
