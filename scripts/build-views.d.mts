// Types of what tests import from build-views.mjs.
import type { ViewDecl } from "../src/core/service/views.js";

export const MAX_GZIP_BYTES: number;
/** The views the registered services declare, with the view's own image policy filled in. */
export function declaredViews(): Promise<Array<ViewDecl & { imgSrc: string }>>;
export function buildViews(options?: {
  outdir?: string;
  minify?: boolean;
  log?: boolean;
  maxGzipBytes?: number;
}): Promise<Array<ViewDecl & { file: string; bytes: number; gzipBytes: number }>>;
