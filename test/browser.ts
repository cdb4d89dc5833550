import { existsSync } from "node:fs";
import { chromium, type Browser } from "playwright-core";

/** Debian's Chromium (.ci/run installs it with apt), driven headless by playwright-core. */
export const CHROMIUM = "/usr/bin/chromium";
export const haveChromium = existsSync(CHROMIUM);

const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** The one line a browser suite prints when it is skipped for want of Chromium. */
export function sayIfChromiumMissing(suite: string): void {
  if (!haveChromium)
    console.log(`${suite} skipped: ${CHROMIUM} is missing (install it with: apt-get install -y chromium)`);
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
}
