import { createHmac } from "node:crypto";
import { AGENT_MIN_CREDITS, UPFRONT_CREDITS, overDevelopmentCap, startRun } from "./agent.js";
import type { BuildContext } from "./context.js";
import { CREDIT_COSTS } from "./credits.js";
import { checkFigmaToken, validateFigmaShape } from "./figma-token.js";
import { allocateProjectId, checkAccountCanCreate, createProject, validateNewProject } from "./projects.js";
import { fail, type BuildRoutes } from "./routes.js";
import { API, SANDBOX_APPS_DOMAIN, iso, round, type Attachment, type Json, type SimProject } from "./state.js";
import {
  bodyOf,
  runOptions,
  validateCreditLimits,
  validateFiles,
  validateSecrets,
  type FileInput,
} from "./validation.js";
import { secretView } from "./views.js";

/** POST /projects/launch: create a project with files, secrets, limits and Figma, and start the agent. */
export function registerLaunchRoutes(ctx: BuildContext, routes: BuildRoutes): void {
  routes.on("POST", "/projects/launch", (req) => launch(ctx, bodyOf(req)));
}

/** Validation follows the order of the spec's Errors table; nothing is created or charged on failure. */
function launch(ctx: BuildContext, body: Json) {
  if (typeof body.prompt !== "string" || body.prompt.trim() === "") {
    fail(400, "MISSING_PROMPT", "prompt is required and must not be empty");
  }
  const prompt = body.prompt;
  const files = validateFiles(body.files);
  const secrets = validateSecrets(body.secrets);
  const creditLimits = validateCreditLimits(body.creditLimits);
  const figmaToken = validateFigmaShape(body.figma);
  const figma = figmaToken === undefined ? undefined : checkFigmaToken(ctx, figmaToken);
  const fields = validateNewProject(body);
  const uploads = files.filter((f) => f.content !== undefined).length;
  const cost = round(CREDIT_COSTS.CREATE_PROJECT + uploads * CREDIT_COSTS.UPLOAD_FILE);
  // §3: the balance and the run minimum are judged before creation (402, nothing created or charged).
  checkAccountCanCreate(
    ctx,
    fields.groupId,
    round(cost + AGENT_MIN_CREDITS),
    "Creating the project, uploading its files and starting the agent",
  );
  const { projectId, requestedProjectId } = allocateProjectId(ctx, fields.projectId);

  const at = ctx.simNow();
  ctx.wallet.charge(cost);
  const p = createProject(ctx, { ...fields, projectId }, at);
  p.totalCreditsSpent = cost;
  p.creditLimits = creditLimits;
  p.files = files.map((f) => storeAttachment(ctx, p, f, at));
  p.secrets = secrets.map((s) => ({ _id: ctx.newId(), ...s }));
  p.figma = figma;
  const { agent, warnings } = launchAgent(ctx, p, prompt, body, at);
  return {
    projectId,
    requestedProjectId,
    description: p.description,
    plan: p.plan,
    createdAt: iso(at),
    label: p.label,
    groupId: p.groupId,
    creditLimits: { ...p.creditLimits },
    files: p.files.map((f) => ({ ...f })),
    secrets: p.secrets.map(secretView),
    figma: figma ? { connected: true, account: { ...figma } } : undefined,
    agent,
    warnings,
  };
}

/** The project exists by now, so a short balance is a warning, not an error. */
function launchAgent(ctx: BuildContext, p: SimProject, prompt: string, body: Json, at: number) {
  const { options, warnings: optionWarnings } = runOptions(body);
  const agentWarnings = optionWarnings.length > 0 ? optionWarnings : undefined;
  const refused = (errorCode: string, reason: string) => {
    const retry = `POST ${API}/projects/${p.projectId}/agent/start`;
    const errorMessage = `The project was created but ${reason}. Then retry with ${retry}`;
    return {
      agent: { started: false, message: errorMessage, warnings: agentWarnings },
      warnings: [{ step: "agent", errorCode, errorMessage }],
    };
  };
  if (overDevelopmentCap(p, UPFRONT_CREDITS)) {
    return refused(
      "PROJECT_CREDIT_LIMIT_REACHED",
      "the project's monthly development credit limit is reached: raise it",
    );
  }
  startRun(ctx, p, prompt, at, options, p.files);
  return {
    agent: {
      started: true,
      status: "init",
      message:
        `The agent is building the first version. Poll GET ${API}/projects/${p.projectId} ` +
        "every 10-15 seconds until agentProcessStatus is done.",
      warnings: agentWarnings,
    },
    warnings: [],
  };
}

/** A url file is kept as given; uploaded content gets a signed URL valid for 7 days. */
function storeAttachment(ctx: BuildContext, p: SimProject, file: FileInput, at: number): Attachment {
  if (file.url !== undefined) return { name: file.name, imageDescription: file.imageDescription, url: file.url };
  const fileId = ctx.newId();
  const expires = Math.floor(at / 1000) + 7 * 24 * 3600;
  const path = `/${p.projectId}/${fileId}/${encodeURIComponent(file.name)}`;
  const signature = createHmac("sha256", "build-sim-files").update(`${path}:${expires}`).digest("hex").slice(0, 32);
  const url = `https://files.${SANDBOX_APPS_DOMAIN}${path}?expires=${expires}&signature=${signature}`;
  return { name: file.name, imageDescription: file.imageDescription, url };
}
