import { describe, expect, it } from "vitest";
import { Egress } from "../../src/core/base/egress.js";
import { createLogger, type LogEcho, type LogLevel } from "../../src/core/base/logger.js";

const SECRET = "sk_live_logger_test_secret_0001";

/** A real scrubber that counts what it is asked to scrub. */
class CountingEgress extends Egress {
  scrubbed = 0;
  override text(text: string): string {
    this.scrubbed++;
    return super.text(text);
  }
}

function echoTo(lines: unknown[], wants: (level: LogLevel) => boolean): LogEcho {
  const echo: LogEcho = (level, message, fields) => void lines.push({ level, message, ...fields });
  echo.wants = wants;
  return echo;
}

describe("the logger", () => {
  it("scrubs nothing for a line that neither stderr nor the request's client takes", () => {
    const egress = new CountingEgress();
    egress.addConfigured(SECRET);
    const lines: unknown[] = [];
    const logger = createLogger("info", egress).withEcho(echoTo(lines, () => false));
    logger.debug("upstream request", { path: `/x/${SECRET}`, nested: { key: SECRET } });
    expect(egress.scrubbed).toBe(0);
    expect(lines).toEqual([]);
  });

  it("still scrubs a line the client takes, below the stderr level", () => {
    const egress = new CountingEgress();
    egress.addConfigured(SECRET);
    const lines: unknown[] = [];
    const logger = createLogger("error", egress).withEcho(echoTo(lines, (level) => level !== "info"));
    logger.info("dropped", { key: SECRET });
    logger.debug(`taken ${SECRET}`, { path: `/x/${SECRET}` });
    expect(lines).toEqual([{ level: "debug", message: "taken [redacted]", path: "/x/[redacted]" }]);
    expect(JSON.stringify(lines)).not.toContain(SECRET);
  });
});
