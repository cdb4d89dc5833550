#!/usr/bin/env node
// switchboard-mcp demo: a real MCP SDK client talks to `node dist/cli.js --sandbox` over stdio and
// plays a short conversation's worth of tool calls against the built-in simulators.
//
//   npm run demo              a build takes about a minute (live progress bar)
//   npm run demo -- --fast    the same in a few seconds
//
// Plain ANSI, no dependencies beyond the SDK. When stdout is not a terminal (CI, pipes) or NO_COLOR
// is set, it prints plain lines instead of colours and redrawn bars.
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const args = process.argv.slice(2);
if (args.includes("--help") || args.includes("-h")) {
  process.stdout.write(`Usage: npm run demo [-- --fast]

Runs the built server on its sandbox (no keys needed) and plays a short conversation:
launch a project and watch it build, deploy it, look at a drone fleet, and pick a size.

  --fast   simulated time runs ~25x faster (a build takes a few seconds instead of a minute)

Environment: SANDBOX_TIME_SCALE overrides the simulated speed; NO_COLOR disables colours.
`);
  process.exit(0);
}
const FAST = args.includes("--fast");
const CLI = fileURLToPath(new URL("../dist/cli.js", import.meta.url));

// ---------------------------------------------------------------------------------------------
// Terminal output

const TTY = Boolean(process.stdout.isTTY) && !process.env.NO_COLOR && process.env.TERM !== "dumb";
const sgr = (code) => (s) => (TTY && String(s) !== "" ? `\x1b[${code}m${s}\x1b[0m` : String(s));
const c = {
  bold: sgr("1"),
  dim: sgr("2"),
  red: sgr("31"),
  green: sgr("32"),
  yellow: sgr("33"),
  blue: sgr("34"),
  magenta: sgr("35"),
  cyan: sgr("36"),
  gray: sgr("90"),
};
const ANSI = /\x1b\[[0-9;]*m/g;
const visible = (s) => String(s).replace(ANSI, "");
const width = () => Math.max(40, Math.min(process.stdout.columns || 100, 120));
const out = (line = "") => process.stdout.write(`${line}\n`);

/** Cuts a plain string to n visible characters. */
function clip(s, n) {
  s = String(s).replace(/\s+/g, " ");
  return s.length <= n ? s : `${s.slice(0, Math.max(0, n - 1))}…`;
}

function pad(s, n, align = "left") {
  const gap = Math.max(0, n - visible(s).length);
  return align === "right" ? " ".repeat(gap) + s : s + " ".repeat(gap);
}

/** A small table: columns [{ title, align }], rows of cells (strings may carry ANSI colours). */
function table(columns, rows) {
  const widths = columns.map((col, i) => Math.max(visible(col.title).length, ...rows.map((r) => visible(r[i]).length)));
  const line = (cells) => ("  " + cells.map((cell, i) => pad(cell, widths[i], columns[i].align)).join("  ")).trimEnd();
  out(c.bold(line(columns.map((col) => col.title))));
  out(c.gray("  " + widths.map((w) => "─".repeat(w)).join("  ")));
  for (const row of rows) out(line(row));
}

let step = 0;
function say(text) {
  step += 1;
  out();
  out(`${c.bold(c.cyan(`${step}.`))} ${c.bold(text)}`);
}
function showCall(name, input) {
  activeBar?.clear();
  const shown = Object.keys(input).length ? ` ${JSON.stringify(input)}` : "";
  out(c.gray(`   → ${name}${clip(shown, width() - name.length - 8)}`));
}

/**
 * A progress line driven by MCP progress notifications. With a `total` the bar fills; without one
 * (the server reports polls, not percentages) a block moves one step per notification. The
 * notification's message is shown on the same line. Non-TTY: one plain line per notification.
 */
let activeBar;
class ProgressLine {
  constructor(label) {
    this.label = label;
    this.updates = 0;
    this.message = "waiting for the first update…";
    this.fraction = undefined;
  }

  /** Starts drawing (after the call line is printed); redraws every 250 ms for the clock. A follow-up call keeps the clock. */
  start() {
    this.started ??= Date.now();
    activeBar = this;
    if (!TTY) return;
    this.timer ??= setInterval(() => this.draw(), 250);
    this.draw();
  }

  /** Clears the bar's line so something else can be printed; the next redraw brings it back. */
  clear() {
    if (TTY) process.stdout.write("\r\x1b[2K");
  }

  update({ progress, total, message }) {
    this.updates += 1;
    const changed = message !== undefined && message !== this.message;
    if (message) this.message = message;
    if (typeof total === "number" && total > 0) this.fraction = Math.min(1, progress / total);
    if (TTY) this.draw();
    // Plain output: one line per notification that says something new.
    else if (changed || (message === undefined && total)) out(`   [${this.label} ${progress}${total ? `/${total}` : ""}] ${message ?? ""}`.trimEnd());
  }

  bar(size, done) {
    if (done) return c.green("█".repeat(size));
    if (this.fraction !== undefined) {
      const full = Math.round(this.fraction * size);
      return c.cyan("█".repeat(full)) + c.gray("░".repeat(size - full));
    }
    const block = 4;
    const span = size - block;
    const pos = span <= 0 ? 0 : this.updates % (2 * span) < span ? this.updates % span : span - (this.updates % span);
    return c.gray("░".repeat(pos)) + c.cyan("█".repeat(block)) + c.gray("░".repeat(size - block - pos));
  }

  draw(done = false, failed = false) {
    const seconds = `${Math.round((Date.now() - this.started) / 1000)}s`;
    const barSize = 24;
    const head = `   ${this.label.padEnd(7)} `;
    const pct = this.fraction !== undefined && !done ? ` ${String(Math.round(this.fraction * 100)).padStart(3)}%` : "";
    const tail = ` ${seconds.padStart(4)}${pct}  `;
    const room = width() - head.length - barSize - tail.length - 1;
    const text = failed ? c.red(clip(this.message, room)) : done ? c.green(clip(this.message, room)) : clip(this.message, room);
    process.stdout.write(`\r\x1b[2K${head}${failed ? c.red("█".repeat(barSize)) : this.bar(barSize, done)}${c.gray(tail)}${text}`);
  }

  finish(message, failed = false) {
    if (message) this.message = message;
    if (this.timer) clearInterval(this.timer);
    if (activeBar === this) activeBar = undefined;
    if (TTY) {
      this.draw(true, failed);
      process.stdout.write("\n");
    } else out(`   [${this.label} ${failed ? "failed" : "done"}] ${this.message}`);
  }
}

// ---------------------------------------------------------------------------------------------
// The MCP client

const timeScale = process.env.SANDBOX_TIME_SCALE ?? (FAST ? "600" : "25");
let serverLog = "";
const transport = new StdioClientTransport({
  command: process.execPath,
  args: [CLI, "--sandbox"],
  env: {
    ...process.env,
    SANDBOX_TIME_SCALE: timeScale,
    LOG_LEVEL: process.env.LOG_LEVEL ?? "warn",
    // Poll faster in fast mode so the bar still gets a few dozen updates.
    ...(FAST && !process.env.BUILD_POLL_INTERVAL_MS ? { BUILD_POLL_INTERVAL_MS: "100" } : {}),
  },
  stderr: "pipe",
});
transport.stderr?.on("data", (chunk) => {
  serverLog += chunk.toString();
});

// Declaring elicitation lets the server ask before it spends credits (BUILD_CONFIRM_SPEND=always).
const client = new Client({ name: "switchboard-demo", version: "1.0.0" }, { capabilities: { elicitation: {} } });
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  activeBar?.clear();
  const question = TTY ? clip(request.params.message, width() - 6) : request.params.message;
  out(`   ${c.magenta("?")} ${c.magenta(question)}`);
  out(`   ${c.magenta("›")} ${c.dim("yes (the demo approves every spend)")}`);
  return { action: "accept", content: { confirm: true } };
});

class DemoError extends Error {}

/** The `build_wait { projectId: "…", until: "…", since: "…" }` call an answer names, as its arguments. */
function followHint(text) {
  const m = /build_wait \{ projectId: "([^"]+)", until: "([^"]+)"(?:, since: "([^"]+)")? \}/.exec(text ?? "");
  return m ? { projectId: m[1], until: m[2], ...(m[3] ? { since: m[3] } : {}) } : undefined;
}

/**
 * What a model does with a wait that goes on: the server returns after MCP_MAX_BLOCKING_WAIT_SECONDS
 * (45 s by default) with a result that says so and names the build_wait call that follows the work;
 * call it, again and again, until the work has ended.
 */
async function followToEnd(wait, bar) {
  while (wait?.outcome === "timed_out") {
    const next = followHint(wait.message);
    if (!next) throw new DemoError(`the work goes on, but the answer names no build_wait call: ${wait.message}`);
    wait = (await call("build_wait", next, bar)).structuredContent;
  }
  return wait;
}

/** Calls a tool; stops the demo with the tool's own text when it returns isError. */
async function call(name, input = {}, progress) {
  showCall(name, input);
  progress?.start();
  const result = await client.callTool({ name, arguments: input }, undefined, {
    timeout: 15 * 60_000,
    resetTimeoutOnProgress: true,
    ...(progress ? { onprogress: (p) => progress.update(p) } : {}),
  });
  if (result.isError) {
    progress?.finish("failed", true);
    throw new DemoError(`${name} failed:\n${result.content.map((x) => x.text ?? "").join("\n")}`);
  }
  return result;
}

const withScheme = (url) => (!url ? url : /^https?:\/\//.test(url) ? url : `https://${url}`);

async function shutdown(code) {
  await client.close().catch(() => undefined);
  process.exit(code);
}
process.once("SIGINT", () => {
  if (TTY) process.stdout.write("\n");
  void shutdown(130);
});

// ---------------------------------------------------------------------------------------------
// The conversation

async function main() {
  const started = Date.now();
  out(c.bold("switchboard-mcp demo") + c.gray(`  ·  sandbox, simulated time ×${timeScale}${FAST ? " (--fast)" : ""}`));
  out(c.gray(`   spawning node ${visible(CLI)} --sandbox over stdio…`));
  await client.connect(transport);
  const info = client.getServerVersion();
  const { tools } = await client.listTools();
  out(`   connected to ${c.bold(`${info?.name ?? "server"} ${info?.version ?? ""}`.trim())}: ${tools.length} tools`);

  // 1. balance
  say("How many credits do I have?");
  const account = (await call("build_get_account")).structuredContent;
  out(`   ${c.green(`${account.credits} credits`)} ${c.gray(`(${account.recurrentCredits ?? "?"} monthly + ${account.oneTimeCredits ?? "?"} purchased)`)}`);

  // 2. launch and wait, with a live bar
  say("Build me a booking app for a hair salon, and tell me how it goes.");
  const launchBar = new ProgressLine("build");
  const launch = await call(
    "build_launch_project",
    { projectId: "salon-booking", prompt: "A small booking app for a hair salon with online payments", wait: true },
    launchBar,
  );
  const launched = launch.structuredContent;
  const run = (await followToEnd(launched.wait, launchBar)) ?? {};
  const built = run.outcome === "done";
  launchBar.finish(built ? `${run.message ?? "The agent run has ended."} ${run.creditsSpent !== undefined ? `(${run.creditsSpent} credits)` : ""}`.trim() : run.message ?? run.outcome, !built);
  if (!built) throw new DemoError(`the build did not finish: ${run.outcome}`);
  const projectId = launched.projectId;
  out(`   project ${c.bold(projectId)}${run.project?.temporalDevelopmentProjectUrl ? c.gray(` · preview ${run.project.temporalDevelopmentProjectUrl}`) : ""}`);

  // 3. deploy with its own bar
  say("Looks good. Put it in production.");
  const deployBar = new ProgressLine("deploy");
  const deploy = (await call("build_deploy", { projectId, wait: true }, deployBar)).structuredContent;
  const deployment = (await followToEnd(deploy.wait, deployBar)) ?? {};
  const deployed = deployment.outcome === "done";
  deployBar.finish(deployment.message ?? deploy.message, !deployed);
  if (!deployed) throw new DemoError(`the deployment did not finish: ${deployment.outcome}`);
  const url = withScheme(deployment.project?.productionProjectUrl);
  out(`   ${c.bold("live at")} ${c.green(c.bold(url ?? "(no production URL reported)"))}`);

  // 4. fleet summary
  say("How is the drone fleet doing?");
  const fleet = (await call("drones_fleet_summary")).structuredContent;
  const total = fleet.totalDrones || 1;
  const statusColour = { active: c.green, idle: c.blue, charging: c.yellow, maintenance: c.magenta, offline: c.red };
  table(
    [{ title: "status" }, { title: "drones", align: "right" }, { title: "share" }],
    Object.entries(fleet.byStatus).map(([status, n]) => [
      (statusColour[status] ?? ((s) => s))(status),
      String(n),
      (statusColour[status] ?? ((s) => s))("■".repeat(Math.max(1, Math.round((n / total) * 30)))) + c.gray(` ${Math.round((n / total) * 100)}%`),
    ]),
  );
  out(`   ${fleet.totalDrones} drones, average battery ${fleet.averageBatteryPercent}%; ${c.yellow(`${fleet.lowBatteryCount} below ${fleet.lowBatteryThresholdPercent}%`)}${
    fleet.lowBattery?.length ? c.gray(`: ${fleet.lowBattery.slice(0, 4).map((d) => `${d.name} ${d.battery_level}%`).join(", ")}${fleet.lowBattery.length > 4 ? ", …" : ""}`) : ""
  }`);

  // 5. nearest drones to Madrid
  say("Which drones are closest to Madrid?");
  const near = (await call("drones_find_nearest", { latitude: 40.4168, longitude: -3.7038, limit: 5 })).structuredContent;
  table(
    [{ title: "#", align: "right" }, { title: "drone" }, { title: "distance", align: "right" }, { title: "status" }, { title: "battery", align: "right" }],
    near.drones.map((d, i) => [
      String(i + 1),
      d.name ?? d._id,
      `${d.distanceKm.toFixed(2)} km`,
      (statusColour[d.status] ?? ((s) => s))(d.status ?? "?"),
      d.battery_level == null ? "?" : d.battery_level < 20 ? c.red(`${d.battery_level}%`) : `${d.battery_level}%`,
    ]),
  );

  // 6. sizing
  say("I'm 178 cm, chest 96, waist 82, hips 100. Which size of the crew tee should I get?");
  const catalog = (await call("sizing_get_catalog", { category: "tops" })).structuredContent;
  const item = catalog.items.find((i) => /crew tee/i.test(i.name)) ?? catalog.items[0];
  out(`   ${c.bold(item.name)} by ${item.brand} ${c.gray(`· ${item._id} · sizes ${item.available_sizes}`)}`);
  const measurements = { chest: 96, waist: 82, hips: 100, height: 178 };
  const rec = (await call("sizing_recommend_size", { clothing_item_id: item._id, measurements, preferred_fit: "regular" })).structuredContent;
  const confidence = typeof rec.confidence_score === "number" ? ` (${Math.round(rec.confidence_score * 100)}% confidence)` : "";
  out(`   ${c.bold("size")} ${c.green(c.bold(rec.recommended_size))}${confidence}${rec.alternative_size ? c.gray(`, alternative ${rec.alternative_size}`) : ""}`);
  if (rec.size_breakdown) {
    out(c.gray(`   fit: ${Object.entries(rec.size_breakdown).map(([k, v]) => `${k.replace(/_fit$/, "")} ${v}`).join(", ")}`));
  }
  if (rec.fit_notes) out(`   ${c.dim("“")}${rec.fit_notes}${c.dim("”")}`);

  out();
  out(c.gray(`done in ${Math.round((Date.now() - started) / 1000)}s`));
}

main()
  .then(() => shutdown(0))
  .catch(async (err) => {
    if (TTY) process.stdout.write("\x1b[0m\n");
    process.stderr.write(`${c.red("demo failed:")} ${err instanceof DemoError ? err.message : err?.stack ?? err}\n`);
    if (!(err instanceof DemoError) && serverLog.trim()) process.stderr.write(c.gray(`server stderr:\n${serverLog.trim().split("\n").slice(-20).join("\n")}\n`));
    await shutdown(1);
  });
