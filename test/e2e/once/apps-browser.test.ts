import { mkdir, readdir, rm } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import type { CallToolResult } from "@modelcontextprotocol/client";
import type { Browser, FrameLocator, Page } from "playwright-core";
import { haveChromium, launchChromium, sayIfChromiumMissing } from "../../browser.js";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { hostPageHtml } from "./apps-host/host-page.js";
import {
  PREVIEW_SVG,
  sandboxTools,
  syntheticFleet,
  type CallTool,
  type Json,
  type SandboxTools,
  type ViewName,
} from "./apps-host/sources.js";

/**
 * The three MCP Apps views in headless Chromium, each in a sandboxed iframe of a host page built on
 * the SDK's AppBridge, fed real sandbox data. Every request the page makes is routed: anything but
 * the host page itself (and the one preview image the build console is expected to show) fails.
 */

const HOST_URL = "http://apps-host.test/";
/** Every screenshot of the last run (gitignored; emptied at the start, named at the end): look without running. */
const ARTIFACTS = fileURLToPath(new URL("../../../test-artifacts/views/", import.meta.url));

sayIfChromiumMissing("apps-browser e2e");

interface Session {
  page: Page;
  frame: FrameLocator;
  /** Requests that tried to leave the page. */
  violations: string[];
  /** Console errors and uncaught exceptions, in the host page and in the view. */
  errors: string[];
  /** Image URLs the view may load (served here, never fetched); each load is recorded in imagesLoaded. */
  allowedImages: Set<string>;
  imagesLoaded: string[];
  /** Answers the view's tools/call requests. */
  relay: { handler: CallTool };
}

type Mount = {
  view: ViewName;
  toolName: string;
  args: Json;
  result: CallToolResult;
  theme?: "light" | "dark" | "system";
  width?: number;
  html?: string;
};
type HostCall = { name: string; arguments: Json; at: number };

describe.skipIf(!haveChromium)("MCP Apps views in headless Chromium", () => {
  let browser: Browser;
  let hostHtml: string;
  let tools: SandboxTools;
  let session: Session | undefined;

  beforeAll(async () => {
    await rm(ARTIFACTS, { recursive: true, force: true });
    [hostHtml] = await Promise.all([hostPageHtml(), mkdir(ARTIFACTS, { recursive: true })]);
    tools = await sandboxTools();
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await tools?.close();
    const shots = (await readdir(ARTIFACTS).catch(() => [])).filter((f) => f.endsWith(".png"));
    console.log(`views: ${shots.length} screenshots of this run in ${ARTIFACTS}`);
  });

  afterEach(async () => {
    const s = session;
    session = undefined;
    if (!s) return;
    await s.page.context().close();
    expect(s.violations, "requests that left the page").toEqual([]);
    expect(s.errors, "console errors").toEqual([]);
  });

  async function openHost(): Promise<Session> {
    const context = await browser.newContext({
      viewport: { width: 880, height: 900 },
      deviceScaleFactor: 1,
      serviceWorkers: "block",
    });
    const s: Session = {
      page: await context.newPage(),
      frame: undefined as never,
      violations: [],
      errors: [],
      allowedImages: new Set(),
      imagesLoaded: [],
      relay: { handler: tools.callTool },
    };
    await context.route("**/*", async (route) => {
      const url = route.request().url();
      if (url === HOST_URL)
        return route.fulfill({ status: 200, contentType: "text/html; charset=utf-8", body: hostHtml });
      if (s.allowedImages.has(url)) {
        s.imagesLoaded.push(url);
        return route.fulfill({ status: 200, contentType: "image/svg+xml", body: PREVIEW_SVG });
      }
      s.violations.push(`${route.request().method()} ${url}`);
      return route.abort("blockedbyclient");
    });
    s.page.on("pageerror", (err) => s.errors.push(`pageerror: ${err.message}`));
    s.page.on("console", (msg) => {
      if (msg.type() === "error") s.errors.push(msg.text());
    });
    await s.page.exposeFunction("__relayToolCall", (name: string, args: Json) => s.relay.handler(name, args));
    await s.page.goto(HOST_URL);
    await s.page.waitForFunction("globalThis.hostReady === true");
    s.frame = s.page.frameLocator("#frame-box iframe");
    session = s;
    return s;
  }

  async function mount(s: Session, m: Mount): Promise<void> {
    const html = m.html ?? (await tools.loadViewHtml(m.view));
    const params = {
      html,
      toolName: m.toolName,
      args: m.args,
      result: m.result,
      theme: m.theme ?? "light",
      width: m.width ?? 800,
    };
    await s.page.evaluate((p) => (globalThis as any).host.mount(p), params);
  }

  /** The build console as launched by `args`, polling every `pollMs` (its data-poll-interval-ms). */
  async function mountConsole(s: Session, pollMs: number, args: Json, launched: CallToolResult, width?: number) {
    const html = (await tools.loadViewHtml("build-console")).replace(
      "<html ",
      `<html data-poll-interval-ms="${pollMs}" `,
    );
    await mount(s, { view: "build-console", html, toolName: "build_launch_project", args, result: launched, width });
  }

  async function setTheme(s: Session, theme: "light" | "dark"): Promise<void> {
    await s.page.evaluate((t) => (globalThis as any).host.setTheme(t), theme);
    await expect.poll(() => s.frame.locator("html").getAttribute("data-theme")).toBe(theme);
  }

  const calls = (s: Session): Promise<HostCall[]> => s.page.evaluate(() => (globalThis as any).host.calls());

  async function screenshot(s: Session, name: string): Promise<void> {
    await s.page.waitForTimeout(120); // one size-changed round trip
    await s.page.locator("#frame-box iframe").screenshot({ path: `${ARTIFACTS}${name}.png` });
  }

  /** Light and dark screenshots of what is mounted now. */
  async function bothThemes(s: Session, name: string): Promise<void> {
    await setTheme(s, "light");
    await screenshot(s, `${name}-light`);
    await setTheme(s, "dark");
    await screenshot(s, `${name}-dark`);
  }

  const structured = (r: CallToolResult): Json => {
    expect(r.isError, JSON.stringify(r.content)).toBeFalsy();
    return r.structuredContent as Json;
  };

  /** Markers actually drawn: sub-paths of the per-status marker paths. */
  async function markersDrawn(frame: FrameLocator): Promise<number> {
    const paths: string[] = await frame
      .locator("svg.map path.marker[data-status]")
      .evaluateAll((els) => els.map((e) => e.getAttribute("d") ?? ""));
    return paths.reduce((n, d) => n + (d.match(/M/g) ?? []).length, 0);
  }

  /** Where the drawn markers (with rings, badges, highlights) reach, and how far any was fanned from its drone. */
  async function mapExtent(frame: FrameLocator) {
    type Box = { x: number; y: number; width: number; height: number };
    return frame.locator("svg.map").evaluate((svg: any) => {
      const drawn = svg.querySelectorAll(
        "path.marker, path.ring-track, path.ring-low, path.alert-badge, path.nearest-ring",
      );
      const boxes = ([...drawn] as any[]).map((p): Box => p.getBBox()).filter((b) => b.width > 0);
      let fanned = 0;
      const leader: string = svg.querySelector("path.leader")?.getAttribute("d") ?? "";
      for (const m of leader.matchAll(/M([-\d.]+),([-\d.]+)L([-\d.]+),([-\d.]+)/g))
        fanned = Math.max(fanned, Math.hypot(Number(m[3]) - Number(m[1]), Number(m[4]) - Number(m[2])));
      return {
        width: Number(svg.viewBox.baseVal.width),
        height: Number(svg.viewBox.baseVal.height),
        left: Math.min(...boxes.map((b) => b.x)),
        top: Math.min(...boxes.map((b) => b.y)),
        right: Math.max(...boxes.map((b) => b.x + b.width)),
        bottom: Math.max(...boxes.map((b) => b.y + b.height)),
        fanned,
      };
    });
  }

  const waitForDrones = (frame: FrameLocator, n: number) =>
    expect.poll(() => frame.locator(".map-box").getAttribute("data-drones"), { timeout: 15_000 }).toBe(String(n));

  it("every view is one self-contained HTML file under a strict CSP and the size budget", async () => {
    for (const view of ["fleet-map", "build-console", "fit-card"] as const) {
      const html = await tools.loadViewHtml(view);
      const csp = /<meta http-equiv="Content-Security-Policy" content="([^"]+)">/.exec(html)?.[1] ?? "";
      expect(csp, view).toMatch(
        /^default-src 'none'; script-src 'sha256-[A-Za-z0-9+/=]+'; style-src 'sha256-[A-Za-z0-9+/=]+'; img-src /,
      );
      expect(csp, view).toContain("connect-src 'none'");
      expect(csp, view).not.toMatch(/unsafe-|\*/);
      expect(csp.includes("img-src https:"), view).toBe(view === "build-console");
      expect(html, view).not.toMatch(/<(script|link|img|iframe)\b[^>]*\s(src|href)=/i);
      expect(gzipSync(html).length, view).toBeLessThanOrEqual(150_000);
    }
  });

  it("follows prefers-color-scheme when the host context has no theme", async () => {
    const s = await openHost();
    const args = { clothing_item_id: "6650c1a2f3b4d5e6a7b80101", measurements: { chest: 84 } };
    const result = await tools.callTool("sizing_recommend_size", args);
    await s.page.emulateMedia({ colorScheme: "dark" });
    await mount(s, { view: "fit-card", toolName: "sizing_recommend_size", args, result, theme: "system" });
    await expect.poll(() => s.frame.locator("html").getAttribute("data-theme")).toBe("dark");
    await s.page.emulateMedia({ colorScheme: "light" });
    await expect.poll(() => s.frame.locator("html").getAttribute("data-theme")).toBe("light");
  });

  // ---- fleet map ----

  it("fleet map: draws the 36 sandbox drones, marks open alerts, works with pointer and keyboard", async () => {
    const s = await openHost();
    const args = { limit: 500 };
    const result = await tools.callTool("drones_list_drones", args);
    expect((structured(result).drones as Json[]).length).toBe(36);
    const openAlerts = structured(await tools.callTool("drones_list_alerts", { status: "open", limit: 500 }))
      .alerts as Json[];
    const dronesWithAlerts = new Set(openAlerts.map((a) => a.drone_id)).size;

    await mount(s, { view: "fleet-map", toolName: "drones_list_drones", args, result });
    await waitForDrones(s.frame, 36);
    expect(await markersDrawn(s.frame)).toBe(36);
    await expect
      .poll(() => s.frame.locator("path.alert-badge").getAttribute("data-count"))
      .toBe(String(dronesWithAlerts));
    expect((await calls(s)).map((c) => c.name)).toContain("drones_list_alerts");

    // Tab from the legend lands on the map's cursor; arrows move it; Enter shows the record.
    await s.frame.locator(".legend-item").last().focus();
    await s.page.keyboard.press("Tab");
    const cursor = s.frame.locator("g.cursor");
    expect(await cursor.evaluate((el) => el === el.ownerDocument.activeElement)).toBe(true);
    const before = await cursor.getAttribute("aria-label");
    await s.page.keyboard.press("ArrowRight");
    await s.page.keyboard.press("ArrowDown");
    expect(await cursor.getAttribute("aria-label")).not.toBe(before);
    await s.page.keyboard.press("Enter");
    const details = s.frame.locator(".details");
    await expect.poll(() => details.textContent()).toContain("Firmware version");
    expect(await s.frame.locator(".tooltip").isVisible()).toBe(true);
    await s.page.keyboard.press("Escape");
    expect(await details.textContent()).toBe("");

    // Hovering a marker shows its record.
    const box = (await cursor.boundingBox())!;
    await s.page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await expect
      .poll(() => s.frame.locator(".tooltip").textContent())
      .toMatch(/(Falcon|Heron|Kestrel|Osprey|Swift)-\d\d/);
    await s.page.mouse.move(2, 2);

    await bothThemes(s, "fleet-map-list");
  });

  it("fleet map at 400 px: nothing clipped, fanned groups stay close to their city, no empty card", async () => {
    const s = await openHost();
    const args = { limit: 500 };
    const listed = await tools.callTool("drones_list_drones", args);
    const summary = await tools.callTool("drones_fleet_summary", {});
    expect(structured(summary).dronesWithoutPosition).toBe(0);
    for (const [toolName, a, result, name] of [
      ["drones_list_drones", args, listed, "fleet-map-list-400"],
      ["drones_fleet_summary", {}, summary, "fleet-map-summary-400"],
    ] as const) {
      await mount(s, { view: "fleet-map", toolName, args: a, result, width: 400 });
      await waitForDrones(s.frame, 36);
      const box = await mapExtent(s.frame);
      // Every marker with its battery ring and alert badge is inside the map (none cut at an edge).
      expect(box.left, name).toBeGreaterThanOrEqual(0);
      expect(box.top, name).toBeGreaterThanOrEqual(0);
      expect(box.right, name).toBeLessThanOrEqual(box.width);
      expect(box.bottom, name).toBeLessThanOrEqual(box.height);
      // A fanned-out group stays near its city: within a tenth of the map's width (was 54 px of 374).
      expect(box.fanned, name).toBeGreaterThan(0);
      expect(box.fanned, name).toBeLessThanOrEqual(box.width / 10);
      await screenshot(s, `${name}-light`);
    }
    const stats = s.frame.locator(".stats .stat");
    const labels = await stats.locator(".muted").allTextContents();
    expect(labels).toEqual(["Drones", "Average battery", "Below 20%"]);
    await setTheme(s, "dark");
    await screenshot(s, "fleet-map-summary-400-dark");
  });

  it("fleet map: find_nearest highlights the query point and the nearest drones with their distance", async () => {
    const s = await openHost();
    const args = { latitude: 40.4168, longitude: -3.7038, limit: 5 };
    const result = await tools.callTool("drones_find_nearest", args);
    const nearest = structured(result).drones as Json[];
    expect(nearest.length).toBe(5);

    await mount(s, { view: "fleet-map", toolName: "drones_find_nearest", args, result });
    await waitForDrones(s.frame, 5);
    expect(await markersDrawn(s.frame)).toBe(5);
    expect(await s.frame.locator('text.rank-label[data-rank="1"]').getAttribute("data-drone-id")).toBe(nearest[0]._id);
    expect(await s.frame.locator("text.rank-label").count()).toBe(5);
    expect(await s.frame.locator("g.origin").count()).toBe(1);
    // Place context at a 1-2 km scale: where the query point is, the city on the map, range rings.
    expect(await s.frame.locator("header p").textContent()).toContain("central Madrid");
    expect(await s.frame.locator('g.place[data-place="Madrid"] text').textContent()).toBe("Madrid");
    expect(await s.frame.locator("path.range-ring").getAttribute("d")).toMatch(/^M.+M/);
    expect(await s.frame.locator("text.range-label").first().textContent()).toMatch(/ km$/);
    const first = await s.frame.locator(".ranked li").first().textContent();
    expect(first).toContain(String(nearest[0].name));
    expect(first).toMatch(/\d+ m|\d+\.\d+ km/);

    // Choosing a drone in the ranked list pins its record.
    await s.frame.locator(".ranked button").nth(1).click();
    await expect.poll(() => s.frame.locator(".details h2").textContent()).toBe(String(nearest[1].name));

    await bothThemes(s, "fleet-map-nearest");
    await mount(s, { view: "fleet-map", toolName: "drones_find_nearest", args, result, width: 400, theme: "dark" });
    await waitForDrones(s.frame, 5);
    const box = await mapExtent(s.frame);
    expect(box.bottom).toBeLessThanOrEqual(box.height);
    await screenshot(s, "fleet-map-nearest-400-dark");
  });

  it("fleet map: fleet_summary frames the bounding box and loads positions through the host", async () => {
    const s = await openHost();
    const result = await tools.callTool("drones_fleet_summary", {});
    const summary = structured(result);

    await mount(s, { view: "fleet-map", toolName: "drones_fleet_summary", args: {}, result });
    await waitForDrones(s.frame, summary.totalDrones as number);
    expect(await markersDrawn(s.frame)).toBe(36);
    expect(await s.frame.locator("rect.bbox").count()).toBe(1);
    const listCalls = (await calls(s)).filter((c) => c.name === "drones_list_drones");
    expect(listCalls[0].arguments).toMatchObject({ limit: 500, offset: 0 });
    const low = summary.lowBattery as Json[];
    expect(await s.frame.locator(".side ul.plain").first().locator("li").count()).toBe(Math.min(12, low.length));
    await bothThemes(s, "fleet-map-summary");
  });

  it("fleet map: 5,000 drones draw as a few grouped paths, quickly", async () => {
    const s = await openHost();
    const result: CallToolResult = {
      content: [{ type: "text", text: "5000 drones" }],
      structuredContent: syntheticFleet(5000),
    };

    const started = Date.now();
    await mount(s, { view: "fleet-map", toolName: "drones_list_drones", args: { limit: 5000 }, result });
    await waitForDrones(s.frame, 5000);
    const wall = Date.now() - started;
    expect(await markersDrawn(s.frame)).toBe(5000);
    expect(await s.frame.locator("svg.map path").count()).toBeLessThan(20);
    const renderMs = Number(await s.frame.locator(".map-box").getAttribute("data-render-ms"));
    console.log(`fleet map, 5,000 drones: drawn in ${renderMs} ms (view), ${wall} ms from mount to drawn`);
    expect(renderMs).toBeLessThan(1500);

    const cursor = s.frame.locator("g.cursor");
    await cursor.focus();
    const t0 = Date.now();
    for (let i = 0; i < 10; i++) await s.page.keyboard.press("ArrowRight");
    expect(Date.now() - t0).toBeLessThan(3000);
    await screenshot(s, "fleet-map-5000-light");
  });

  // ---- build console ----

  it("build console: polls an agent run to done, deploys through build_deploy, links the live app", async () => {
    const s = await openHost();
    const projectId = "salon-booking";
    const args = {
      projectId,
      prompt: "[minutes=6] [secrets] An appointment booking app for a hair salon with a calendar view",
    };
    const launched = await tools.callTool("build_launch_project", args);
    expect(structured(launched).agent).toMatchObject({ started: true });

    // Real answers of the simulator at three moments of the run, replayed to the view's polls.
    const agentStatus = async () => structured(await tools.callTool("build_get_agent_status", { projectId }));
    const running = await agentStatus();
    tools.advance(3 * 60_000);
    const halfway = await agentStatus();
    tools.advance(5 * 60_000);
    const finished = await agentStatus();
    const built = structured(await tools.callTool("build_get_project", { projectId }));
    expect([running.status, halfway.status, finished.status]).toEqual(["init", "init", "done"]);
    const preview = String(built.previewImageUrl);
    expect(preview).toMatch(/^https:\/\//);
    s.allowedImages.add(preview);

    const script: Record<string, Json[]> = {
      build_get_agent_status: [running, halfway, finished],
      build_get_project: [built],
    };
    s.relay.handler = replay(script, async (name, a) => {
      if (name !== "build_deploy") return tools.callTool(name, a);
      const deployed = await tools.callTool("build_deploy", a);
      const status = async () => structured(await tools.callTool("build_get_deployment_status", { projectId }));
      const deploying = await status();
      tools.advance(4 * 60_000);
      script.build_get_deployment_status = [deploying, await status()];
      script.build_get_project = [structured(await tools.callTool("build_get_project", { projectId }))];
      return deployed;
    });

    await mountConsole(s, 150, args, launched);
    const phase = s.frame.locator(".phase");
    await expect.poll(() => phase.getAttribute("data-phase"), { timeout: 10_000 }).toBe("done");
    expect(await phase.textContent()).toBe("Agent finished");
    await expect.poll(() => s.frame.locator(".secrets, .warn-box").first().textContent()).toContain("STRIPE_API_KEY");
    expect(await s.frame.locator(".messages li").count()).toBeGreaterThan(0);
    const img = s.frame.locator(".preview img");
    expect(await img.getAttribute("src")).toBe(preview);
    await expect.poll(() => img.evaluate((el) => (el as any).naturalWidth)).toBeGreaterThan(0);
    const deploy = s.frame.locator("button.primary");
    expect(await deploy.isVisible()).toBe(true);
    await screenshot(s, "build-console-agent-done-light");

    await deploy.click();
    await expect.poll(() => phase.textContent(), { timeout: 10_000 }).toBe("Deployed");
    const live = s.frame.locator(".links a").first();
    await expect.poll(() => live.getAttribute("href")).toMatch(new RegExp(`^https://${projectId}\\.`));
    await live.click();
    expect(await s.page.evaluate(() => (globalThis as any).host.openedLinks())).toEqual([
      await live.getAttribute("href"),
    ]);

    const made = await calls(s);
    const names = made.map((c) => c.name);
    expect(names.filter((n) => n === "build_deploy")).toHaveLength(1);
    expect(names).toEqual(
      expect.arrayContaining(["build_get_agent_status", "build_get_project", "build_get_deployment_status"]),
    );
    for (const c of made) expect(c.arguments).toEqual({ projectId });
    // Nothing is left to follow: polling has stopped by itself.
    await s.page.waitForTimeout(500);
    expect((await calls(s)).length).toBe(made.length);
    expect(s.imagesLoaded).toEqual([preview]);
    await bothThemes(s, "build-console-deployed");
  });

  it("build console at 0 s: says what was asked, reads the run at once, shows no time ahead of the clock", async () => {
    const s = await openHost();
    // The simulator's clock 8 minutes ahead of the wall clock, as the sandbox's simulated time runs.
    tools.advance(8 * 60_000);
    const projectId = "first-seconds";
    const prompt = "A booking page for a yoga studio";
    const args = { projectId, prompt: `[minutes=6] ${prompt}` };
    const launched = await tools.callTool("build_launch_project", args);
    expect(structured(launched).agent).toMatchObject({ started: true });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const asked: string[] = [];
    s.relay.handler = async (name, a) => {
      asked.push(name);
      await gate;
      return tools.callTool(name, a);
    };

    // A minute between polls: only a read made at once is seen in this test.
    await mountConsole(s, 60_000, args, launched, 400);
    const phase = s.frame.locator(".phase");
    await expect.poll(() => phase.getAttribute("data-phase")).toBe("agent-running");
    expect(await s.frame.locator(".request").textContent()).toContain(prompt);
    expect(await s.frame.locator(".messages").textContent()).toContain("Waiting for the agent's first message");
    expect(await s.frame.locator(".facts strong").nth(1).textContent()).toBe("not read yet");
    await expect.poll(() => asked, { timeout: 10_000 }).toEqual(["build_get_agent_status"]);
    await screenshot(s, "build-console-starting-400-light");

    release();
    const times = s.frame.locator(".messages time");
    await expect.poll(() => times.count(), { timeout: 10_000 }).toBeGreaterThan(0);
    const status = structured(await tools.callTool("build_get_agent_status", { projectId }));
    const stamps = (status.realtimeConversation as Json[]).map((m) => Date.parse(String(m.createdAt)));
    expect(Math.max(...stamps), "the upstream's stamps are ahead").toBeGreaterThan(Date.now() + 60_000);
    for (const shown of await times.evaluateAll((els) => els.map((e) => e.getAttribute("datetime") ?? ""))) {
      expect(Date.parse(shown)).toBeLessThanOrEqual(Date.now());
    }
    expect(await s.frame.locator(".facts strong").nth(1).textContent()).toMatch(/^\d+ \(agent run\)$/);
    await screenshot(s, "build-console-first-message-400-light");
  });

  it("build console: stops polling when the host tears the view down", async () => {
    const s = await openHost();
    const projectId = "teardown-check";
    const args = { projectId, prompt: "[minutes=30] A landing page" };
    const launched = await tools.callTool("build_launch_project", args);
    const running = structured(await tools.callTool("build_get_agent_status", { projectId }));
    s.relay.handler = replay({ build_get_agent_status: [running] }, tools.callTool);

    await mountConsole(s, 100, args, launched, 360);
    await expect.poll(async () => (await calls(s)).length, { timeout: 5_000 }).toBeGreaterThanOrEqual(3);
    expect(await s.frame.locator(".phase").getAttribute("data-phase")).toBe("agent-running");
    await screenshot(s, "build-console-running-360-light");
    await s.page.evaluate(() => (globalThis as any).host.teardown());
    const tornDownAt: number = await s.page.evaluate(() => (globalThis as any).host.tornDownAt());
    await s.page.waitForTimeout(600);
    expect((await calls(s)).filter((c) => c.at > tornDownAt)).toEqual([]);
  });

  // ---- fit card ----

  it("fit card: places the measurements on the size chart, inside the recommended size's band", async () => {
    const s = await openHost();
    const args = {
      clothing_item_id: "6650c1a2f3b4d5e6a7b80103",
      measurements: { chest: 96, waist: 82, height: 178 },
      preferred_fit: "regular",
    };
    const result = await tools.callTool("sizing_recommend_size", args);
    const recommended = String(structured(result).recommended_size);

    await mount(s, { view: "fit-card", toolName: "sizing_recommend_size", args, result });
    for (const [measure, value] of [
      ["chest", 96],
      ["waist", 82],
    ] as const) {
      const row = s.frame.locator(`.row-figure[data-measure="${measure}"]`);
      const band = row.locator("rect.band-recommended");
      await band.waitFor({ timeout: 10_000 });
      expect(await band.getAttribute("data-size")).toBe(recommended);
      expect(Number(await band.getAttribute("data-lo"))).toBeLessThanOrEqual(value);
      expect(Number(await band.getAttribute("data-hi"))).toBeGreaterThanOrEqual(value);
      const x = Number(await row.locator("line.value-line").getAttribute("x1"));
      const bx = Number(await band.getAttribute("x"));
      const bw = Number(await band.getAttribute("width"));
      expect(x).toBeGreaterThanOrEqual(bx);
      expect(x).toBeLessThanOrEqual(bx + bw);
    }
    expect(await s.frame.locator(".size-badge.recommended strong").textContent()).toBe(recommended);
    expect((await calls(s)).map((c) => c.name)).toEqual(["sizing_get_catalog"]);
    await bothThemes(s, "fit-card");
    await mount(s, { view: "fit-card", toolName: "sizing_recommend_size", args, result, width: 360 });
    await s.frame.locator("rect.band-recommended").first().waitFor();
    await screenshot(s, "fit-card-360-light");
  });

  it("fit card: needs no extra call when the result carries the item's size chart and the measurements", async () => {
    const s = await openHost();
    const args = { clothing_item_id: "6650c1a2f3b4d5e6a7b8010c", measurements: { waist: 71, hips: 97 } };
    const rec = structured(await tools.callTool("sizing_recommend_size", args));
    const items = structured(await tools.callTool("sizing_get_catalog", { limit: 200 })).items as Json[];
    const item = items.find((i) => i._id === args.clothing_item_id)!;
    // The fields proposed for sizing_recommend_size's structured output: item (with size_chart) and measurements.
    const result: CallToolResult = {
      content: [{ type: "text", text: "recommendation" }],
      structuredContent: {
        ...rec,
        item: {
          name: item.name,
          brand: item.brand,
          available_sizes: item.available_sizes,
          size_chart: item.size_chart,
        },
        measurements: args.measurements,
      },
    };
    await mount(s, { view: "fit-card", toolName: "sizing_recommend_size", args: {}, result });
    await s.frame.locator('.row-figure[data-measure="hips"] rect.band-recommended').waitFor({ timeout: 10_000 });
    expect(await s.frame.locator("h1").textContent()).toBe(item.name);
    expect(await s.frame.locator(".row-figure").count()).toBe(2);
    expect(await calls(s)).toEqual([]);
  });
});

/** Answers the listed tools from queues (the last answer repeats); everything else goes to `fallback`. */
function replay(queues: Record<string, Json[]>, fallback: CallTool): CallTool {
  return async (name, args) => {
    const queue = queues[name];
    if (!queue?.length) return fallback(name, args);
    const structuredContent = queue.length > 1 ? queue.shift()! : queue[0];
    return { content: [{ type: "text", text: `${name} (replayed)` }], structuredContent };
  };
}
