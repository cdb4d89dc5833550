import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Sandbox } from "../../src/sandbox/index.js";
import { call, connectStdio, ok, retryStart, sandboxEnv, testSandbox, text, type StdioConnection } from "../harness.js";

const EXPORT = "POST /api/v1/vcaas/projects/:projectId/export";
const IMPORT = "POST /api/v1/vcaas/projects/:projectId/import";
/** The shape of an import code (`<project>-export-project-<32 hex>.zip`): it must never get out. */
const CODE = /export-project-[0-9a-f]{32}/;

describe("build_transfer: export, then import into a fresh project", () => {
  let sandbox: Sandbox;
  let conn: StdioConnection;
  let transferId: string;
  const outputs: string[] = [];
  const hits = (key: string) => sandbox.build.router.count(key);
  const record = <T>(result: T) => {
    outputs.push(JSON.stringify(result));
    return result;
  };

  beforeAll(async () => {
    // An import lasts 4 simulated minutes: 6 s here, longer than the details cache (2 s) and the
    // moment after the call when details still show no lock (1 s), so the wait sees the lock.
    sandbox = await testSandbox({ timeScale: 40 });
    conn = await retryStart(() => connectStdio(sandboxEnv(sandbox)));
  });
  afterAll(async () => {
    await conn?.close();
    await sandbox?.close();
  });

  it("clones a project with its records for 9 credits, following the import to the end", async () => {
    const start = sandbox.build.balance().credits;
    const exported = record(
      await call(conn.client, "build_export_project", { projectId: "acme-storefront", includeRecords: true }),
    );
    expect(exported.isError).toBeFalsy();
    const data = exported.structuredContent as { transferId: string; expiresAt: string; includeRecords: boolean };
    expect(data.transferId).toMatch(/^tr_v1\.[A-Za-z0-9_-]{100,}$/);
    expect(data.includeRecords).toBe(true);
    expect(Date.parse(data.expiresAt) - Date.now()).toBeGreaterThan(50 * 60_000);
    expect(text(exported)).toMatch(/build_import_project \{ projectId: "<a fresh project>", transferId: "tr_/);
    transferId = data.transferId;

    await ok(conn.client, "build_create_project", { projectId: "acme-clone" });
    const progress: string[] = [];
    const imported = record(
      await conn.client.callTool(
        { name: "build_import_project", arguments: { projectId: "acme-clone", transferId, wait: true } },
        { onprogress: (p) => progress.push(p.message ?? ""), timeout: 30_000 },
      ),
    );
    expect(imported.isError).toBeFalsy();
    expect(imported.structuredContent).toMatchObject({
      projectId: "acme-clone",
      status: "importing",
      wait: { outcome: "done", until: "import", project: { importInProgress: null, agentServerStatus: "Active" } },
    });
    // The lock was seen while the import ran, then released with a live server.
    expect(progress[0]).toBe("Importing and rebuilding · started"); // from the import's answer
    expect(progress.some((m) => /^Importing and rebuilding · \d+s/.test(m))).toBe(true);
    expect(progress.at(-1)).toMatch(/^Import finished/);
    expect(sandbox.build.balance().credits).toBeCloseTo(start - 9); // export 2 + create 1 + import 6

    const customers = await ok<{ count: number }>(conn.client, "build_query_database", {
      projectId: "acme-clone",
      tableName: "customers",
      queryOptions: { _limit: 100 },
    });
    expect(customers.count).toBe(30);
  });

  it("is never retried and never blindly repeated: the limits answer 400 and cost nothing", async () => {
    const balance = sandbox.build.balance().credits;
    const again = record(await call(conn.client, "build_export_project", { projectId: "acme-storefront" }));
    expect(again.isError).toBe(true);
    expect(text(again)).toMatch(/HTTP 400, PROJECT_EXPORT_LIMIT_REACHED/);
    expect(text(again)).toMatch(/Next step: exports are limited to 1 per minute and 5 per hour/);
    expect(hits(EXPORT)).toBe(2);

    // The clone now has two versions: not a fresh target any more.
    const notFresh = record(await call(conn.client, "build_import_project", { projectId: "acme-clone", transferId }));
    expect(text(notFresh)).toMatch(/HTTP 400, PROJECT_NOT_IMPORTABLE/);
    expect(text(notFresh)).toMatch(/build_create_project/);

    // The same transferId serves again; the import allowance (1 per minute) is what refuses it.
    await ok(conn.client, "build_create_project", { projectId: "acme-clone-two" });
    const limited = record(
      await call(conn.client, "build_import_project", { projectId: "acme-clone-two", transferId }),
    );
    expect(text(limited)).toMatch(/HTTP 400, PROJECT_IMPORT_LIMIT_REACHED/);
    expect(hits(IMPORT)).toBe(3);
    expect(sandbox.build.balance().credits).toBeCloseTo(balance - 1); // only the second create
  });

  it("takes exactly one of transferId or importCode, and keeps a caller's code secret", async () => {
    const before = hits(IMPORT);
    const neither = record(await call(conn.client, "build_import_project", { projectId: "acme-clone-two" }));
    expect(text(neither)).toMatch(
      /^Invalid arguments for build_import_project: pass exactly one of transferId or importCode/,
    );
    const unknown = record(
      await call(conn.client, "build_import_project", { projectId: "acme-clone-two", transferId: "tr_0000" }),
    );
    expect(text(unknown)).toMatch(
      /transferId tr_0000 is expired \(valid 1 h\), altered, or made by a server with another/,
    );
    expect(hits(IMPORT)).toBe(before);

    const foreign = "other-account-export-project-0123456789abcdef0123456789abcdef.zip";
    const refused = record(
      await call(conn.client, "build_import_project", { projectId: "acme-clone-two", importCode: foreign }),
    );
    expect(refused.isError).toBe(true);
    expect(text(refused)).toMatch(/INVALID_IMPORT_CODE/);
    expect(hits(IMPORT)).toBe(before + 1);
  });

  it("never lets an import code out: not in results, errors or logs", () => {
    for (const output of outputs) expect(output).not.toMatch(CODE);
    expect(conn.stderr()).toMatch(/build_export_project/);
    expect(conn.stderr()).not.toMatch(CODE);
  });
});
