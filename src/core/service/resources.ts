import { ProtocolError, ProtocolErrorCode, ResourceNotFoundError } from "@modelcontextprotocol/server";
import { UpstreamError } from "../upstream/upstream.js";

/** One entry of a resource list. */
interface ListedResource {
  uri: string;
  name: string;
  description?: string;
}

/**
 * A resource as a service declares it: no SDK types. `uri` is a fixed URI or an RFC 6570
 * template (`build://projects/{projectId}`); `read` returns JSON data (or, with `mimeType` set to
 * a text type, a string). Registration, error codes and scrubbing are core's job. Defined once per
 * process and shared by every tenant, like a tool: `read`, `list` and `complete` get the calling
 * tenant's deps of the service (its `ServiceInstance.deps`) as their last argument.
 */
export interface ResourceDef<D = any> {
  name: string;
  title: string;
  description: string;
  uri: string;
  mimeType?: string;
  list?(signal: AbortSignal, deps: D): Promise<ListedResource[]>;
  complete?: Record<string, (value: string, deps: D) => Promise<string[]>>;
  read(uri: URL, variables: Record<string, string>, signal: AbortSignal, deps: D): Promise<unknown>;
  /** Extra fields of the resource's metadata (MCP Apps views declare their CSP here). */
  meta?: Record<string, unknown>;
  /**
   * A build artifact of this package (an MCP Apps view): sent as built, never scrubbed. Scrubbing
   * it could only break it (its inline script must match the sha256 in its CSP).
   */
  artifact?: boolean;
  /** The record (a project) this read is about: secrets supplied for it are scrubbed too. */
  secretRecord?(variables: Record<string, string>): string | undefined;
}

/**
 * A resource of the process's: a service's definition with the service whose deps it reads with
 * (set once by the app when it collects the enabled services' resources).
 */
export type ServiceResource = ResourceDef & { service: string };

/**
 * Calls `onChange` whenever the resource behind a URI changes, until stopped; undefined for a URI
 * it does not know. Shared by every tenant: `deps` are the subscribing tenant's.
 */
export type ResourceWatcher<D = any> = (uri: string, onChange: () => void, deps: D) => (() => void) | undefined;

/** A service's watcher as the process shares it: with the service whose deps it follows with. */
export interface ServiceWatcher {
  service: string;
  watch: ResourceWatcher;
}

/** A read failed because the thing does not exist. */
export function notFound(uri: URL, message: string): ProtocolError {
  return new ResourceNotFoundError(uri.href, `Resource not found: ${message}`);
}

/**
 * An upstream 404 becomes MCP's "resource not found"; any other failure an internal error carrying
 * the same explanation a tool would give.
 */
export function resourceError(uri: URL, err: unknown, describe: (err: unknown) => string): Error {
  if (err instanceof ProtocolError) return err;
  if (err instanceof UpstreamError && err.status === 404) return notFound(uri, err.message);
  return new ProtocolError(ProtocolErrorCode.InternalError, describe(err), { uri: uri.href });
}

/** Decodes a template variable; a malformed escape is the caller's mistake, not ours. */
export function decodeVariable(uri: URL, value: unknown): string {
  try {
    return decodeURIComponent(String(Array.isArray(value) ? value[0] : value));
  } catch {
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Malformed percent-encoding in ${uri.href}`);
  }
}
