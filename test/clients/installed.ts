// The third-party client libraries live in their own package (test/clients/package.json, its own
// lockfile; scripts/clients.mjs), so the server's `npm ci` does not pay for them. CI installs it;
// without it these suites are skipped with one line saying how to install it.
import { describe } from "vitest";
import { clientsMissing } from "../../scripts/clients.mjs";

export { CLIENTS_MODULES, clientVersion, clientsMissing } from "../../scripts/clients.mjs";

let skipNoted = false;

/** describe() when the client libraries are installed; otherwise one line on stderr and a skipped suite. */
export function describeClients(name: string, options: { concurrent?: boolean; timeout?: number }, fn: () => void) {
  const missing = clientsMissing();
  if (!missing) {
    describe(name, options, fn);
    return;
  }
  if (!skipNoted) {
    skipNoted = true;
    process.stderr.write(`third-party client tests skipped: ${missing}\n`);
  }
  describe.skip(name, options, fn);
}
