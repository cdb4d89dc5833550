import { z } from "zod";
import { definePrompt } from "../../core/service/prompts.js";

export const builderPrompts = [
  definePrompt({
    name: "launch_and_track",
    title: "Launch and track a project",
    description: "Launch a project from an idea, follow the build to the end, and deploy it",
    args: {
      idea: z.string().describe("What the app should do"),
      projectId: z.string().optional().describe("Preferred project id"),
    },
    text: ({ idea, projectId }) =>
      [
        `Build this app with the build service: ${idea}`,
        "",
        "Work like this:",
        "1. Call build_get_account and build_get_credit_costs; tell me the balance and what the launch will cost " +
          "(CREATE_PROJECT, plus UPLOAD_FILE per uploaded file, then 10-40 credits for the agent run).",
        `2. Call build_launch_project with a projectId${projectId ? ` (prefer "${projectId}")` : ""} of 4-35 ` +
          "lowercase letters, digits and hyphens, and a clear, complete prompt. Use the projectId it returns: " +
          "a taken id gets a suffix.",
        '3. Follow the run with build_wait { until: "agent" } (or wait: true on the launch). ' +
          "Relay the progress in one line each time; if the agent asks for secrets (secretKeysNeeded), " +
          "ask me for them and set them with build_set_secret.",
        "4. When the run is done, summarise what was built from build_get_conversation, " +
          "then deploy with build_deploy { wait: true } and give me the production URL.",
        "5. If anything fails, quote the error, say what it cost, and propose the next step; " +
          "never retry a paid call without asking me.",
      ].join("\n"),
  }),
];
