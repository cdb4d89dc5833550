// "Add a service" (docs/contributing.md), done for real: in a copy of the repository, the toy
// quotation service's two folders (test/fixtures/toy-service/src/) are copied in, one line goes to
// each registry, and `npm run generate` runs. Then, with no other edit, everything CI checks on
// a service passes in that copy: Biome, the type check, the bundle (the service's implementation is
// its own lazy chunk), every unit test that reads the registries or the sources (layering, build
// split, settings, generated files, declarations, token budget, line length...) and the toy's
// end-to-end file through the real registries and --sandbox, and the secret canary, which calls
// its tool as its samples.ts says.
import { execFile } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../../..", import.meta.url));
const FIXTURE = join(ROOT, "test", "fixtures", "toy-service", "src");
const tree = mkdtempSync(join(tmpdir(), "switchboard-add-a-service-"));

interface Run {
  code: number;
  out: string;
}

function run(command: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  return new Promise((resolve) => {
    const options = { cwd: tree, env: { ...process.env, ...env }, timeout: 300_000, maxBuffer: 32 * 1024 * 1024 };
    execFile(command, args, options, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === "number" ? err.code : 1) : 0, out: `${stdout}\n${stderr}` });
    });
  });
}

/** Every file git would see (tracked, or new and not ignored), as a relative path. */
async function repositoryFiles(): Promise<string[]> {
  const listed = await new Promise<string>((resolve, reject) =>
    execFile("git", ["ls-files", "-co", "--exclude-standard", "-z"], { cwd: ROOT, maxBuffer: 16 << 20 }, (err, out) =>
      err ? reject(err) : resolve(out),
    ),
  );
  return listed.split("\0").filter(Boolean);
}

/** The one line a newcomer adds to a registry: the import on top, the name at the end of the list. */
function addToRegistry(file: string, importLine: string, listed: RegExp, name: string): void {
  const path = join(tree, file);
  const text = readFileSync(path, "utf8");
  const added = text.replace(listed, (list) => list.replace(/\]$/, `, ${name}]`));
  expect(added, `${file}: the registry list was not found`).not.toBe(text);
  writeFileSync(path, `${importLine}\n${added}`);
}

/** A unit test that reads what a service changes: the registries, the manifests, or the source files. */
const REGISTRY_READER = /registry\.js|manifest\.js|loadServices|allServicesConfig|layering\.js|readdirSync/;

let files: string[];

beforeAll(async () => {
  files = await repositoryFiles();
  for (const file of files) {
    mkdirSync(dirname(join(tree, file)), { recursive: true });
    cpSync(join(ROOT, file), join(tree, file), { verbatimSymlinks: true });
  }
  symlinkSync(join(ROOT, "node_modules"), join(tree, "node_modules"));
  // The two folders, and one line in each registry.
  cpSync(join(FIXTURE, "services", "quotes"), join(tree, "src", "services", "quotes"), { recursive: true });
  cpSync(join(FIXTURE, "sandbox", "simulators", "quotes"), join(tree, "src", "sandbox", "simulators", "quotes"), {
    recursive: true,
  });
  addToRegistry(
    "src/services/registry.ts",
    'import { quotes } from "./quotes/index.js";',
    /export const SERVICES[^=]*= \[[^\]]*\]/,
    "quotes",
  );
  addToRegistry(
    "src/sandbox/registry.ts",
    'import { quotesSimulator } from "./simulators/quotes/declaration.js";',
    /export const SIMULATORS = \[[^\]]*\]/,
    "quotesSimulator",
  );
}, 120_000);

afterAll(() => rmSync(tree, { recursive: true, force: true }));

describe("adding a service: two folders, two registry lines, npm run generate", { timeout: 300_000 }, () => {
  it("npm run generate rewrites only generated files", async () => {
    const generated = await run("npm", ["run", "generate", "--silent"]);
    expect(generated.code, generated.out).toBe(0);
    const changed = files.filter((f) => {
      try {
        return readFileSync(join(tree, f), "utf8") !== readFileSync(join(ROOT, f), "utf8");
      } catch {
        return false;
      }
    });
    const registries = ["src/sandbox/registry.ts", "src/services/registry.ts"];
    expect(changed.sort()).toEqual([...registries, "README.md", "server.json", "smithery.yaml"].sort());
    // Its tool's schema snapshot is new.
    expect(existsSync(join(tree, "test", "__toolsnaps__", "quotes_get_quote.json"))).toBe(true);
  });

  it("Biome, the type check and the bundle pass, and the service's tools are a chunk of their own", async () => {
    const biome = await run("npx", ["biome", "check", "."]);
    expect(biome.code, biome.out).toBe(0);
    // The sources (tests are unchanged in the copy; the fixture's are checked where it lives).
    const types = await run("npx", ["tsc", "-p", "tsconfig.json", "--noEmit"]);
    expect(types.code, types.out).toBe(0);
    const built = await run("node", ["scripts/build.mjs"]);
    expect(built.code, built.out).toBe(0);
    const chunks = await run("grep", ["-rl", "quotes_get_quote", "dist"]);
    expect(chunks.out.trim().split("\n")).not.toContain("dist/cli.js");
  });

  it("every unit test that reads the registries or the sources passes with the fourth service", async () => {
    const readers = readdirSync(join(tree, "test", "unit"))
      .filter((f) => f.endsWith(".test.ts"))
      .map((f) => `test/unit/${f}`)
      .filter((f) => REGISTRY_READER.test(readFileSync(join(tree, f), "utf8")));
    expect(readers).toEqual(expect.arrayContaining(["test/unit/build-split.test.ts", "test/unit/generated.test.ts"]));
    const unit = await run("npx", ["vitest", "run", "--project", "unit", ...readers]);
    expect(unit.code, unit.out.slice(-4000)).toBe(0);
    expect(unit.out).toMatch(/\d+ passed, 0 failed/);
  });

  it("the secret canary drives its tool from its samples, with every other service's", async () => {
    const canary = await run("npx", ["vitest", "run", "--project", "e2e-2026", "test/e2e/canary.e2e.test.ts"]);
    expect(canary.code, canary.out.slice(-4000)).toBe(0);
    expect(canary.out).toMatch(/\d+ passed, 0 failed/);
  });

  it("its end-to-end file runs through the real registries and --sandbox", async () => {
    const e2e = await run("npx", ["vitest", "run", "--project", "e2e-2026", "test/e2e/toy-service.e2e.test.ts"]);
    expect(e2e.code, e2e.out.slice(-4000)).toBe(0);
    expect(e2e.out).toMatch(/\d+ passed, 0 failed/);
  });
});
