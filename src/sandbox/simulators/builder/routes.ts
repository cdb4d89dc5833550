import type { Router, SimRequest, SimResponse } from "../../router.js";
import type { BuildContext } from "./context.js";
import { API, type SimProject } from "./state.js";

/**
 * The build envelope: `{ errors: null, data }` on success, `{ errors: { errorCode, errorMessage },
 * data: null }` on failure.
 */

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }
}

/** `details` becomes the envelope's `errors.errorDetails` (MAX_PROJECTS_REACHED, SANDBOX_NOT_REACHABLE). */
export function fail(status: number, code: string, message: string, details?: Record<string, unknown>): never {
  throw new ApiError(status, code, message, details);
}

export function ok(data: unknown): SimResponse {
  return { status: 200, body: { errors: null, data } };
}

/** A handler's `data` with response headers (paging metadata such as X-Total-Count). */
export class WithHeaders {
  constructor(
    readonly data: unknown,
    readonly headers: Record<string, string>,
  ) {}
}

export function errorResponse(
  status: number,
  errorCode: string,
  errorMessage: string,
  errorDetails?: Record<string, unknown>,
): SimResponse {
  return {
    status,
    body: { errors: { errorCode, errorMessage, ...(errorDetails ? { errorDetails } : {}) }, data: null },
  };
}

/**
 * How an area adds operations. Handlers return the `data` of the envelope or throw with `fail()`;
 * paths are relative to /api/v1/vcaas. The router answers with the first registered match, so a
 * literal segment must not share a position with another area's `:param` (none do today).
 */
export class BuildRoutes {
  constructor(
    private readonly router: Router,
    private readonly ctx: BuildContext,
  ) {}

  on(method: string, path: string, handler: (req: SimRequest) => unknown): void {
    this.router.on(method, API + path, (req) => {
      // Runs charge credits as they progress, so the balance is only right once every project is current.
      this.ctx.advanceAll();
      try {
        const data = handler(req);
        return data instanceof WithHeaders ? { ...ok(data.data), headers: data.headers } : ok(data);
      } catch (err) {
        if (err instanceof ApiError) return errorResponse(err.status, err.code, err.message, err.details);
        throw err;
      }
    });
  }

  /** An operation under /projects/:projectId; the handler gets the project (404 PROJECT_NOT_FOUND when unknown). */
  onProject(method: string, path: string, handler: (p: SimProject, req: SimRequest) => unknown): void {
    this.on(method, `/projects/:projectId${path}`, (req) => {
      const data = handler(this.ctx.loadProject(req.params.projectId), req);
      // §1.4: a successful PATCH discards the cached details snapshot (and a deleted project's goes with it).
      if (path === "" && (method === "PATCH" || method === "DELETE"))
        this.ctx.detailsCache.delete(req.params.projectId);
      return data;
    });
  }
}
