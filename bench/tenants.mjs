// Goal 8: what a new tenant costs a per-user-keys server (MCP_CREDENTIALS=caller). Anyone who can
// reach the endpoint can send keys never seen before, and each new set of keys builds a tenant
// (the definitions are shared; what it makes with its keys is made on first use). One replica, no
// upstream traffic: 2026-07-28 tools/list, 16 at once, each request with a new build key vs the
// same number with one known key (A B B A blocks); then new keys until the cache holds its cap
// (MCP_MAX_TENANTS), and the replica's RSS growth per tenant once it settled.
import { serviceVariables } from "../scripts/from-src.mjs";
import { CLI, cpuMs, modernRequest, rssMb, sleep, spawnUntil, stopChild } from "./lib.mjs";

const CONCURRENCY = 16;
/** The tenant cache's cap (the server's default, set here so the row measures what it says). */
const MAX_TENANTS = 10_000;
/** How long the replica may settle after the last new tenant before its RSS is read. */
const SETTLE_MS = 5000;

export async function tenantCost({ log, quick = false }) {
  const calls = quick ? 600 : 2000;
  const cap = quick ? 2000 : MAX_TENANTS;
  const { child, match, stderr } = await spawnUntil([CLI, "--transport", "http", "--port", "0", "--toolsets", "all"], {
    env: {
      ...process.env,
      MCP_CREDENTIALS: "caller",
      MCP_STATE_KEY: "bench-tenants-state-key-0123456789abcdef",
      MCP_MAX_TENANTS: String(cap),
      // Every service's base URL (callers bring the keys), where nothing answers: no call goes upstream.
      ...Object.fromEntries((await serviceVariables()).map((s) => [s.baseUrlVar, "http://127.0.0.1:9"])),
    },
    ready: /ready on (http:\/\/[^\s"]+)\/mcp/,
  });
  const url = match[1];
  try {
    const list = modernRequest("tools/list", {});
    let fresh = 0;
    const side = (keyFor) => async (n) => {
      const cpu0 = cpuMs(child.pid);
      const started = performance.now();
      let next = 0;
      let errors = 0;
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < n) {
            next++;
            const res = await fetch(`${url}/mcp`, {
              method: "POST",
              headers: { ...list.headers, "x-build-api-key": keyFor() },
              body: list.body,
            });
            const text = await res.text();
            if (res.status !== 200 || !text.includes("build_get_project")) errors++;
          }
        }),
      );
      const ms = performance.now() - started;
      return { calls: n, errors, ms, callsPerSecond: (n / ms) * 1000, cpuMsPerCall: (cpuMs(child.pid) - cpu0) / n };
    };
    const known = side(() => "tlm_sk_bench_known_tenant");
    const newcomer = side(() => `tlm_sk_bench_new_${fresh++}`);
    log(`tenants: warming up (${calls} calls with one key)...`);
    await known(calls);
    const rssBefore = rssMb(child.pid);
    const tenantsBefore = fresh;
    log(`tenants: ${calls} tools/list with one key vs ${calls} each with a new key (A B B A)...`);
    const a1 = await known(calls / 2);
    const b1 = await newcomer(calls / 2);
    const b2 = await newcomer(calls / 2);
    const a2 = await known(calls / 2);
    const rssAfter = rssMb(child.pid);
    const merge = (x, y) => ({
      calls: x.calls + y.calls,
      errors: x.errors + y.errors,
      callsPerSecond: ((x.calls + y.calls) / (x.ms + y.ms)) * 1000,
      cpuMsPerCall: (x.cpuMsPerCall * x.calls + y.cpuMsPerCall * y.calls) / (x.calls + y.calls),
    });
    const same = merge(a1, a2);
    const fresh2 = merge(b1, b2);
    const tenants = fresh - tenantsBefore;
    // The first measure (until 2026-11-26): RSS growth over the A B B A blocks alone. With ~1,000
    // tenants it mostly shows heap headroom and garbage not yet collected.
    const kbPerTenantBlocks = ((rssAfter - rssBefore) * 1024) / tenants;
    log(`tenants: new keys until the cache holds ${cap} tenants, then ${SETTLE_MS / 1000} s idle...`);
    const fill = await newcomer(cap - tenants);
    await sleep(SETTLE_MS);
    const rssAtCap = rssMb(child.pid);
    const health = await (await fetch(`${url}/healthz`)).json();
    const built = fresh - tenantsBefore;
    // What the goal says: the cap's worth of idle tenants, after the process settled (no forced GC).
    const kbPerTenant = ((rssAtCap - rssBefore) * 1024) / built;
    const cpuRatio = fresh2.cpuMsPerCall / same.cpuMsPerCall;
    log(`tenants: ${fmt(kbPerTenant)} KB and ${fmt(cpuRatio, 2)}x the CPU of a known tenant's call per new tenant`);
    return {
      calls,
      concurrency: CONCURRENCY,
      known: same,
      newTenant: fresh2,
      cpuRatio,
      throughputRatio: fresh2.callsPerSecond / same.callsPerSecond,
      tenantsBuilt: built,
      tenantsLive: health.tenants,
      fillErrors: fill.errors,
      rssMb: { before: rssBefore, afterBlocks: rssAfter, atCap: rssAtCap },
      kbPerTenant,
      blocks: { tenants, kbPerTenant: kbPerTenantBlocks },
      goals: {
        memory: {
          text: `RSS per idle tenant (per-user keys) <= 40 KiB (issue 22): the ${cap} kept at most in ${cap * 0.04} MB`,
          value: kbPerTenant,
          met: kbPerTenant <= 40,
        },
        cpu: {
          text: "a new tenant's first call <= 2x the CPU of a known tenant's",
          value: cpuRatio,
          met: cpuRatio <= 2,
        },
      },
    };
  } catch (err) {
    throw new Error(`${err.message}; server stderr: ${stderr().slice(-500)}`);
  } finally {
    await stopChild(child);
  }
}

const fmt = (x, digits = 0) => Number(x).toFixed(digits);
