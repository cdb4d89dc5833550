import { z } from "zod";

/**
 * Zod schemas of the build service, from its documentation (docs/openapi/build-service.yaml).
 * Inputs enforce every documented rule so a request the upstream would reject never leaves the
 * server. Outputs are loose: fields the specs do not show pass through untouched.
 */

/** The rule for a new project's id (create, launch). A taken id gets 2-6 characters appended. */
export const newProjectId = z
  .string()
  .min(4, "projectId must be 4-35 characters")
  .max(35, "projectId must be 4-35 characters")
  .regex(
    /^[a-z][a-z0-9-]*$/,
    "projectId must start with a lowercase letter and hold only lowercase letters, digits and hyphens",
  );

/**
 * An identifier that goes into a URL path: non-empty and encodable. Its length cap is ours, not the
 * service's (a usable path segment), so it is checked like encodability, in a refine: a refine
 * is not published in the tool's input schema, where the cap cost 5 tokens on 57 fields.
 */
export const pathId = (field: string) =>
  z
    .string()
    .min(1, `${field} is required`)
    .refine((v) => v.length <= 200, `${field} is too long`)
    .refine((v) => v.isWellFormed(), `${field} must be valid Unicode (no lone surrogates)`);

/**
 * An existing project's id: whatever create or launch returned. A suffixed id can be longer than
 * the 35 characters a new id may have, so lookups check only that it is a usable path segment.
 */
export const projectId = pathId("projectId");

export const description = z.string().max(500, "description must be at most 500 characters");
export const label = z.string().max(80, "label must be at most 80 characters");
export const environment = z.enum(["development", "production", "both"]);

const base64 = /^[A-Za-z0-9+/\s]*={0,2}\s*$/;

const launchFile = z
  .object({
    name: z.string().min(1, "files[].name is required"),
    description: z.string().optional().describe("What it shows"),
    url: z
      .string()
      .url("files[].url must be a public http(s) URL")
      .regex(/^https?:\/\//i, "files[].url must be a public http(s) URL")
      .optional()
      .describe("Public URL, passed as is"),
    content: z
      .string()
      .min(1)
      .refine(
        (c) => base64.test(c.replace(/^data:[^,]*;base64,/, "")),
        "files[].content must be base64 (a data-URL prefix is accepted)",
      )
      .optional()
      .describe("Base64 (data: prefix accepted); costs UPLOAD_FILE"),
  })
  .refine((f) => (f.url === undefined) !== (f.content === undefined), "each file needs exactly one of url or content");

const launchSecret = z.object({
  secretName: z.string().min(1, "secretName is required"),
  secretValue: z.string().min(1, "secretValue is required").describe("Never returned"),
  environment: environment.optional().describe("Default both"),
});

const creditLimit = z.number().positive("a credit limit must be a positive number or null").nullable().optional();

/** A prompt runs exactly as sent: checked for content, never trimmed. */
export const prompt = z.string().refine((p) => p.trim().length > 0, "prompt must not be empty");

export const launchFields = {
  projectId: newProjectId,
  prompt: prompt.describe("First prompt"),
  // The service ignores an unknown model or effort and reports it in agent.warnings: pass them on.
  model: z.string().min(1).optional().describe("opus (default) or sonnet"),
  effort: z.string().min(1).optional().describe("low, medium, high or xhigh"),
  fastMode: z.boolean().optional().describe("Opus only"),
  description: description.optional(),
  label: label.optional(),
  groupId: z.string().min(1).optional(),
  files: z.array(launchFile).max(10, "at most 10 files").optional(),
  creditLimits: z
    .object({ maxDevelopmentCreditsPerMonth: creditLimit, maxInfrastructureCreditsPerMonth: creditLimit })
    .optional()
    .describe("Monthly caps; null = none"),
  secrets: z
    .array(launchSecret)
    .max(50, "at most 50 secrets")
    .refine((list) => new Set(list.map((s) => s.secretName)).size === list.length, "secret names must be unique")
    .optional(),
  figma: z
    .object({ token: z.string().min(1, "figma.token is required") })
    .optional()
    .describe("Figma personal access token"),
};

// ---- outputs ----

export const account = z.looseObject({
  credits: z.number(),
  recurrentCredits: z.number().optional(),
  oneTimeCredits: z.number().optional(),
});

export const creditCosts = z.looseObject({ creditCosts: z.record(z.string(), z.number()) });

export const projectListItem = z.looseObject({
  projectId: z.string(),
  description: z.string().optional(),
  plan: z.string().optional(),
  createdAt: z.string().optional(),
  label: z.string().optional(),
  groupId: z.string().optional(),
  previewImageUrl: z.string().optional(),
  lastModifiedAt: z.string().optional(),
  productionProjectUrl: z.string().optional(),
});

export const deployment = z.looseObject({
  status: z.string().nullable().optional(),
  createdAt: z.string().nullable().optional(),
  versionId: z.string().nullable().optional(),
});

/** A multi-prompt batch, on agent/status and the details (§4); only its `status` done/cancelled ends it. */
export const multiPrompt = z.looseObject({
  status: z.string(),
  totalPrompts: z.number().optional(),
  currentPromptIndex: z.number().optional(),
  prompts: z
    .array(
      z.looseObject({ order: z.number().optional(), prompt: z.string().optional(), status: z.string().optional() }),
    )
    .optional(),
  startedAt: z.string().optional(),
  updatedAt: z.string().optional(),
});

export const projectDetails = projectListItem.extend({
  agentProcessStatus: z.string().optional(),
  agentServerStatus: z.string().optional(),
  deployment: deployment.nullable().optional(),
  versionRecovery: z
    .looseObject({
      status: z.string(),
      versionId: z.string().optional(),
      startedAt: z.string().optional(),
      errorMessage: z.string().optional(),
    })
    .nullable()
    .optional(),
  importInProgress: z
    .looseObject({ startedAt: z.string().optional(), errorMessage: z.string().optional() })
    .nullable()
    .optional(),
  secrets: z
    .array(z.looseObject({ _id: z.string(), secretName: z.string(), environment: z.string().optional() }))
    .optional(),
  customDomain: z.looseObject({ hostname: z.string(), status: z.string().optional() }).nullable().optional(),
  temporalDevelopmentProjectUrl: z.string().nullable().optional(),
  cachedDevelopmentUrl: z.string().nullable().optional(),
  developmentUrlFieldToUse: z.string().nullable().optional(),
  totalCreditsSpent: z.number().optional(),
  multiPrompt: multiPrompt.nullable().optional(),
});
export type ProjectDetails = z.infer<typeof projectDetails>;

export const message = z.looseObject({
  author: z.string().optional(),
  message: z.string().optional(),
  messageType: z.string().optional(),
  createdAt: z.string().optional(),
  versionId: z.string().optional(),
  secretKeysNeeded: z
    .record(z.string(), z.looseObject({ isProvided: z.boolean().optional(), description: z.string().optional() }))
    .optional(),
  gitDiffUrl: z.string().optional(),
});
export type ConversationMessage = z.infer<typeof message>;

export const agentStatus = z.looseObject({
  projectId: z.string().optional(),
  status: z.string(),
  startedAt: z.string().nullable().optional(),
  creditsSpent: z.number().optional(),
  realtimeConversation: z.array(message).optional(),
  multiPrompt: multiPrompt.nullable().optional(),
});
export type AgentStatus = z.infer<typeof agentStatus>;

export const waitResult = z.object({
  outcome: z
    .enum(["done", "failed", "timed_out", "idle"])
    .describe(
      "done: finished; failed: ended in error; timed_out: still running, call build_wait again; idle: " +
        "nothing was running",
    ),
  until: z.enum(["agent", "deployment", "versionRecovery", "import", "server", "rebuild", "githubPull"]),
  elapsedSeconds: z.number(),
  polls: z.number().int(),
  message: z.string(),
  creditsSpent: z.number().optional().describe("agent runs: credits the run has used"),
  lastStatus: z.looseObject({}).optional().describe("rebuild, githubPull: the last status read"),
  project: projectDetails,
});
export type WaitResult = z.infer<typeof waitResult>;

/** What a tool that starts work the client may follow answers: the upstream's status and when it began. */
export const startedWork = z.looseObject({
  projectId: z.string(),
  status: z.string().optional(),
  message: z.string().optional(),
  startedAt: z.string(),
  wait: waitResult.optional(),
});

export const launchResult = z.looseObject({
  projectId: z.string(),
  requestedProjectId: z.string().optional(),
  description: z.string().optional(),
  plan: z.string().optional(),
  createdAt: z.string().optional(),
  label: z.string().optional(),
  groupId: z.string().optional(),
  creditLimits: z.looseObject({}).optional(),
  files: z
    .array(z.looseObject({ name: z.string(), imageDescription: z.string().optional(), url: z.string().optional() }))
    .optional(),
  secrets: z
    .array(z.looseObject({ _id: z.string().optional(), secretName: z.string(), environment: z.string().optional() }))
    .optional(),
  figma: z.looseObject({ connected: z.boolean().optional() }).optional(),
  agent: z
    .looseObject({
      started: z.boolean(),
      warnings: z.array(z.string()).optional(),
      status: z.string().optional(),
      message: z.string().optional(),
    })
    .optional(),
  // §3: [C] documents {step, errorCode, errorMessage}; [RC] types items {step?, message?, endpoint?}.
  warnings: z
    .array(
      z.looseObject({
        step: z.string().optional(),
        errorCode: z.string().optional(),
        errorMessage: z.string().optional(),
        message: z.string().optional(),
        endpoint: z.string().optional(),
      }),
    )
    .optional(),
  wait: waitResult.optional().describe("present with wait: true"),
});

export type LaunchResult = z.infer<typeof launchResult>;

/** §7: `_id` is for recover, `commitSha` for version-diff; no lookup exists between them. */
export const version = z.looseObject({
  _id: z.string(),
  name: z.string().optional(),
  commitSha: z.string().optional(),
  commitMessage: z.string().optional(),
  prompt: z.string().optional(),
  recoveredVersionId: z.string().optional(),
  createdAt: z.string().optional(),
});

export const table = z.looseObject({
  _id: z.string().optional(),
  type: z.string().optional(),
  label: z.string().optional(),
  description: z.string().optional(),
  properties: z.unknown().optional(),
});
