import { randomBytes } from "node:crypto";
import { z } from "zod";
import { ToolError } from "../../../core/tools/tool.js";
import { defineTool } from "../deps.js";
import { waitInput } from "../../../core/upstream/wait.js";
import { trimLine } from "../../../core/base/text.js";
import { waitSummary } from "../render.js";
import * as s from "../schemas.js";
import { followHint, resumeWait, startThenWait } from "../waits.js";

/**
 * Project transfer (reference §15): clone = export (2) + create an empty target (1) + import (6).
 *
 * The import code is a bearer credential for the project's data and source, and every output of
 * this server is scrubbed of registered secrets, so it cannot be handed out. Export keeps it in
 * this process's memory for TRANSFER_TTL_MS under an opaque `transferId`; import takes that id,
 * or an `importCode` the caller brings (an export made by another account, outside this server).
 * The code never reaches the model, a log line or a task status. Lost on restart, and not shared
 * between replicas: then export again.
 */
const TRANSFER_TTL_MS = 60 * 60_000;
const MAX_TRANSFERS = 100;

interface Transfer {
  importCode: string;
  expiresAt: number;
}

/** Import codes this server exported, by transferId; oldest dropped first past MAX_TRANSFERS. */
class TransferVault {
  private readonly held = new Map<string, Transfer>();

  keep(importCode: string): { transferId: string; expiresAt: number } {
    this.prune();
    const transferId = `tr_${randomBytes(16).toString("hex")}`;
    const expiresAt = Date.now() + TRANSFER_TTL_MS;
    this.held.set(transferId, { importCode, expiresAt });
    if (this.held.size > MAX_TRANSFERS) this.held.delete(this.held.keys().next().value!);
    return { transferId, expiresAt };
  }

  get(transferId: string): Transfer | undefined {
    this.prune();
    return this.held.get(transferId);
  }

  private prune(): void {
    const now = Date.now();
    for (const [id, t] of this.held) if (t.expiresAt <= now) this.held.delete(id);
  }
}

const invalid = (tool: string, why: string) =>
  new ToolError(`Invalid arguments for ${tool}: ${why}. Nothing was sent upstream.`);

export function transferTools() {
  const vault = new TransferVault();

  /** The code to import: the caller's, or the one kept for transferId. */
  const codeFor = (input: { transferId?: string; importCode?: string }): string => {
    if ((input.transferId === undefined) === (input.importCode === undefined))
      throw invalid("build_import_project", "pass exactly one of transferId or importCode");
    if (input.importCode !== undefined) return input.importCode;
    const held = vault.get(input.transferId!);
    if (!held)
      throw invalid(
        "build_import_project",
        `transferId ${input.transferId} is unknown or expired (kept 1 h, lost on restart): export ` +
          `again with build_export_project`,
      );
    return held.importCode;
  };

  return [
    defineTool({
      name: "build_export_project",
      upstream: "POST …/export",
      title: "Export project",
      description:
        "Export a project to clone it with build_import_project. Spends EXPORT_PROJECT credits; " +
        "1/min, 5/h. Returns a transferId valid 1 h on this server; the secret import code is never shown.",
      toolset: "build_transfer",
      kind: "spend",
      input: {
        projectId: s.projectId,
        includeRecords: z.boolean().optional().describe("Also copy table rows (default: schema and config only)"),
      },
      output: z.looseObject({
        projectId: z.string(),
        transferId: z.string(),
        expiresAt: z.string(),
        includeRecords: z.boolean().optional(),
        message: z.string().optional(),
      }),
      verify: () =>
        "a lost export answer leaves no usable code whether or not it ran: wait a minute, then export again",
      before: ({ projectId }, ctx) =>
        ctx.deps.guard.check({ operation: `Export ${projectId}`, items: [["EXPORT_PROJECT", 1]] }, ctx),
      run: async ({ projectId, includeRecords }, ctx) => {
        const { importCode, ...data } = await ctx.deps.client.transfer.exportProject(
          projectId,
          includeRecords ?? false,
          ctx.signal,
        );
        if (typeof importCode !== "string" || importCode === "")
          throw new ToolError(
            `The export of ${projectId} answered without an import code; it may have been charged. ` +
              `Check build_get_account before exporting again.`,
          );
        ctx.secret(importCode);
        const { transferId, expiresAt } = vault.keep(importCode);
        return { ...data, projectId, transferId, expiresAt: new Date(expiresAt).toISOString() };
      },
      render: (r) =>
        `Exported ${r.projectId}${r.includeRecords ? " with its records" : ""}. Import it with ` +
        `build_import_project { projectId: "<a fresh project>", transferId: "${r.transferId}" } ` +
        `before ${r.expiresAt}.${r.message ? `\nService: "${trimLine(r.message, 200)}"` : ""}`,
    }),

    defineTool({
      name: "build_import_project",
      upstream: "POST …/import",
      title: "Import project",
      description:
        "Import an export into a new empty project (from build_create_project), dropping all its data. " +
        "Spends IMPORT_PROJECT credits; 1/min, 5/h.",
      toolset: "build_transfer",
      kind: "spend",
      // §15: "Its existing data is always dropped".
      destroys: ({ projectId }) =>
        `All existing data of project ${projectId} (its database and code) is dropped and replaced by the export.`,
      longRunning: { runsAsTask: (input) => input.wait === true, resume: resumeWait },
      input: {
        projectId: s.projectId,
        transferId: z.string().min(1).optional().describe("From build_export_project"),
        importCode: z
          .string()
          .min(1, "importCode must not be empty")
          .optional()
          .describe("Or a code exported by another account"),
        ...waitInput,
      },
      output: s.startedWork,
      verify: ({ projectId }) =>
        `call build_get_project for "${projectId}" and read importInProgress; do not import again ` +
        `blindly (each call is charged and counted)`,
      before: async (input, ctx) => {
        ctx.secret(input.importCode);
        codeFor(input);
        await ctx.deps.guard.check(
          { operation: `Import into ${input.projectId}`, items: [["IMPORT_PROJECT", 1]] },
          ctx,
        );
      },
      run: ({ projectId, wait, timeoutSeconds, ...source }, ctx) => {
        ctx.secret(source.importCode);
        return startThenWait(projectId, "import", ctx, { wait, timeoutSeconds }, async () => {
          const data = await ctx.deps.client.transfer.importProject(projectId, codeFor(source), ctx.signal);
          return { ...data, projectId: String(data.projectId ?? projectId) };
        });
      },
      render: (r) =>
        `The existing data of ${r.projectId} was dropped for the import. ` +
        (r.wait
          ? waitSummary(r.wait)
          : `Import into ${r.projectId} started (${r.status ?? "importing"}). Follow it with ` +
            `${followHint(r.projectId, "import", r.startedAt)}.`),
    }),
  ];
}
