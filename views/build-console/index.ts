import { ViewBridge, type ToolResult } from "../shared/bridge.js";
import { isObject, type Json } from "../shared/format.js";
import { isErrorResult, structuredOf, textOf } from "../shared/result.js";
import { followTheme } from "../shared/theme.js";
import { applyPoll, carryOver, isRunning, nextPoll, stateFromResult, type BuildState } from "./phase.js";
import { Poller, type TickOutcome } from "./poller.js";
import { createUi, followingText, renderElapsed, renderState, renderStatus } from "./render.js";

/**
 * Build console for build_launch_project, build_start_agent, build_wait and build_deploy. While
 * the work runs it follows it with the server's read tools; the only action it offers (Deploy)
 * is a build_deploy call, which goes through the server's credit guard.
 */

/** Poll interval; a test host may shorten it with <html data-poll-interval-ms>. */
const POLL_MS = Math.max(100, Number(document.documentElement.dataset.pollIntervalMs) || 3000);
const READ_TIMEOUT_MS = 30_000;
/** build_deploy may wait for the user to confirm the credits. */
const DEPLOY_TIMEOUT_MS = 15 * 60_000;

const bridge = new ViewBridge({ name: "switchboard-build-console", version: "1.0.0" });
followTheme(bridge);
const ui = createUi();
document.body.append(ui.root);

let state: BuildState | null = null;
let toolArgs: Json = {};
let lastError: string | undefined;
let stoppedOnErrors = false;
let tornDown = false;

const poller = new Poller(tick, {
  intervalMs: POLL_MS,
  onStop: (reason) => {
    stoppedOnErrors = reason === "failures";
    refresh();
  },
});

bridge.on("toolinput", (p) => (toolArgs = p.arguments ?? {}));
bridge.on("toolresult", (result) => open(result));
bridge.on("toolcancelled", (p) => {
  renderStatus(ui, `The tool call was cancelled${p.reason ? `: ${p.reason}` : ""}.`);
});
bridge.on("teardown", () => {
  tornDown = true;
  poller.stop();
  window.clearInterval(ticker);
});
document.addEventListener("visibilitychange", () => (document.hidden ? poller.pause() : poller.resume()));
bridge
  .connect()
  .catch((err: unknown) =>
    renderStatus(ui, `Could not connect to the host: ${err instanceof Error ? err.message : String(err)}`),
  );

/** Which tool opened the view: the host says so in toolInfo; otherwise the result's shape does. */
function toolName(sc: Json | undefined): string {
  const fromHost = bridge.hostContext.toolInfo?.tool?.name;
  if (typeof fromHost === "string") return fromHost;
  if (!sc) return "";
  if (isObject(sc.agent)) return "build_launch_project";
  if (typeof sc.outcome === "string") return "build_wait";
  if (sc.status === "deploying") return "build_deploy";
  return "build_start_agent";
}

function open(result: ToolResult): void {
  const sc = structuredOf(result);
  state = stateFromResult(toolName(sc), sc, isErrorResult(result), textOf(result), toolArgs);
  follow();
}

function follow(): void {
  stoppedOnErrors = false;
  lastError = undefined;
  // A run the view has read nothing of yet is read at once: its first answer fills the console.
  const unread = state?.work === "agent" && state.messages.length === 0;
  if (state && nextPoll(state) && bridge.canCallTools && !tornDown)
    poller.start(isRunning(state.phase) && !unread ? POLL_MS : 0);
  refresh();
}

async function tick(): Promise<TickOutcome> {
  if (!state || tornDown) return "stop";
  const call = nextPoll(state);
  if (!call) return "stop";
  let result: ToolResult;
  try {
    result = await bridge.callServerTool(call, READ_TIMEOUT_MS);
  } catch (err) {
    lastError = err instanceof Error ? err.message : String(err);
    refresh();
    return "retry";
  }
  const sc = structuredOf(result);
  if (result.isError || !sc) {
    lastError = textOf(result, 200) || `${call.name} returned no data`;
    refresh();
    return "retry";
  }
  if (tornDown || !state) return "stop";
  lastError = undefined;
  state = applyPoll(state, call.name, sc);
  refresh();
  if (!nextPoll(state)) return "stop";
  // Work that just ended still needs its links or messages: read them now, not an interval later.
  return isRunning(state.phase) ? "continue" : "again";
}

function refresh(): void {
  if (!state) return;
  renderState(ui, state, Date.now());
  ui.deploy.hidden = !(state.phase === "done" && state.canDeploy && bridge.canCallTools);
  renderStatus(
    ui,
    followingText(state, {
      active: poller.active,
      paused: poller.isPaused,
      intervalMs: POLL_MS,
      error: lastError,
      stoppedOnErrors,
    }),
  );
}

const ticker = window.setInterval(() => {
  if (state && isRunning(state.phase) && !document.hidden) renderElapsed(ui, state, Date.now());
}, 1000);

ui.deploy.addEventListener("click", () => void deploy());

async function deploy(): Promise<void> {
  if (!state?.projectId || tornDown) return;
  const previous = state;
  ui.deploy.disabled = true;
  ui.actionNote.hidden = false;
  ui.actionNote.textContent = "Asking the server to deploy. It may ask you to confirm the credits.";
  try {
    const result = await bridge.callServerTool(
      { name: "build_deploy", arguments: { projectId: previous.projectId } },
      DEPLOY_TIMEOUT_MS,
    );
    if (result.isError) {
      ui.actionNote.textContent = `Not deployed: ${textOf(result, 300) || "the server refused"}`;
      return;
    }
    ui.actionNote.hidden = true;
    state = carryOver(
      previous,
      stateFromResult("build_deploy", structuredOf(result), false, "", { projectId: previous.projectId }),
    );
    follow();
  } catch (err) {
    ui.actionNote.textContent = `Not deployed: ${err instanceof Error ? err.message : String(err)}`;
  } finally {
    ui.deploy.disabled = false;
  }
}

ui.root.addEventListener("click", (e) => {
  const link = (e.target as Element).closest<HTMLAnchorElement>("a[data-external]");
  if (!link) return;
  // A sandboxed view cannot open windows; the host opens links (and may ask the user first).
  e.preventDefault();
  void bridge.openLink(link.href).catch(() => renderStatus(ui, `Open this link yourself: ${link.href}`));
});
