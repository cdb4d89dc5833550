import type { Config } from "../config.js";
import { Egress } from "../core/base/egress.js";
import type { ServiceModule } from "../core/service/service.js";

/** The process's egress step, knowing every secret the configuration holds (scrubbed everywhere, never evicted). */
export function configuredEgress(config: Config, services: readonly ServiceModule<any>[]): Egress {
  const egress = new Egress();
  for (const [name, settings] of config.services) {
    const module = services.find((s) => s.name === name)!;
    for (const v of module.env)
      if (v.secret && settings[v.name] !== undefined) egress.addConfigured(settings[v.name] as string);
  }
  for (const secret of [
    config.httpToken,
    config.requestStateKey,
    config.stateKey,
    config.authClientSecret,
    stateUrlPassword(config.stateUrl),
  ])
    egress.addConfigured(secret);
  return egress;
}

function stateUrlPassword(url: string | undefined): string | undefined {
  if (!url) return undefined;
  try {
    return decodeURIComponent(new URL(url).password) || undefined;
  } catch {
    return undefined;
  }
}
