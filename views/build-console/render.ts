import { h, replaceChildren } from "../shared/dom.js";
import { formatDuration } from "../shared/format.js";
import { doneLabel, elapsedMs, isRunning, type AgentMessage, type BuildState } from "./phase.js";

/** The build console's DOM: created once, refreshed from a BuildState. */

export interface ConsoleUi {
  root: HTMLElement;
  project: HTMLElement;
  request: HTMLElement;
  phase: HTMLElement;
  elapsedLabel: HTMLElement;
  elapsed: HTMLElement;
  credits: HTMLElement;
  steps: HTMLOListElement;
  failure: HTMLElement;
  secrets: HTMLElement;
  messages: HTMLElement;
  preview: HTMLElement;
  links: HTMLElement;
  deploy: HTMLButtonElement;
  actionNote: HTMLElement;
  status: HTMLElement;
  notes: HTMLElement;
}

export function createUi(): ConsoleUi {
  const ui: ConsoleUi = {
    root: h("main", { class: "console" }),
    project: h("p", { class: "mono muted" }),
    request: h("p", { class: "request", hidden: true }),
    phase: h("span", { class: "pill phase", "data-phase": "unknown", role: "status" }, "Waiting for the tool result"),
    elapsedLabel: h("span", {}, "Elapsed"),
    elapsed: h("strong", {}, "—"),
    credits: h("strong", {}, "—"),
    steps: h("ol", { class: "steps", "aria-label": "Progress" }),
    failure: h("div", { class: "error-box", role: "alert", hidden: true }),
    secrets: h("div", { class: "warn-box", hidden: true }),
    messages: h("section", { class: "messages", "aria-label": "Latest agent messages" }),
    preview: h("figure", { class: "preview", hidden: true }),
    links: h("section", { class: "links", hidden: true }),
    deploy: h("button", { type: "button", class: "primary", hidden: true }, "Deploy to production"),
    actionNote: h("p", { class: "muted small", hidden: true }),
    status: h("p", { class: "muted small status", "aria-live": "polite" }),
    notes: h("ul", { class: "notes muted small" }),
  };
  ui.root.append(
    h("header", { class: "row spread" }, h("div", {}, h("h1", {}, "Build console"), ui.project), ui.phase),
    h(
      "div",
      { class: "facts row" },
      h("span", {}, ui.elapsedLabel, " ", ui.elapsed),
      h("span", {}, "Credits ", ui.credits),
    ),
    ui.steps,
    ui.request,
    ui.failure,
    ui.secrets,
    ui.messages,
    ui.preview,
    ui.links,
    h("div", { class: "actions row" }, ui.deploy, ui.actionNote),
    ui.status,
    ui.notes,
  );
  return ui;
}

export function renderElapsed(ui: ConsoleUi, state: BuildState, now: number): void {
  const ms = elapsedMs(state, now);
  ui.elapsed.textContent = ms === undefined ? "—" : formatDuration(ms);
}

const WORK_LABEL: Record<BuildState["work"], string> = {
  agent: "Agent run",
  deployment: "Deployment",
  versionRecovery: "Recovery",
  import: "Import",
  server: "Server start",
  rebuild: "Rebuild",
  githubPull: "GitHub pull",
};

type StepState = "todo" | "current" | "done" | "failed";

function stepStates(state: BuildState): Array<[string, StepState]> | null {
  if (state.work !== "agent" && state.work !== "deployment") return null;
  const failed = state.phase === "failed";
  if (state.work === "agent") {
    const build: StepState = failed ? "failed" : state.phase === "done" ? "done" : "current";
    return [
      ["Build", build],
      ["Deploy", "todo"],
      ["Live", "todo"],
    ];
  }
  const deploy: StepState = failed ? "failed" : state.phase === "done" ? "done" : "current";
  return [
    ["Build", "done"],
    ["Deploy", deploy],
    ["Live", state.phase === "done" && state.productionUrl ? "done" : "todo"],
  ];
}

function messageItem(m: AgentMessage): HTMLElement {
  const when = m.at ? new Date(m.at) : null;
  const time =
    when && !Number.isNaN(when.getTime())
      ? h("time", { datetime: when.toISOString() }, when.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" }))
      : "";
  return h(
    "li",
    { class: `message type-${m.type.replace(/[^a-z-]/gi, "")}` },
    h("div", { class: "row small muted" }, h("span", { class: "badge" }, m.type), time),
    h("p", {}, m.text),
  );
}

export function renderState(ui: ConsoleUi, state: BuildState, now: number): void {
  ui.project.textContent = state.projectId ?? "";
  ui.phase.dataset.phase = state.phase;
  ui.phase.textContent = doneLabel(state);
  ui.elapsedLabel.textContent = WORK_LABEL[state.work];
  renderElapsed(ui, state, now);
  ui.credits.textContent = state.credits
    ? `${state.credits.value} ${state.credits.scope === "project" ? "(project total)" : "(agent run)"}`
    : isRunning(state.phase)
      ? "not read yet"
      : "—";
  ui.request.hidden = !(state.request && state.work === "agent");
  replaceChildren(ui.request, h("span", { class: "muted small" }, "Asked for"), " ", state.request ?? "");

  const steps = stepStates(state);
  ui.steps.hidden = !steps;
  replaceChildren(
    ui.steps,
    ...(steps ?? []).map(([label, s]) =>
      h("li", { "data-state": s }, label, h("span", { class: "sr-only" }, `: ${s}`)),
    ),
  );

  // A failure, or why there is nothing to follow (build_wait's idle).
  ui.failure.hidden = !((state.phase === "failed" || state.phase === "idle") && state.failure);
  ui.failure.textContent = state.failure ?? "";

  ui.secrets.hidden = state.secrets.length === 0;
  replaceChildren(
    ui.secrets,
    h("strong", {}, `The agent needs ${state.secrets.length === 1 ? "a secret" : "secrets"}:`),
    h(
      "ul",
      {},
      ...state.secrets.map((sec) =>
        h("li", {}, h("code", {}, sec.name), sec.description ? ` — ${sec.description}` : ""),
      ),
    ),
    h("p", { class: "small" }, "Set them with build_set_secret; their values are never shown here."),
  );

  const waiting = state.work === "agent" && isRunning(state.phase);
  replaceChildren(
    ui.messages,
    ...(state.messages.length
      ? [h("h2", {}, "Latest from the agent"), h("ol", { class: "plain" }, ...state.messages.map(messageItem))]
      : waiting
        ? [
            h("h2", {}, "Latest from the agent"),
            h("p", { class: "muted waiting" }, "Waiting for the agent's first message. A run usually takes minutes."),
          ]
        : []),
  );

  renderPreview(ui, state);
  renderLinks(ui, state);
  ui.notes.hidden = state.notes.length === 0;
  replaceChildren(ui.notes, ...state.notes.map((n) => h("li", {}, n)));
}

function renderPreview(ui: ConsoleUi, state: BuildState): void {
  const url = state.previewImageUrl;
  const current = ui.preview.querySelector("img")?.getAttribute("src");
  ui.preview.hidden = !url;
  if (!url || current === url) return;
  const img = h("img", {
    src: url,
    alt: `Screenshot of the home page of ${state.projectId ?? "the project"}`,
    referrerpolicy: "no-referrer",
    decoding: "async",
  });
  img.addEventListener("error", () =>
    replaceChildren(
      ui.preview,
      h("figcaption", { class: "muted small" }, "The preview image could not be loaded here."),
    ),
  );
  replaceChildren(ui.preview, img, h("figcaption", { class: "muted small" }, "Preview"));
}

function renderLinks(ui: ConsoleUi, state: BuildState): void {
  const links: HTMLElement[] = [];
  if (state.productionUrl)
    links.push(
      h(
        "li",
        {},
        "Live at ",
        h("a", { href: state.productionUrl, "data-external": "", rel: "noopener noreferrer" }, state.productionUrl),
      ),
    );
  if (state.previewImageUrl && state.phase === "done")
    links.push(
      h(
        "li",
        {},
        h("a", { href: state.previewImageUrl, "data-external": "", rel: "noopener noreferrer" }, "Preview image"),
      ),
    );
  ui.links.hidden = links.length === 0;
  replaceChildren(ui.links, ...(links.length ? [h("h2", {}, "Links"), h("ul", { class: "plain" }, ...links)] : []));
}

export function renderStatus(ui: ConsoleUi, text: string): void {
  ui.status.textContent = text;
}

export function followingText(
  state: BuildState,
  opts: { active: boolean; paused: boolean; intervalMs: number; error?: string; stoppedOnErrors: boolean },
): string {
  if (opts.stoppedOnErrors) return `Stopped following after repeated errors${opts.error ? `: ${opts.error}` : ""}.`;
  if (opts.paused) return "Paused while this view is hidden.";
  if (opts.active) {
    const failed = opts.error ? ` (last check failed: ${opts.error})` : "";
    return `Following the work: checking every ${Math.round(opts.intervalMs / 100) / 10} s${failed}.`;
  }
  return isRunning(state.phase) ? "Not following (this host cannot call the server's tools)." : "";
}
