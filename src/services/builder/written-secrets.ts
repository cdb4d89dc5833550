/** The details' snapshot is cached "a few seconds" (§1.4): a minute covers it with room. */
const KEEP_MS = 60_000;
/** Names kept per tenant at most, oldest dropped first. */
const MAX_NAMES = 500;

/**
 * Secret names build_set_secret wrote, per project, for a minute. The details' `secrets` come from
 * a snapshot that a secret write does not discard (§1.4), so a read right after the write still
 * lacks the name: without this, the tools called it missing and advised setting it again, which
 * creates a second secret of that name (duplicates: not stated, §8).
 */
export class WrittenSecrets {
  private readonly written = new Map<string, number>();

  add(projectId: string, name: string): void {
    const key = `${projectId}\n${name}`;
    this.written.delete(key);
    this.written.set(key, Date.now());
    if (this.written.size > MAX_NAMES) this.written.delete(this.written.keys().next().value!);
  }

  /** The names written to `projectId` in the last minute. */
  of(projectId: string): Set<string> {
    const now = Date.now();
    const names = new Set<string>();
    for (const [key, at] of this.written) {
      if (now - at > KEEP_MS) this.written.delete(key);
      else if (key.startsWith(`${projectId}\n`)) names.add(key.slice(projectId.length + 1));
    }
    return names;
  }
}
