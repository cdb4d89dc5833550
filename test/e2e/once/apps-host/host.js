// The test host page's script (browser code, bundled with esbuild by host-page.ts). It is a
// minimal MCP Apps host built on the SDK's own AppBridge: it loads a view's HTML into a sandboxed
// iframe, answers the handshake with a host context, sends the tool input and result, and relays
// the view's tools/call requests to the test (window.__relayToolCall, a Playwright binding).
// Plain JavaScript on purpose: the repository's test tsconfig is Node-only and would reject DOM code.
import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";

const HOST_INFO = { name: "switchboard-test-host", version: "1.0.0" };
const CAPABILITIES = { serverTools: {}, openLinks: {}, logging: {} };

const state = {
  bridge: null,
  iframe: null,
  context: null,
  /** Every tools/call the view made: { name, arguments, at } (at: ms since the page loaded). */
  calls: [],
  openedLinks: [],
  logs: [],
  tornDownAt: null,
};

function applyPageTheme(theme) {
  document.documentElement.dataset.theme = theme;
}

/**
 * Mounts a view. `html` is the ui:// resource text; `toolName`, `args` and `result` are the tool
 * call the view belongs to. Resolves once the view has the tool result.
 */
async function mount({ html, toolName, args, result, theme = "light", width = 800 }) {
  if (state.bridge) await teardown();
  state.calls = [];
  state.openedLinks = [];
  state.tornDownAt = null;
  applyPageTheme(theme === "system" ? "light" : theme);

  const iframe = document.createElement("iframe");
  iframe.setAttribute("sandbox", "allow-scripts");
  iframe.setAttribute("title", `${toolName} view`);
  iframe.style.width = `${width}px`;
  iframe.style.height = "120px";
  document.getElementById("frame-box").replaceChildren(iframe);

  // theme "system": the host sends no theme, so the view follows prefers-color-scheme.
  state.context = {
    ...(theme === "system" ? {} : { theme }),
    displayMode: "inline",
    availableDisplayModes: ["inline"],
    platform: "web",
    locale: "en-US",
    containerDimensions: { width, maxHeight: 6000 },
    toolInfo: { tool: { name: toolName, inputSchema: { type: "object" } } },
  };
  const bridge = new AppBridge(null, HOST_INFO, CAPABILITIES, { hostContext: state.context });
  bridge.oncalltool = async (params) => {
    state.calls.push({ name: params.name, arguments: params.arguments ?? {}, at: performance.now() });
    return window.__relayToolCall(params.name, params.arguments ?? {});
  };
  bridge.onopenlink = async ({ url }) => {
    state.openedLinks.push(url);
    return {};
  };
  bridge.addEventListener("sizechange", ({ height }) => {
    if (typeof height === "number") iframe.style.height = `${Math.ceil(height)}px`;
  });
  bridge.addEventListener("loggingmessage", (m) => state.logs.push(m));
  const initialized = new Promise((resolve) => bridge.addEventListener("initialized", resolve));

  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  iframe.srcdoc = html;
  state.bridge = bridge;
  state.iframe = iframe;
  await initialized;
  await bridge.sendToolInput({ arguments: args });
  await bridge.sendToolResult(result);
}

async function setTheme(theme) {
  applyPageTheme(theme);
  state.context = { ...state.context, theme };
  state.bridge.setHostContext(state.context);
}

/** ui/resource-teardown, as a host sends before removing the view; the iframe stays for inspection. */
async function teardown() {
  if (!state.bridge) return;
  await state.bridge.teardownResource({});
  state.tornDownAt = performance.now();
  await state.bridge.close();
  state.bridge = null;
}

window.host = {
  mount,
  setTheme,
  teardown,
  calls: () => state.calls,
  openedLinks: () => state.openedLinks,
  tornDownAt: () => state.tornDownAt,
  now: () => performance.now(),
};
window.hostReady = true;
