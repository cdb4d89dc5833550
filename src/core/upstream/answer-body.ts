import type { AbortLike } from "./request-abort.js";
import type { ByteBudget } from "./budget.js";

/**
 * What parsing a JSON text holds at its peak, estimated from its bytes: the bytes, their string and
 * the strings parsed out of them (3x), plus about 96 bytes per object or array and 24 per value or
 * property (V8; the peaks these were fitted to are in bench/README.md, "Parse cost of an upstream
 * answer"). Text that is not an object or array costs its bytes: JSON.parse
 * fails on its first character or yields one value.
 */
export function parseCost(bytes: Uint8Array): number {
  let i = 0;
  while (i < bytes.length && (bytes[i] === 0x20 || bytes[i] === 0x0a || bytes[i] === 0x0d || bytes[i] === 0x09)) i++;
  if (bytes[i] !== 0x7b && bytes[i] !== 0x5b) return 3 * bytes.length;
  let containers = 0;
  let items = 0;
  let inString = false;
  for (; i < bytes.length; i++) {
    const c = bytes[i];
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) containers++;
    else if (c === 0x2c || c === 0x3a) items++;
  }
  return 3 * bytes.length + 96 * containers + 24 * items;
}

export const mib = (bytes: number) => `${Math.round((bytes / 1024 / 1024) * 10) / 10} MiB`;

/**
 * Reads an answer up to `max` bytes, holding its bytes in the budget as they arrive (all of them
 * at once when the length is announced). Past `max` it stops reading: BODY_TOO_LARGE.
 */
export async function readBudgeted(
  body: AsyncIterable<Buffer> & { destroy?: () => void },
  o: {
    max: number;
    contentLength?: number;
    budget: ByteBudget;
    waitMs: number;
    signal: AbortLike;
    hold: { bytes: number; waiting: boolean };
    onChunk(): void;
  },
): Promise<Buffer> {
  const tooLarge = () =>
    Object.assign(new Error(`The upstream answer exceeded ${Math.round(o.max / 1024)} KiB and was not read.`), {
      code: "BODY_TOO_LARGE",
    });
  const take = async (bytes: number) => {
    if (!o.budget.tryTake(bytes)) {
      o.hold.waiting = true;
      await o.budget.take(bytes, o.waitMs, o.signal);
      o.hold.waiting = false;
    }
    o.hold.bytes += bytes;
  };
  try {
    if (o.contentLength !== undefined) {
      if (o.contentLength > o.max) throw tooLarge();
      await take(o.contentLength);
    }
  } catch (err) {
    body.destroy?.();
    throw err;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > o.max) {
      body.destroy?.();
      throw tooLarge();
    }
    if (size > o.hold.bytes) await take(size - o.hold.bytes);
    chunks.push(chunk);
    o.onChunk();
  }
  return Buffer.concat(chunks, size);
}
