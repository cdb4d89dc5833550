#!/usr/bin/env node
// The published entry (dist/cli.js). Node's compile cache (22.1+) keeps the compiled code of
// every module loaded after this line on disk (in the OS temp directory), so a start after the
// first skips compiling the server; Node 20 has no cache and simply goes on. The server is
// imported, not bundled into this file, because the cache covers only modules loaded after it is on.
import nodeModule from "node:module";

(nodeModule as { enableCompileCache?: () => unknown }).enableCompileCache?.();
await import("./cli.js");
