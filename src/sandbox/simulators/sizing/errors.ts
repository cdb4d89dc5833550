import type { SimRequest, SimResponse } from "../../router.js";

/**
 * Errors. Not shown in the spec: failure shape and codes. We answer
 * `{ ok: false, error: { code, message } }`, the same shape as the drone fleet simulator.
 */

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
  }
}

export function failure(status: number, code: string, message: string, headers?: Record<string, string>): SimResponse {
  return { status, body: { ok: false, error: { code, message } }, headers };
}

export function success(data: unknown, status = 200): SimResponse {
  return { status, body: { ok: true, data } };
}

export function validation(message: string): ApiError {
  return new ApiError(400, "VALIDATION_ERROR", message);
}

/** Turns ApiErrors thrown by a route into failure responses. */
export function guarded(route: (req: SimRequest) => SimResponse): (req: SimRequest) => SimResponse {
  return (req) => {
    try {
      return route(req);
    } catch (err) {
      if (err instanceof ApiError) return failure(err.status, err.code, err.message, err.headers);
      throw err;
    }
  };
}
