import type { Router, SimRequest, SimResponse } from "../../router.js";
import type { BuildContext } from "./context.js";
import { API, type SimProject } from "./state.js";

/** The build envelope: `{ errors: null, data }` on success, `{ errors: { errorCode, errorMessage }, data: null }` on failure. */

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export function fail(status: number, code: string, message: string): never {
  throw new ApiError(status, code, message);
}

export function ok(data: unknown): SimResponse {
  return { status: 200, body: { errors: null, data } };
}

export function errorResponse(status: number, errorCode: string, errorMessage: string): SimResponse {
  return { status, body: { errors: { errorCode, errorMessage }, data: null } };
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
        return ok(handler(req));
      } catch (err) {
        if (err instanceof ApiError) return errorResponse(err.status, err.code, err.message);
        throw err;
      }
    });
  }

  /** An operation under /projects/:projectId; the handler gets the project (404 PROJECT_NOT_FOUND when unknown). */
  onProject(method: string, path: string, handler: (p: SimProject, req: SimRequest) => unknown): void {
    this.on(method, `/projects/:projectId${path}`, (req) => handler(this.ctx.loadProject(req.params.projectId), req));
  }
}
