// What an idle tenant keeps on the heap (bench/README.md row 8): one replica as in bench/tenants.mjs,
// a heap snapshot (`--heapsnapshot-signal`, which collects garbage first) after FROM new tenants
// and another after TO, and the live heap's growth per tenant between them, grouped by constructor.
// Each new tenant sends one tools/list, or with --call one tools/call of that tool (its upstream is a
// closed port: the call fails, having made the tenant's service instance).
//   node bench/tenant-heap.mjs [--cli dist/cli.js] [--from 200] [--to 1200] [--top 20] [--call build_get_account]
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { serviceVariables } from "../scripts/from-src.mjs";
import { CLI, modernRequest, sleep, spawnUntil, stopChild } from "./lib.mjs";

const { values } = parseArgs({
  options: {
    cli: { type: "string" },
    from: { type: "string" },
    to: { type: "string" },
    top: { type: "string" },
    call: { type: "string" },
  },
});
const cli = values.cli ?? CLI;
const from = Number(values.from ?? 200);
const to = Number(values.to ?? 1200);
const dir = mkdtempSync(join(tmpdir(), "tenant-heap-"));

const { child, match } = await spawnUntil(
  [
    "--heapsnapshot-signal=SIGUSR2",
    `--diagnostic-dir=${dir}`,
    cli,
    "--transport",
    "http",
    "--port",
    "0",
    "--toolsets",
    "all",
  ],
  {
    env: {
      ...process.env,
      MCP_CREDENTIALS: "caller",
      MCP_STATE_KEY: "bench-tenants-state-key-0123456789abcdef",
      ...Object.fromEntries((await serviceVariables()).map((s) => [s.baseUrlVar, "http://127.0.0.1:9"])),
    },
    ready: /ready on (http:\/\/[^\s"]+)\/mcp/,
  },
);
const url = match[1];
const list = values.call
  ? modernRequest("tools/call", { name: values.call, arguments: {} })
  : modernRequest("tools/list", {});
let built = 0;
async function newTenants(until) {
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (built < until) {
        const res = await fetch(`${url}/mcp`, {
          method: "POST",
          headers: { ...list.headers, "x-build-api-key": `tlm_sk_heap_${built++}` },
          body: list.body,
        });
        await res.text();
        if (res.status !== 200) throw new Error(`${values.call ?? "tools/list"} answered ${res.status}`);
      }
    }),
  );
}

async function snapshot() {
  const before = new Set(readdirSync(dir));
  child.kill("SIGUSR2");
  for (;;) {
    await sleep(500);
    const file = readdirSync(dir).find((f) => !before.has(f) && f.endsWith(".heapsnapshot"));
    if (!file) continue;
    const path = join(dir, file);
    const size = statSync(path).size;
    await sleep(1000);
    if (statSync(path).size !== size || size === 0) continue;
    try {
      return summarize(JSON.parse(readFileSync(path, "utf8")));
    } catch {
      // still being written
    } finally {
      rmSync(path, { force: true });
    }
  }
}

function summarize({ snapshot: meta, nodes, strings }) {
  const fields = meta.meta.node_fields;
  const types = meta.meta.node_types[0];
  const width = fields.length;
  const [typeAt, nameAt, sizeAt] = ["type", "name", "self_size"].map((f) => fields.indexOf(f));
  const groups = new Map();
  let total = 0;
  for (let i = 0; i < nodes.length; i += width) {
    const type = types[nodes[i + typeAt]];
    const size = nodes[i + sizeAt];
    total += size;
    const key = type === "object" || type === "closure" ? `${type} ${strings[nodes[i + nameAt]]}` : type;
    const g = groups.get(key) ?? { size: 0, count: 0 };
    g.size += size;
    g.count++;
    groups.set(key, g);
  }
  return { total, groups };
}

try {
  await newTenants(from);
  const a = await snapshot();
  await newTenants(to);
  const b = await snapshot();
  const health = await (await fetch(`${url}/healthz`)).json();
  const n = to - from;
  const kept = ((b.total - a.total) / n).toFixed(0);
  console.log(
    `${cli} (${values.call ?? "tools/list"}): ${health.tenants} tenants live; heap kept per tenant ${kept} B`,
  );
  const rows = [...b.groups]
    .map(([key, g]) => {
      const old = a.groups.get(key) ?? { size: 0, count: 0 };
      return { key, bytes: (g.size - old.size) / n, count: (g.count - old.count) / n };
    })
    .sort((x, y) => y.bytes - x.bytes)
    .slice(0, Number(values.top ?? 20));
  for (const r of rows) console.log(`${r.bytes.toFixed(0).padStart(7)} B ${r.count.toFixed(2).padStart(7)}  ${r.key}`);
} finally {
  await stopChild(child);
  rmSync(dir, { recursive: true, force: true });
}
