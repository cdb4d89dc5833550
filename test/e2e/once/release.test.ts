// The release, rehearsed (it cannot run here: .github/workflows/release.yml publishes from a tag).
// What a user gets is the packed tarball: it is packed as `npm publish` would pack it, installed
// with --offline into an empty directory (the package has no runtime dependency, so nothing is
// fetched), and its `switchboard-mcp` bin is started with --sandbox and called by an SDK client.
// `npm publish --dry-run` then checks what the registry would be sent. Needs dist/ built (npm test
// builds it first); the prepack build is skipped (--ignore-scripts) because dist/ is what it makes.
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../../..", import.meta.url));
const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { name: string; version: string };
const work = mkdtempSync(join(tmpdir(), "switchboard-release-"));

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env): Promise<Run> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd, env, timeout: 90_000, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === "number" ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

/** npm with its own cache in the temp directory, so --offline proves the tarball needs nothing else. */
function npm(args: string[], cwd: string): Promise<Run> {
  return run("npm", [...args, "--no-audit", "--no-fund", "--no-update-notifier"], cwd, {
    ...process.env,
    npm_config_cache: join(work, "npm-cache"),
  });
}

let tarball: string;
let packedFiles: string[];

beforeAll(async () => {
  if (!existsSync(join(ROOT, "dist", "cli.js"))) throw new Error("dist/cli.js is missing: run `npm run build` first");
  const packed = await npm(["pack", "--ignore-scripts", "--json", "--pack-destination", work], ROOT);
  expect(packed.code, packed.stderr).toBe(0);
  const [info] = JSON.parse(packed.stdout) as Array<{ filename: string; files: Array<{ path: string }> }>;
  tarball = join(work, info.filename);
  packedFiles = info.files.map((f) => f.path).sort();
}, 120_000);

afterAll(() => rmSync(work, { recursive: true, force: true }));

describe("release dry run", { timeout: 120_000 }, () => {
  it("the tarball holds the bundle, the docs and the registry files, and no source or tests", () => {
    expect(tarball.endsWith(`${pkg.name}-${pkg.version}.tgz`)).toBe(true);
    expect(packedFiles).toEqual(
      expect.arrayContaining(["dist/cli.js", "package.json", "README.md", "LICENSE", "server.json", "smithery.yaml"]),
    );
    expect(packedFiles.filter((f) => /^(src|test|scripts|node_modules)\//.test(f))).toEqual([]);
  });

  it("installs offline into an empty directory as one package; its bin answers a tool call over stdio", async () => {
    const prefix = join(work, "global");
    const installed = await npm(["install", "--global", "--prefix", prefix, "--offline", tarball], work);
    expect(installed.code, `${installed.stdout}\n${installed.stderr}`).toBe(0);
    const pkgDir = join(prefix, "lib", "node_modules", pkg.name);
    // One package: nothing was installed beside it or under it.
    expect(readdirSync(join(prefix, "lib", "node_modules"))).toEqual([pkg.name]);
    expect(existsSync(join(pkgDir, "node_modules"))).toBe(false);
    const bin = join(prefix, "bin", "switchboard-mcp");
    expect(existsSync(bin)).toBe(true);

    const version = await run(bin, ["--version"], work);
    expect(version.stdout.trim()).toBe(pkg.version);

    // Started the way a client configuration starts it: the command by name on PATH, from an unrelated directory.
    const transport = new StdioClientTransport({
      command: "switchboard-mcp",
      args: ["--sandbox"],
      cwd: work,
      env: { PATH: `${join(prefix, "bin")}:${process.env.PATH ?? ""}`, SANDBOX_TIME_SCALE: "3000" },
      stderr: "pipe",
    });
    const client = new Client({ name: "release-dry-run", version: "1.0.0" });
    await client.connect(transport);
    try {
      expect(client.getServerVersion()?.version).toBe(pkg.version);
      const result = (await client.callTool({
        name: "drones_find_nearest",
        arguments: { latitude: 40.4168, longitude: -3.7038, limit: 2 },
      })) as {
        isError?: boolean;
        structuredContent?: { drones?: Array<{ name: string; distanceKm: number }> };
      };
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent?.drones?.length).toBe(2);
      expect(result.structuredContent?.drones?.[0].distanceKm).toBeLessThan(5);
    } finally {
      await client.close();
    }
  });

  it("npm publish --dry-run would publish this name and version", async () => {
    const published = await npm(["publish", "--dry-run", "--ignore-scripts"], ROOT);
    expect(published.code, published.stderr).toBe(0);
    expect(`${published.stdout}\n${published.stderr}`).toContain(`+ ${pkg.name}@${pkg.version}`);
    expect(published.stderr).toMatch(/\(dry-run\)/);
  });
});
