import type { McpUiHostContext } from "@modelcontextprotocol/ext-apps";
import type { ViewBridge } from "./bridge.js";

/**
 * Light/dark theme: the host context's `theme` wins; without one, the system preference
 * (prefers-color-scheme) applies and is followed live. Host style variables (--color-*, --font-*,
 * --border-radius-*) are applied as CSS custom properties; the stylesheet falls back to its own.
 */
export function followTheme(bridge: ViewBridge): void {
  const media = window.matchMedia("(prefers-color-scheme: dark)");
  let hostTheme: "light" | "dark" | undefined;
  const apply = () => setTheme(hostTheme ?? (media.matches ? "dark" : "light"));
  media.addEventListener("change", apply);
  bridge.on("hostcontext", (ctx: McpUiHostContext) => {
    if (ctx.theme === "light" || ctx.theme === "dark") hostTheme = ctx.theme;
    applyHostVariables(ctx.styles?.variables);
    apply();
  });
  apply();
}

function setTheme(theme: "light" | "dark"): void {
  const root = document.documentElement;
  root.dataset.theme = theme;
  root.style.colorScheme = theme;
}

const SAFE_VARIABLE = /^--(color|font|border|shadow)-[a-z0-9-]+$/;

function applyHostVariables(variables: Record<string, string | undefined> | undefined): void {
  if (!variables) return;
  const root = document.documentElement;
  for (const [name, value] of Object.entries(variables)) {
    // No url(): a view loads nothing from the network, not even through a host-provided style.
    if (!SAFE_VARIABLE.test(name) || typeof value !== "string" || /url\s*\(/i.test(value)) continue;
    root.style.setProperty(name, value);
  }
}
