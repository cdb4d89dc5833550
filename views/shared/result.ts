import { isObject, type Json } from "./format.js";

/** Reading a CallToolResult-like value without trusting its shape. Pure. */

export interface ToolResultLike {
  content?: unknown;
  structuredContent?: unknown;
  isError?: unknown;
}

export function structuredOf(result: ToolResultLike | undefined): Json | undefined {
  return result && isObject(result.structuredContent) ? result.structuredContent : undefined;
}

export function textOf(result: ToolResultLike | undefined, max = 600): string {
  if (!result || !Array.isArray(result.content)) return "";
  const text = result.content
    .filter((c): c is { type: "text"; text: string } => isObject(c) && c.type === "text" && typeof c.text === "string")
    .map((c) => c.text)
    .join("\n")
    .trim();
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

export function isErrorResult(result: ToolResultLike | undefined): boolean {
  return result?.isError === true;
}
