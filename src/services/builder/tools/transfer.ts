import { z } from "zod";
import { ToolError, type ToolContext } from "../../../core/tools/tool.js";
import type { SpendEstimate } from "../credits.js";
import { type BuildDeps, defineTool } from "../deps.js";
import { waitInput } from "../../../core/upstream/wait.js";
import { trimLine } from "../../../core/base/text.js";
import { waitSummary } from "../render.js";
import * as s from "../schemas.js";
import { followHint, resumeWait, startThenWait } from "../waits.js";
import { ENV } from "../../../core/base/settings.js";

/**
 * Project transfer (reference §15): clone = export (2) + create an empty target (1) + import (6).
 *
 * The import code is a bearer credential for the project's data and source that never expires
 * (expiry not stated), so it is not returned: every output of this server passes one scrubber
 * that removes registered secrets, and MCP has no channel to the user that stays out of the
 * model's context and the client's logs (results, progress and elicitation messages all reach
 * them). Export instead returns a `transferId`: the code and its expiry sealed (AES-GCM) under
 * ENV.stateKey, so it opens on every replica and after a restart, and on any server sharing that
 * key (another account's included: a move between accounts); without ENV.stateKey, under a key
 * derived from the build API key, so only the same account opens it. Import takes that id, or an
 * `importCode` the caller brings (an export made outside this server). Nothing is kept in memory.
 */
const TRANSFER_TTL_MS = 60 * 60_000;
const PURPOSE = "transfer";

interface Transfer {
  /** The import code. */
  c: string;
  /** Expiry, epoch ms. */
  e: number;
}

type Sealing = BuildDeps["sealing"];

function sealTransfer(sealing: Sealing, importCode: string): { transferId: string; expiresAt: number } {
  const expiresAt = Date.now() + TRANSFER_TTL_MS;
  return { transferId: `tr_${sealing.seal({ c: importCode, e: expiresAt } satisfies Transfer, PURPOSE)}`, expiresAt };
}

/** The import code a transferId holds; undefined when it is not one of ours, or has expired. */
function openTransfer(sealing: Sealing, transferId: string): string | undefined {
  if (!transferId.startsWith("tr_")) return undefined;
  try {
    const t = sealing.open<Transfer>(transferId.slice(3), PURPOSE);
    return typeof t.c === "string" && t.e > Date.now() ? t.c : undefined;
  } catch {
    return undefined;
  }
}

/**
 * §15 [RC]: an import into an asleep target answers 409 SERVER_NOT_READY while the service starts
 * it. Whether that start is charged is not stated: counted as START_SERVER, as deploy's (§1.6), so
 * the confirmation never understates it. Asleep is assumed to mean Archived or Archiving; a target
 * still being created (a fresh project) is imported into as it is.
 */
async function importEstimate(projectId: string, ctx: ToolContext<BuildDeps>): Promise<SpendEstimate> {
  const { agentServerStatus } = await ctx.deps.client.getProject(projectId, ctx.signal);
  const operation = `Import into ${projectId}`;
  if (agentServerStatus !== "Archived" && agentServerStatus !== "Archiving")
    return { operation, items: [["IMPORT_PROJECT", 1]] };
  return {
    operation:
      `${operation} (its server reads ${agentServerStatus}: this call may start it and answer ` +
      "SERVER_NOT_READY; that start's charge is not stated, counted as START_SERVER; IMPORT_PROJECT " +
      "is charged by the call after it is Active)",
    items: [
      ["START_SERVER", 1],
      ["IMPORT_PROJECT", 1],
    ],
  };
}

const invalid = (tool: string, why: string) =>
  new ToolError(`Invalid arguments for ${tool}: ${why}. Nothing was sent upstream.`);

/** The code to import: the caller's, or the one a transferId holds. */
function codeFor(input: { transferId?: string; importCode?: string }, sealing: Sealing): string {
  if ((input.transferId === undefined) === (input.importCode === undefined))
    throw invalid("build_import_project", "pass exactly one of transferId or importCode");
  if (input.importCode !== undefined) return input.importCode;
  const code = openTransfer(sealing, input.transferId!);
  if (code === undefined)
    throw invalid(
      "build_import_project",
      `transferId ${trimLine(input.transferId, 24)} is expired (valid 1 h), altered, or made by a server ` +
        `with another ${ENV.stateKey} (or, without one, by another account): export again with build_export_project`,
    );
  return code;
}

export function transferTools() {
  return [
    defineTool({
      name: "build_export_project",
      upstream: "POST …/export",
      title: "Export project",
      description:
        "Export a project to clone or move it with build_import_project. Spends EXPORT_PROJECT " +
        "credits; 1/min, 5/h. Returns a transferId valid 1 h on every server sharing this one's " +
        `${ENV.stateKey}, other accounts' included (without it: this account only). The import code is a ` +
        "bearer credential and is never shown; for a target account on no such server, export with the " +
        "service's API directly and pass its importCode to build_import_project.",
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
        const { transferId, expiresAt } = sealTransfer(ctx.deps.sealing, importCode);
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
        codeFor(input, ctx.deps.sealing);
        await ctx.deps.guard.check(await importEstimate(input.projectId, ctx), ctx);
      },
      run: ({ projectId, wait, timeoutSeconds, ...source }, ctx) => {
        ctx.secret(source.importCode);
        return startThenWait(projectId, "import", ctx, { wait, timeoutSeconds }, async () => {
          const data = await ctx.deps.client.transfer.importProject(
            projectId,
            codeFor(source, ctx.deps.sealing),
            ctx.signal,
          );
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
