// Goal 8: what a new tenant costs a per-user-keys server (MCP_CREDENTIALS=caller). Anyone who can
// reach the endpoint can send keys never seen before, and each new set of keys builds a tenant
// (its upstream clients, pollers, caches; the tool definitions are shared). One replica, no
// upstream traffic: 2026-07-28 tools/list, 16 at once, each request with a new build key vs the
// same number with one known key (A B B A blocks), and the replica's RSS growth per tenant.
import { serviceVariables } from "../scripts/from-src.mjs";
import { CLI, cpuMs, modernRequest, rssMb, spawnUntil, stopChild } from "./lib.mjs";

const CONCURRENCY = 16;

export async function tenantCost({ log, quick = false }) {
  const calls = quick ? 600 : 2000;
  const { child, match, stderr } = await spawnUntil([CLI, "--transport", "http", "--port", "0", "--toolsets", "all"], {
    env: {
      ...process.env,
      MCP_CREDENTIALS: "caller",
      MCP_STATE_KEY: "bench-tenants-state-key-0123456789abcdef",
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
    const health = await (await fetch(`${url}/healthz`)).json();
    const tenants = fresh - tenantsBefore;
    const kbPerTenant = ((rssAfter - rssBefore) * 1024) / tenants;
    const cpuRatio = fresh2.cpuMsPerCall / same.cpuMsPerCall;
    log(`tenants: ${fmt(kbPerTenant)} KB and ${fmt(cpuRatio, 2)}x the CPU of a known tenant's call per new tenant`);
    return {
      calls,
      concurrency: CONCURRENCY,
      known: same,
      newTenant: fresh2,
      cpuRatio,
      throughputRatio: fresh2.callsPerSecond / same.callsPerSecond,
      tenantsBuilt: tenants,
      tenantsLive: health.tenants,
      rssMb: { before: rssBefore, after: rssAfter },
      kbPerTenant,
      goals: {
        memory: {
          text: "RSS per idle tenant (per-user keys) <= 40 KiB (issue 22): the 10,000 kept at most in 400 MB",
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
