import { describe, expect, it } from "vitest";
import { RUNNING_LINE } from "../../src/services/builder/completion.js";
import { startedLine } from "../../src/services/builder/waits.js";

describe("startedLine: a wait's first line, from the start's own answer", () => {
  it("names the running work for each start answer the reference documents", () => {
    expect(startedLine("deployment", { status: "deploying" })).toBe("Deploying · started");
    expect(startedLine("agent", { status: "init" })).toBe(`${RUNNING_LINE.agent} · started`);
    expect(startedLine("import", { status: "importing" })).toBe(`${RUNNING_LINE.import} · started`);
    expect(startedLine("rebuild", { status: "rebuilding" })).toBe("Rebuilding · started");
    expect(startedLine("githubPull", { status: "pulling" })).toBe(`${RUNNING_LINE.githubPull} · started`);
    expect(startedLine("server", { status: "starting" })).toBe("Server starting · started");
    // recover answers only {message}: its 2xx is the news.
    expect(startedLine("versionRecovery", { message: "Version recovery initiated", versionId: "v1" })).toBe(
      "Recovering version v1 · started",
    );
  });

  it("says nothing when the answer does not say the work runs", () => {
    expect(startedLine("githubPull", { status: "no_changes" })).toBeUndefined();
    expect(startedLine("deployment", {})).toBeUndefined();
    // A launch's answer nests the agent's status: launch sends its own line.
    expect(startedLine("agent", { projectId: "p", agent: { started: true, status: "init" } })).toBeUndefined();
  });
});
