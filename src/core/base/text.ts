/** One line, at most `max` characters: for quoting upstream free text in summaries. */
export function trimLine(text: string | undefined, max = 120): string {
  const flat = (text ?? "").replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** "1 credit", "2.5 credits". */
export function credits(n: number): string {
  return `${n} credit${n === 1 ? "" : "s"}`;
}
