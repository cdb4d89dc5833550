import { randomBytes, randomUUID } from "node:crypto";
import {
  promises as fs,
  linkSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { MAX_MEMORY_RECORDS, type LedgerStore, type Stored } from "../tools/ledger-store.js";

/**
 * The spend ledger without Redis (stdio, one process): one small file per record under
 * ENV.stateDir, so a respawned server remembers the paid calls of the one before it. Several
 * servers may share the directory (a client that spawns one per session): a claim is a hard link
 * (atomic, fails when the record exists), a change a write to a fresh name renamed over the record.
 * Records are sealed with a key kept beside them (`key`, mode 0600), and named by an HMAC of the
 * call: no key, argument or secret value is readable in the directory.
 */
export class FileLedgerStore implements LedgerStore {
  readonly where = "file" as const;
  private writes = 0;

  private constructor(
    private readonly dir: string,
    private readonly generation: string,
    /** Seals the records (a Sealer's secret). */
    readonly secret: string,
  ) {}

  /** Opens (or makes) the directory; throws a sentence naming what is wrong (unwritable, corrupt). */
  static open(stateDir: string): FileLedgerStore {
    const dir = join(stateDir, "ledger");
    try {
      mkdirSync(join(dir, "records"), { recursive: true, mode: 0o700 });
    } catch (err) {
      throw new Error(`cannot create ${dir} (${code(err)})`);
    }
    const secret = once(join(dir, "key"), () => randomBytes(32).toString("base64url"), 0o600);
    if (!/^[A-Za-z0-9_-]{43}$/.test(secret)) throw new Error(`${join(dir, "key")} is corrupt`);
    const generation = once(join(dir, "generation"), () => randomUUID(), 0o600);
    if (!/^[0-9a-f-]{36}$/.test(generation)) throw new Error(`${join(dir, "generation")} is corrupt`);
    // Writable now, not only when the first paid call comes.
    const probe = join(dir, "records", `.probe-${process.pid}-${randomUUID()}`);
    try {
      writeFileSync(probe, "ok");
      unlinkSync(probe);
    } catch (err) {
      throw new Error(`cannot write in ${join(dir, "records")} (${code(err)})`);
    }
    const store = new FileLedgerStore(dir, generation, secret);
    store.prune();
    return store;
  }

  async claim(key: string, value: string, ttlMs: number): Promise<{ generation: string; prior?: Stored }> {
    const tmp = await this.fresh(value, ttlMs);
    try {
      for (let attempt = 0; attempt < 2; attempt++) {
        try {
          await fs.link(tmp, this.path(key));
          this.wrote();
          return { generation: this.generation };
        } catch (err) {
          if (code(err) !== "EEXIST") throw err;
        }
        const prior = await this.read(key);
        if (prior) return { generation: this.generation, prior };
        // Expired (read removed it): claim again.
      }
      throw new Error("the record kept changing");
    } finally {
      await fs.unlink(tmp).catch(() => undefined);
    }
  }

  async get(key: string): Promise<{ generation: string; found?: Stored }> {
    return { generation: this.generation, found: await this.read(key) };
  }

  async set(key: string, value: string, ttlMs: number): Promise<void> {
    const tmp = await this.fresh(value, ttlMs);
    await fs.rename(tmp, this.path(key));
    this.wrote();
  }

  async delete(key: string): Promise<void> {
    await fs.unlink(this.path(key)).catch((err) => {
      if (code(err) !== "ENOENT") throw err;
    });
  }

  private async read(key: string): Promise<Stored | undefined> {
    let raw: string;
    try {
      raw = await fs.readFile(this.path(key), "utf8");
    } catch (err) {
      if (code(err) === "ENOENT") return undefined;
      throw err;
    }
    let parsed: { g?: string; until?: number; value?: string };
    try {
      parsed = JSON.parse(raw);
    } catch {
      // Corrupt: it proves nothing, so the ledger reads it as a record it cannot open (unknown).
      return { generation: this.generation, value: "corrupt" };
    }
    if (typeof parsed.until === "number" && parsed.until < Date.now()) {
      await this.delete(key).catch(() => undefined);
      return undefined;
    }
    return { generation: parsed.g ?? "", value: parsed.value ?? "corrupt" };
  }

  private async fresh(value: string, ttlMs: number): Promise<string> {
    const tmp = join(this.dir, "records", `.${process.pid}-${randomUUID()}`);
    const body = JSON.stringify({ g: this.generation, until: Date.now() + ttlMs, value });
    await fs.writeFile(tmp, body, { mode: 0o600 });
    return tmp;
  }

  private path(key: string): string {
    // Keys are HMACs in base64url; anything else is hashed into a file name all the same.
    return join(this.dir, "records", /^[A-Za-z0-9_-]{1,100}$/.test(key) ? key : Buffer.from(key).toString("hex"));
  }

  private wrote(): void {
    if (++this.writes % 100 === 0) this.prune();
  }

  /** Drops expired records and, past the cap, the oldest ones (a record lives a day at most). */
  private prune(): void {
    const records = join(this.dir, "records");
    const now = Date.now();
    const kept: Array<{ name: string; until: number }> = [];
    for (const name of readdirSync(records)) {
      const file = join(records, name);
      try {
        if (name.startsWith(".")) {
          // A temporary file of a writer that died: gone after a minute.
          if (statSync(file).mtimeMs < now - 60_000) unlinkSync(file);
          continue;
        }
        const until = (JSON.parse(readFileSync(file, "utf8")) as { until?: number }).until ?? 0;
        if (until < now) unlinkSync(file);
        else kept.push({ name, until });
      } catch {
        // Raced with another server, or corrupt: left for the ledger to read as unknown.
      }
    }
    if (kept.length <= MAX_MEMORY_RECORDS) return;
    kept.sort((a, b) => a.until - b.until);
    for (const { name } of kept.slice(0, kept.length - MAX_MEMORY_RECORDS)) unlinkSync(join(records, name));
  }
}

/** A file written once and read ever after, by whichever server comes first. */
function once(path: string, make: () => string, mode: number): string {
  // Written whole under another name, then linked: a server starting at the same time never reads it half-written.
  const tmp = `${path}.${process.pid}-${randomUUID()}`;
  try {
    writeFileSync(tmp, make(), { mode });
    linkSync(tmp, path);
  } catch (err) {
    if (code(err) !== "EEXIST") throw new Error(`cannot write ${path} (${code(err)})`);
  } finally {
    try {
      unlinkSync(tmp);
    } catch {
      // Never written.
    }
  }
  try {
    return readFileSync(path, "utf8").trim();
  } catch (err) {
    throw new Error(`cannot read ${path} (${code(err)})`);
  }
}

function code(err: unknown): string {
  return (err as NodeJS.ErrnoException)?.code ?? String(err);
}
