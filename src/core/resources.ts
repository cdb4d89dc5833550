import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { describeError } from "./errors.js";
import { UpstreamError } from "./upstream.js";

/** MCP's code for an unknown resource. */
export const RESOURCE_NOT_FOUND = -32002;

export function notFound(uri: URL, message: string): McpError {
  return new McpError(RESOURCE_NOT_FOUND, `Resource not found: ${message}`, { uri: uri.href });
}

/**
 * Reads one JSON resource. An upstream 404 becomes MCP's "resource not found"; any other failure
 * an internal error carrying the same explanation a tool would give.
 */
export async function jsonResource(uri: URL, read: () => Promise<unknown>) {
  let data: unknown;
  try {
    data = await read();
  } catch (err) {
    if (err instanceof McpError) throw err;
    if (err instanceof UpstreamError && err.status === 404) throw notFound(uri, err.message);
    throw new McpError(ErrorCode.InternalError, describeError(err), { uri: uri.href });
  }
  return { contents: [{ uri: uri.href, mimeType: "application/json", text: JSON.stringify(data, null, 2) }] };
}

/** Decodes a template variable; a malformed escape is the caller's mistake, not ours. */
export function decodeVariable(uri: URL, value: unknown): string {
  try {
    return decodeURIComponent(String(value));
  } catch {
    throw new McpError(ErrorCode.InvalidParams, `Malformed percent-encoding in ${uri.href}`);
  }
}
