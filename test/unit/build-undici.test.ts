// The bundle gives src/ a slim undici entry (scripts/build.mjs) that is CommonJS, so esbuild cannot
// tell a name it lacks: `import { request } from "undici"` once built fine and threw "request is
// not a function" at run time. The build now reads what src/ imports and fails naming it.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "esbuild";
import { afterAll, describe, expect, it } from "vitest";
// @ts-expect-error: a plain .mjs build script without types
import { missingUndiciExports, slimDependencies } from "../../scripts/build.mjs";

const dir = mkdtempSync(join(tmpdir(), "switchboard-undici-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function bundleOf(source: string) {
  const entry = join(dir, `entry-${Math.random().toString(36).slice(2)}.ts`);
  writeFileSync(entry, source);
  return build({
    entryPoints: [entry],
    bundle: true,
    write: false,
    platform: "node",
    format: "esm",
    logLevel: "silent",
    plugins: [slimDependencies],
  });
}

describe("the slim undici entry", () => {
  it("names what src/ imports and the entry lacks, and nothing else", () => {
    expect(missingUndiciExports('import { Pool, errors as e } from "undici";')).toEqual([]);
    expect(missingUndiciExports('import { type Dispatcher, Agent } from "undici";')).toEqual([]);
    expect(missingUndiciExports('import type { fetch } from "undici";')).toEqual([]);
    expect(missingUndiciExports('import { Pool, request } from "undici";')).toEqual(["request"]);
    expect(missingUndiciExports('import * as undici from "undici";')).toEqual(["* as undici"]);
  });

  it("fails the build on a missing name, and builds what it exports", async () => {
    await expect(bundleOf('import { request } from "undici";\nconsole.log(request);\n')).rejects.toThrow(
      /imports request from "undici".*UNDICI_EXPORTS/,
    );
    const ok = await bundleOf('import { Pool } from "undici";\nconsole.log(typeof Pool);\n');
    expect(ok.errors).toEqual([]);
  });
});
