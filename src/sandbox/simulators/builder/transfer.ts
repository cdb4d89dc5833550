import { randomBytes } from "node:crypto";
import type { BuildContext } from "./context.js";
import { chargeProject } from "./credits.js";
import { startImport } from "./imports.js";
import { fail, type BuildRoutes } from "./routes.js";
import { serverNotReady } from "./server.js";
import { HOUR, MINUTE, type Json, type RecordLink, type SimProject, type Table } from "./state.js";
import { bodyOf } from "./validation.js";
import { addVersion } from "./versions.js";

/**
 * Project transfer (reference §15): export hands out a secret import code; import restores it into
 * an almost empty project in the background, under the import lock of imports.ts. Each is limited
 * to 1 per minute and 5 per hour per account (real time, like the other rate limits); only calls
 * that were carried out count.
 */
const MAX_TABLES = 5;
const MAX_VERSIONS = 1;
const LIMITS = [
  { window: MINUTE, max: 1 },
  { window: HOUR, max: 5 },
];

interface Exported {
  sourceProjectId: string;
  includeRecords: boolean;
  tables: Table[];
  recordLinks: RecordLink[];
}

export function registerTransferRoutes(ctx: BuildContext, routes: BuildRoutes): void {
  const codes = new Map<string, Exported>();
  const exports: number[] = [];
  const imports: number[] = [];
  routes.onProject("POST", "/export", (p, req) => exportProject(ctx, p, bodyOf(req), codes, exports));
  routes.onProject("POST", "/import", (p, req) => importProject(ctx, p, bodyOf(req), codes, imports));
}

/** 400 `code` while the account's calls in `history` (real ms) reach a limit. */
function checkRate(ctx: BuildContext, history: number[], code: string, what: string): void {
  const now = ctx.now();
  for (const { window, max } of LIMITS) {
    if (history.filter((t) => now - t < window).length >= max) {
      fail(400, code, `Project ${what} is limited to 1 per minute and 5 per hour; try again later`);
    }
  }
}

function copyTables(tables: Table[], withRecords: boolean): Table[] {
  return tables.map((t) => ({
    ...t,
    properties: t.properties.map((q) => structuredClone(q)),
    records: withRecords ? structuredClone(t.records) : [],
  }));
}

function exportProject(ctx: BuildContext, p: SimProject, body: Json, codes: Map<string, Exported>, history: number[]) {
  const includeRecords = body.includeRecords === true;
  checkRate(ctx, history, "PROJECT_EXPORT_LIMIT_REACHED", "export");
  chargeProject(ctx, p, "EXPORT_PROJECT");
  history.push(ctx.now());
  const importCode = `${p.projectId}-export-project-${randomBytes(16).toString("hex")}.zip`;
  codes.set(importCode, {
    sourceProjectId: p.projectId,
    includeRecords,
    tables: copyTables(p.tables, includeRecords),
    recordLinks: includeRecords ? structuredClone(p.recordLinks ?? []) : [],
  });
  const message =
    "Export created. Keep the import code secret: whoever holds it can import this project's data and source.";
  return { importCode, includeRecords, message };
}

function importProject(ctx: BuildContext, p: SimProject, body: Json, codes: Map<string, Exported>, history: number[]) {
  const { importCode } = body;
  if (typeof importCode !== "string" || importCode.trim() === "")
    fail(400, "MISSING_IMPORT_CODE", "importCode is required");
  if (p.importLock) fail(400, "IMPORT_IN_PROGRESS", "An import is already running on this project");
  if (p.run?.state === "running")
    fail(409, "AGENT_RUNNING", "The agent is running on this project; wait until it is done");
  if (p.tables.length > MAX_TABLES || p.versions.length > MAX_VERSIONS) {
    fail(
      400,
      "PROJECT_NOT_IMPORTABLE",
      `Only a fresh project can be imported into (at most ${MAX_TABLES} tables and ${MAX_VERSIONS} version); ` +
        "create a new one",
    );
  }
  const source = codes.get(importCode.trim());
  if (!source) fail(400, "INVALID_IMPORT_CODE", "The import code is not valid");
  checkRate(ctx, history, "PROJECT_IMPORT_LIMIT_REACHED", "import");
  // §15 [RC]: 409 SERVER_NOT_READY for an asleep target. Assumed: asleep = Archived or Archiving (a
  // server being created or started is left to the import), and START_SERVER is charged as for deploy.
  if (p.server.status === "Archived" || p.server.status === "Archiving") serverNotReady(ctx, p, "import");
  chargeProject(ctx, p, "IMPORT_PROJECT");
  history.push(ctx.now());
  // The target's data is dropped at once; the export is restored when the background job ends.
  p.tables = [];
  p.recordLinks = undefined;
  startImport(ctx, p, {
    onSuccess: (at) => {
      p.tables = copyTables(source.tables, source.includeRecords);
      p.recordLinks = structuredClone(source.recordLinks);
      addVersion(ctx, p, at, `Version ${p.versions.length + 1}`, `Import from ${source.sourceProjectId}`, "");
    },
  });
  return {
    projectId: p.projectId,
    status: "importing",
    message: "Import started; poll the project's importInProgress until it is null",
  };
}
