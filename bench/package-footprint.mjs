// Goal 6: package footprint. What `npm pack` would publish, and how many packages an install of
// that tarball brings in (a real install from the registry into a temp dir).
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);
const NPM = process.platform === "win32" ? "npm.cmd" : "npm";

/** Directories with a package.json under node_modules, nested ones included. */
export function countPackages(nodeModules) {
  let n = 0;
  const names = [];
  const walk = (dir) => {
    if (!existsSync(dir)) return;
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (!entry.isDirectory() || entry.name.startsWith(".")) continue;
      const full = join(dir, entry.name);
      if (entry.name.startsWith("@")) {
        walk(full);
        continue;
      }
      if (existsSync(join(full, "package.json"))) {
        n++;
        names.push(full.slice(nodeModules.length + 1));
        walk(join(full, "node_modules"));
      }
    }
  };
  walk(nodeModules);
  return { count: n, names };
}

/** `packageRoot` holds package.json and dist/ (a snapshot of the build, see run.mjs). */
export async function packageFootprint({ packageRoot, tmp, log }) {
  const env = {
    ...process.env,
    npm_config_update_notifier: "false",
    npm_config_fund: "false",
    npm_config_audit: "false",
  };
  const dry = JSON.parse(
    (
      await run(NPM, ["pack", "--dry-run", "--json", "--ignore-scripts"], {
        cwd: packageRoot,
        env,
        maxBuffer: 64 * 1024 * 1024,
      })
    ).stdout,
  )[0];
  const result = {
    tarballBytes: dry.size,
    unpackedBytes: dry.unpackedSize,
    files: dry.entryCount,
    fileList: dry.files.map((f) => ({ path: f.path, bytes: f.size })),
  };
  const packDir = join(tmp, "pack");
  const prefix = join(tmp, "install");
  mkdirSync(packDir, { recursive: true });
  mkdirSync(prefix, { recursive: true });
  const packed = JSON.parse(
    (await run(NPM, ["pack", "--json", "--ignore-scripts", "--pack-destination", packDir], { cwd: packageRoot, env }))
      .stdout,
  )[0];
  const tgz = join(packDir, packed.filename);
  const started = performance.now();
  try {
    await run(
      NPM,
      ["install", "--no-audit", "--no-fund", "--ignore-scripts", "--no-package-lock", "--prefix", prefix, tgz],
      { cwd: tmp, env, maxBuffer: 64 * 1024 * 1024, timeout: 240_000 },
    );
    result.installSeconds = (performance.now() - started) / 1000;
    const { count, names } = countPackages(join(prefix, "node_modules"));
    result.installedPackages = count;
    result.installedNames = names;
    const cli = join(prefix, "node_modules", dry.name, "dist", "cli.js");
    result.installedVersion = (await run(process.execPath, [cli, "--version"])).stdout.trim();
  } catch (err) {
    result.installError = String(err?.stderr || err?.message || err).slice(0, 1000);
  }
  log(
    `package: ${result.tarballBytes} B tarball, ${result.files} files, ` +
      `install brings ${result.installedPackages ?? "?"} packages`,
  );
  result.goal = {
    text: "a self-contained bundle: installing the tarball brings in one package",
    met: result.installedPackages === 1,
  };
  return result;
}
