import { readFile } from "node:fs/promises";
import type { ResourceDef } from "./resources.js";

/** The MCP Apps mime type of an HTML view (ext-apps). */
const VIEW_MIME_TYPE = "text/html;profile=mcp-app";

export interface ViewDecl {
  /** The file under dist/views/ (built by scripts/build-views.mjs), without `.html`. */
  file: string;
  title: string;
  description: string;
  /** Origins the view may load images from (the CSP's resource domains); none by default. */
  resourceDomains?: string[];
}

export const viewUri = (file: string) => `ui://switchboard/${file}.html`;

/**
 * An MCP Apps view as a resource: a self-contained HTML bundle built at build time (no network at
 * run time), read from beside the server's bundle. Hosts without MCP Apps never read it.
 */
export function viewResource(view: ViewDecl): ResourceDef {
  return {
    name: `view-${view.file}`,
    uri: viewUri(view.file),
    title: view.title,
    description: view.description,
    mimeType: VIEW_MIME_TYPE,
    artifact: true,
    meta: {
      ui: { csp: view.resourceDomains?.length ? { resourceDomains: view.resourceDomains } : {}, prefersBorder: true },
    },
    read: async () => {
      try {
        return await readFile(new URL(`./views/${view.file}.html`, import.meta.url), "utf8");
      } catch {
        throw new Error(`the view ${view.file} is not built (run npm run build)`);
      }
    },
  };
}
