export interface RequestInfo {
  method: string;
  path: string;
  /** Safe to repeat: retried on transient failures, never reported as "may have taken effect". */
  idempotent: boolean;
}

/** One error type for every upstream failure: HTTP status, errorCode and message. */
export class UpstreamError extends Error {
  constructor(
    readonly service: string,
    readonly status: number | undefined,
    readonly code: string,
    message: string,
    readonly request: RequestInfo,
    /** True when a write may have reached the upstream before the failure (no answer read). */
    readonly outcomeUnknown = false,
    /** The upstream's Retry-After, when it sent one. */
    readonly retryAfterMs?: number,
    /** The upstream's structured detail (the build service's `errorDetails`), passed through. */
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = "UpstreamError";
  }

  /** Transient failures are worth retrying (for reads) or polling through (for waits). */
  get transient(): boolean {
    if (
      this.code === "TIMEOUT" ||
      this.code === "UNREACHABLE" ||
      this.code === "NON_JSON_RESPONSE" ||
      this.code === "BUSY"
    )
      return true;
    return this.status === 429 || (this.status !== undefined && this.status >= 500);
  }
}
