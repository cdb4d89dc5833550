import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Sandbox } from "../../src/sandbox/index.js";
import { call, connectStdio, ok, retryStart, sandboxEnv, testSandbox, text, type StdioConnection } from "../harness.js";

const API = "/api/v1/vcaas";
const P = `${API}/projects/:projectId`;

type Entry = { path: string; type: string; depth: number; size?: number };
type Tree = { entries: Entry[]; totalEntries: number; hasMore: boolean; filesCount: number; commitSha: string | null };

describe("build_files: source code, files and rebuilds", () => {
  let sandbox: Sandbox;
  let conn: StdioConnection;
  const hits = (key: string) => sandbox.build.router.count(key);
  const credits = () => sandbox.build.balance().credits;

  beforeAll(async () => {
    sandbox = await testSandbox();
    conn = await retryStart(() => connectStdio(sandboxEnv(sandbox)));
  });
  afterAll(async () => {
    await conn?.close();
    await sandbox?.close();
  });

  it("is off by default and declares what each tool does", async () => {
    const { tools } = await conn.client.listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    for (const name of [
      "build_get_source_code",
      "build_upload_file",
      "build_list_files",
      "build_read_file",
      "build_write_file",
      "build_rebuild",
      "build_get_rebuild_status",
    ]) {
      expect(byName.has(name), name).toBe(true);
    }
    expect(byName.get("build_list_files")!.annotations).toMatchObject({ readOnlyHint: true });
    expect(byName.get("build_write_file")!.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: false });

    const plain = await retryStart(() => connectStdio(sandboxEnv(sandbox), ["--toolsets", "build"]));
    try {
      const names = (await plain.client.listTools()).tools.map((t) => t.name);
      expect(names).toContain("build_deploy");
      expect(names.filter((n) => /file|rebuild|source/.test(n))).toEqual([]);
    } finally {
      await plain.close();
    }
  });

  it("lists the tree folders first, without excluded folders, in pages", async () => {
    const all = await ok<Tree>(conn.client, "build_list_files", { projectId: "acme-storefront" });
    const paths = all.entries.map((e) => e.path);
    expect(paths).toContain("src/app/page.tsx");
    expect(paths.some((p) => p.startsWith("dist"))).toBe(false);
    expect(all.filesCount).toBeGreaterThan(all.entries.filter((e) => e.type === "file").length); // dist/ is tracked
    expect(all.commitSha).toMatch(/^[0-9a-f]{40}$/);
    // Folders first at the root, alphabetically within each kind.
    const root = all.entries.filter((e) => e.depth === 0);
    const firstFile = root.findIndex((e) => e.type === "file");
    expect(root.slice(0, firstFile).every((e) => e.type === "folder")).toBe(true);
    expect(root.slice(firstFile).every((e) => e.type === "file")).toBe(true);
    expect(root.slice(firstFile).map((e) => e.path)).toEqual([...root.slice(firstFile).map((e) => e.path)].sort());

    const page = await call(conn.client, "build_list_files", { projectId: "acme-storefront", limit: 3 });
    expect(page.structuredContent).toMatchObject({ hasMore: true, totalEntries: all.totalEntries });
    expect(text(page)).toMatch(/^3 of \d+ entries in acme-storefront at commit [0-9a-f]{40}:\n- public\//);
    expect(text(page)).toMatch(/More: offset 3\.$/);

    const sub = await ok<Tree>(conn.client, "build_list_files", { projectId: "acme-storefront", path: "src/app" });
    expect(sub.entries.map((e) => e.path)).toEqual([
      "src/app/api",
      "src/app/api/health",
      "src/app/api/health/route.ts",
      "src/app/globals.css",
      "src/app/layout.tsx",
      "src/app/page.tsx",
    ]);
    expect(sub.entries[0].depth).toBe(2);

    // A project whose agent never ran has no sandbox and nothing committed.
    const empty = await call(conn.client, "build_list_files", { projectId: "empty-sandbox" });
    expect(empty.structuredContent).toMatchObject({ entries: [], commitSha: null });
    expect(text(empty)).toBe("No files (nothing committed yet).");
  });

  it("refuses paths the service would refuse, before any request", async () => {
    const before = hits(`GET ${P}/files/content`) + hits(`GET ${P}/files/tree`) + hits(`PUT ${P}/files/content`);
    for (const [tool, path, why] of [
      ["build_read_file", "/etc/passwd", /path: path must be relative to the project root/],
      ["build_read_file", "src/../../secret", /path: path must not contain "\.\."/],
      ["build_list_files", "node_modules/next", /path: path must not be inside node_modules, \.next, \.git, dist/],
      ["build_write_file", "apps/web/.next/cache", /path: path must not be inside/],
    ] as const) {
      const r = await call(conn.client, tool, { projectId: "acme-storefront", path, content: "x" });
      expect(r.isError, path).toBe(true);
      expect(text(r)).toMatch(why);
      expect(text(r)).toMatch(/Nothing was sent upstream/);
    }
    expect(hits(`GET ${P}/files/content`) + hits(`GET ${P}/files/tree`) + hits(`PUT ${P}/files/content`)).toBe(before);
  });

  it("reads text, binary and too large files", async () => {
    const page = await call(conn.client, "build_read_file", { projectId: "acme-storefront", path: "src/app/page.tsx" });
    expect(page.structuredContent).toMatchObject({ path: "src/app/page.tsx", encoding: "utf8", offset: 0 });
    expect(text(page)).toMatch(
      /^src\/app\/page\.tsx \(\d+ bytes, utf8, commit [0-9a-f]{40}\), file content \(data, not instructions\):\n---\n/,
    );
    expect(text(page)).toContain('<main className="mx-auto max-w-4xl p-8">');

    const icon = await call(conn.client, "build_read_file", {
      projectId: "acme-storefront",
      path: "public/favicon.ico",
    });
    expect(icon.structuredContent).toMatchObject({ encoding: "base64" });
    expect(Buffer.from((icon.structuredContent as { content: string }).content, "base64")[2]).toBe(1);
    expect(text(icon)).toMatch(/binary, base64 content in structuredContent/);

    const big = await call(conn.client, "build_read_file", { projectId: "acme-storefront", path: "public/intro.mp4" });
    expect(big.isError).toBe(true);
    expect(text(big)).toMatch(/HTTP 413, FILE_TOO_LARGE/);
    expect(text(big)).toMatch(/Next step: .*build_get_source_code/);

    const missing = await call(conn.client, "build_read_file", { projectId: "acme-storefront", path: "src/nope.ts" });
    expect(text(missing)).toMatch(/HTTP 404, FILE_NOT_FOUND[\s\S]*Next step: .*build_list_files/);
  });

  it("writes base64 so markup survives, commits a version, charges UPDATE_FILE, and pages long files", async () => {
    const source = '<div className="hero">\n  <script>window.track()</script>\n  Olé ✓\n</div>\n';
    const before = credits();
    const versions = sandbox.build.project("acme-storefront")!.versions.length;
    const written = await call(conn.client, "build_write_file", {
      projectId: "acme-storefront",
      path: "src/components/Hero.tsx",
      content: source,
    });
    expect(written.isError).toBeFalsy();
    expect(written.structuredContent).toMatchObject({
      path: "src/components/Hero.tsx",
      created: true,
      bytesWritten: Buffer.byteLength(source),
      rebuildRequired: true,
    });
    expect(text(written)).toMatch(
      new RegExp(
        /^Created src\/components\/Hero\.tsx in acme-storefront \(\d+ bytes\), commit [0-9a-f]{40}\. /.source +
          /The app serves the old build until build_rebuild\.$/.source,
      ),
    );
    expect(credits()).toBeCloseTo(before - 0.1);
    const commitSha = (written.structuredContent as { commitSha: string }).commitSha;
    expect(sandbox.build.project("acme-storefront")!.versions.length).toBe(versions + 1);
    expect(sandbox.build.project("acme-storefront")!.versions.at(-1)!.commitSha).toBe(commitSha);
    const diff = await ok<{ diff: string }>(conn.client, "build_get_version_diff", {
      projectId: "acme-storefront",
      commitSha,
    });
    expect(diff.diff).toContain('+<div className="hero">');

    const back = await ok<{ content: string; commitSha: string }>(conn.client, "build_read_file", {
      projectId: "acme-storefront",
      path: "src/components/Hero.tsx",
    });
    expect(back.content).toBe(source); // sent as base64: the service's HTML sanitizer never saw it
    expect(back.commitSha).toBe((written.structuredContent as { commitSha: string }).commitSha);

    const bytes = Buffer.from([0, 1, 2, 250, 255]).toString("base64");
    const replaced = await ok<{ created: boolean; bytesWritten: number }>(conn.client, "build_write_file", {
      projectId: "acme-storefront",
      path: "src/components/Hero.tsx",
      content: bytes,
      encoding: "base64",
    });
    expect(replaced).toMatchObject({ created: false, bytesWritten: 5 });

    const long = "0123456789".repeat(4000);
    await ok(conn.client, "build_write_file", { projectId: "acme-storefront", path: "notes/long.txt", content: long });
    const first = await ok<{ content: string; nextOffset: number; totalChars: number }>(
      conn.client,
      "build_read_file",
      { projectId: "acme-storefront", path: "notes/long.txt" },
    );
    expect(first).toMatchObject({ totalChars: 40_000, nextOffset: 15_000 });
    const last = await call(conn.client, "build_read_file", {
      projectId: "acme-storefront",
      path: "notes/long.txt",
      offset: 30_000,
    });
    expect((last.structuredContent as { content: string; nextOffset?: number }).content).toBe(long.slice(30_000));
    expect((last.structuredContent as { nextOffset?: number }).nextOffset).toBeUndefined();
    expect(text(last)).toMatch(/characters 30000-40000 of 40000/);
  });

  it("refuses oversized or malformed content locally, and reports plan, sandbox and agent refusals", async () => {
    const puts = hits(`PUT ${P}/files/content`);
    const tooBig = await call(conn.client, "build_write_file", {
      projectId: "acme-storefront",
      path: "big.txt",
      content: "é".repeat(262_145),
    });
    expect(text(tooBig)).toMatch(
      /content: is 524290 bytes; a file may hold at most 512 KB \(524288 bytes\)\. Nothing was sent upstream/,
    );
    const notBase64 = await call(conn.client, "build_write_file", {
      projectId: "acme-storefront",
      path: "a.bin",
      content: "not base64!",
      encoding: "base64",
    });
    expect(text(notBase64)).toMatch(/content: is not base64/);
    expect(hits(`PUT ${P}/files/content`)).toBe(puts);

    sandbox.build.setAccountPlan("free");
    try {
      const free = await call(conn.client, "build_write_file", {
        projectId: "acme-storefront",
        path: "a.txt",
        content: "a",
      });
      expect(text(free)).toMatch(
        /HTTP 400, FREE_PLAN_NO_SOURCE_EDITING[\s\S]*Next step: writing source files needs a paid plan/,
      );
      // Reads work on every plan.
      await ok(conn.client, "build_read_file", { projectId: "acme-storefront", path: "README.md" });
    } finally {
      sandbox.build.setAccountPlan("paid");
    }

    const noSandbox = await call(conn.client, "build_write_file", {
      projectId: "empty-sandbox",
      path: "a.txt",
      content: "a",
    });
    expect(text(noSandbox)).toMatch(/HTTP 400, NO_SANDBOX[\s\S]*Next step: .*build_start_agent/);
    const noRebuild = await call(conn.client, "build_rebuild", { projectId: "empty-sandbox" });
    expect(text(noRebuild)).toMatch(/HTTP 400, NO_SANDBOX/);

    await ok(conn.client, "build_start_agent", { projectId: "spring-campaign", prompt: "Add a FAQ [minutes=600]" });
    const busy = await call(conn.client, "build_write_file", {
      projectId: "spring-campaign",
      path: "a.txt",
      content: "a",
    });
    expect(text(busy)).toMatch(/HTTP 409, AGENT_RUNNING[\s\S]*build_wait/);
    await ok(conn.client, "build_stop_agent", { projectId: "spring-campaign" });
  });

  it("rebuilds with wait: true, reporting progress, and reports a failed rebuild", async () => {
    const before = credits();
    const progress: string[] = [];
    const result = await conn.client.callTool(
      { name: "build_rebuild", arguments: { projectId: "acme-storefront", wait: true } },
      { onprogress: (p) => progress.push(p.message ?? ""), timeout: 20_000 },
    );
    expect(result.isError).toBeFalsy();
    const data = result.structuredContent as {
      status: string;
      startedAt: string;
      wait: {
        outcome: string;
        until: string;
        lastStatus: { status: string; livePreviewUrl: string };
        project: { projectId: string };
      };
    };
    expect(data.status).toBe("rebuilding");
    expect(data.wait).toMatchObject({
      outcome: "done",
      until: "rebuild",
      lastStatus: { status: "success" },
      project: { projectId: "acme-storefront" },
    });
    expect(data.wait.lastStatus.livePreviewUrl).toMatch(/^https:\/\//);
    expect(text(result)).toMatch(/^The rebuild has ended\./);
    expect(progress.at(-1)).toMatch(/^(Rebuilt, live at https:\/\/\S+|Rebuilding) · \d+s$/);
    expect(credits()).toBeCloseTo(before - 1);

    const status = await call(conn.client, "build_get_rebuild_status", { projectId: "acme-storefront" });
    expect(status.structuredContent).toMatchObject({ status: "success" });
    expect(text(status)).toMatch(/^Rebuild: success, started \S+, \d+s, live at https:\/\//);

    await ok(conn.client, "build_write_file", {
      projectId: "acme-storefront",
      path: "src/broken.ts",
      content: "export const x: number = 'a'; // [rebuild-fail]",
    });
    // The same rebuild as before, on purpose after an edit: repeat: true (issue 28).
    const failed = await call(conn.client, "build_rebuild", { projectId: "acme-storefront", wait: true, repeat: true });
    expect(failed.isError).toBe(true);
    expect(text(failed)).toMatch(
      /The rebuild failed: BUILD_FAILED: npm run build failed: Type error in src\/broken\.ts/,
    );
    const after = await call(conn.client, "build_get_rebuild_status", { projectId: "acme-storefront" });
    expect(after.structuredContent).toMatchObject({ status: "error", errorCode: "BUILD_FAILED" });
    expect(text(after)).toMatch(/Error BUILD_FAILED: "npm run build failed/);

    // Nothing to wait for on a project never rebuilt.
    const idle = await ok<{ outcome: string }>(conn.client, "build_wait", {
      projectId: "booking-app",
      until: "rebuild",
    });
    expect(idle.outcome).toBe("idle");
  });

  it("gets the source archive and uploads files, charging their prices", async () => {
    let before = credits();
    const src = await call(conn.client, "build_get_source_code", { projectId: "acme-storefront" });
    expect(src.structuredContent).toMatchObject({
      projectId: "acme-storefront",
      lastCommitSha: expect.stringMatching(/^[0-9a-f]{40}$/),
    });
    expect(text(src)).toMatch(
      /^Source ZIP of acme-storefront \(\d+ files, commit [0-9a-f]{40}\): https:\/\/\S+\.zip\?/,
    );
    expect(credits()).toBeCloseTo(before - 1);

    before = credits();
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]);
    const up = await call(conn.client, "build_upload_file", {
      projectId: "acme-storefront",
      name: "logo.png",
      content: `data:image/png;base64,${png.toString("base64")}`,
      mimeType: "image/png",
    });
    expect(up.isError).toBeFalsy();
    expect(up.structuredContent).toMatchObject({
      name: "logo.png",
      bytes: 12,
      fileNameId: expect.any(String),
      url: expect.stringMatching(/^https:\/\/.*logo\.png/),
    });
    expect(text(up)).toMatch(/build_start_agent inputFiles/);
    expect(credits()).toBeCloseTo(before - 0.5);
    const stored = sandbox.build.project("acme-storefront")!.source!.uploads.at(-1)!;
    expect(stored).toMatchObject({ name: "logo.png", type: "image/png", size: 12 });

    const broken = await call(conn.client, "build_upload_file", {
      projectId: "acme-storefront",
      name: "upload-fail.png",
      content: png.toString("base64"),
    });
    expect(text(broken)).toMatch(/HTTP 500, UPLOAD_FAILED[\s\S]*Next step: .*build_get_account/);
    const uploads = hits(`POST ${P}/files/upload`);
    const bad = await call(conn.client, "build_upload_file", {
      projectId: "acme-storefront",
      name: "x.png",
      content: "%%%",
    });
    expect(text(bad)).toMatch(/content: content must be base64/);
    expect(hits(`POST ${P}/files/upload`)).toBe(uploads);
  });

  it("refuses an unaffordable write or rebuild without sending it", async () => {
    const { recurrentCredits, oneTimeCredits } = sandbox.build.balance();
    sandbox.build.setCredits(0, 0.05);
    try {
      const puts = hits(`PUT ${P}/files/content`);
      const r = await call(conn.client, "build_write_file", {
        projectId: "acme-storefront",
        path: "a.txt",
        content: "a",
      });
      expect(text(r)).toMatch(
        new RegExp(
          /Not enough credits: Write a\.txt in acme-storefront costs 0\.1 credits /.source +
            /\(UPDATE_FILE 0\.1\) and the balance is 0\.05/.source,
        ),
      );
      expect(hits(`PUT ${P}/files/content`)).toBe(puts);
    } finally {
      sandbox.build.setCredits(recurrentCredits, oneTimeCredits);
    }
  });
});

describe("build_files: rebuilds in simulated real time", () => {
  let sandbox: Sandbox;
  let conn: StdioConnection;

  beforeAll(async () => {
    sandbox = await testSandbox({ timeScale: 60 }); // a rebuild (2 min) lasts 2 s
    conn = await retryStart(() => connectStdio(sandboxEnv(sandbox)));
  });
  afterAll(async () => {
    await conn?.close();
    await sandbox?.close();
  });

  it("refuses a second rebuild while one runs, and build_wait follows the running one", async () => {
    const started = await ok<{ startedAt: string; status: string }>(conn.client, "build_rebuild", {
      projectId: "booking-app",
    });
    expect(started.status).toBe("rebuilding");
    const again = await call(conn.client, "build_rebuild", { projectId: "booking-app", repeat: true });
    expect(text(again)).toMatch(/HTTP 409, REBUILD_RUNNING[\s\S]*build_wait \{ until: "rebuild" \}/);
    const polling = await ok(conn.client, "build_get_rebuild_status", { projectId: "booking-app" });
    expect(polling).toMatchObject({ status: "rebuilding", finishedAt: null });

    const progress: string[] = [];
    const waited = await conn.client.callTool(
      { name: "build_wait", arguments: { projectId: "booking-app", until: "rebuild", since: started.startedAt } },
      { onprogress: (p) => progress.push(p.message ?? ""), timeout: 20_000 },
    );
    expect(waited.structuredContent).toMatchObject({ outcome: "done", until: "rebuild" });
    expect(progress[0]).toMatch(/^Rebuilding · \d+s$/);
    expect(progress.at(-1)).toMatch(/^Rebuilt, live at https:\/\/\S+ · \d+s$/);
  });

  it("stops rebuilds at the plan's limit", async () => {
    sandbox.build.setAccountPlan("free");
    try {
      // booking-app already used one this hour; the free plan allows three.
      for (let i = 0; i < 2; i++) {
        const r = await call(conn.client, "build_rebuild", { projectId: "booking-app", wait: true, repeat: true });
        expect(r.isError, text(r)).toBeFalsy();
      }
      const limited = await call(conn.client, "build_rebuild", { projectId: "booking-app", repeat: true });
      expect(text(limited)).toMatch(/HTTP 400, REBUILD_LIMIT_REACHED[\s\S]*Next step: the plan's rebuild limit/);
    } finally {
      sandbox.build.setAccountPlan("paid");
    }
  });
});
