// A task whose work outlives it (the server stops while an upstream build goes on) fails with
// what to do next in the words of the tool's service (ServiceModule.lostTask), never the core's.
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Egress } from "../../src/core/base/egress.js";
import { createLogger } from "../../src/core/base/logger.js";
import type { LostTaskAdvice } from "../../src/core/service/service.js";
import { TaskRunner, type TaskTool } from "../../src/core/tasks/runner.js";
import { MemoryTaskStore } from "../../src/core/tasks/store.js";
import { defineTool } from "../../src/core/tools/tool.js";

const waitForever = defineTool({
  name: "toy_start",
  title: "Start something long",
  description: "Starts upstream work and follows it until it ends.",
  toolset: "toy",
  kind: "spend",
  input: {},
  output: z.object({}),
  longRunning: {},
  run: (_input, ctx) =>
    new Promise((_resolve, reject) => ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason))),
  render: () => "done",
});

async function stoppedTaskMessage(lostTask?: (tool: string) => LostTaskAdvice | undefined): Promise<string> {
  const egress = new Egress();
  const logger = createLogger("error", egress);
  const store = new MemoryTaskStore();
  const runner = new TaskRunner(store, { pollIntervalMs: 1000, logger, lostTask });
  const tool: TaskTool = {
    def: waitForever,
    toolHost: { egress, advice: new Map(), deps: () => undefined },
    logger,
    pin: () => () => undefined,
    resourcesChanged: () => undefined,
  };
  const { taskId } = await runner.start({ owner: "local", tool, input: {} });
  await runner.stopAll();
  const record = await store.get(taskId);
  expect(record?.status).toBe("failed");
  return record!.error!.message;
}

describe("a task the server stopped following", () => {
  it("names the tool its service declares to follow the work", async () => {
    const advice = { follow: "toy_wait" };
    const message = await stoppedTaskMessage((tool) => (tool === "toy_start" ? advice : undefined));
    expect(message).toBe(
      "The server stopped before the work ended; the upstream work goes on: follow it again with toy_wait.",
    );
  });

  it("names no tool when its service declares none", async () => {
    expect(await stoppedTaskMessage()).toBe("The server stopped before the work ended; the upstream work goes on.");
  });
});
