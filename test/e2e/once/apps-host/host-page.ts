import { fileURLToPath } from "node:url";
import { build } from "esbuild";

/** The test host page: one HTML document with host.js (and the SDK's AppBridge) bundled inline. */

const HOST_SCRIPT = fileURLToPath(new URL("./host.js", import.meta.url));

export async function hostPageHtml(): Promise<string> {
  const result = await build({
    entryPoints: [HOST_SCRIPT],
    bundle: true,
    write: false,
    format: "iife",
    platform: "browser",
    target: "chrome110",
    minify: true,
    logLevel: "warning",
  });
  const script = result.outputFiles[0].text.replace(/<\/script/gi, "<\\/script");
  return `<!doctype html>
<html lang="en" data-theme="light">
<head>
<meta charset="utf-8">
<link rel="icon" href="data:,">
<title>MCP Apps test host</title>
<style>
  html { background: #eef0f3; }
  html[data-theme="dark"] { background: #0b0d10; }
  body { margin: 0; padding: 16px; }
  iframe { display: block; border: 0; border-radius: 10px; background: transparent; }
</style>
</head>
<body>
<div id="frame-box"></div>
<script>${script}</script>
</body>
</html>
`;
}
