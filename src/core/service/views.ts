import { readFile } from "node:fs/promises";
import type { ResourceDef } from "./resources.js";

/** The MCP Apps mime type of an HTML view (ext-apps). */
const VIEW_MIME_TYPE = "text/html;profile=mcp-app";

/**
 * An MCP Apps view, declared once by its service (`views` in its index.ts): scripts/build-views.mjs
 * builds `views/<name>/` from it, the service's implementation registers it (`viewResource`), and a
 * tool that shows it says `view: viewUri(name)`.
 */
export interface ViewDecl {
  /** Its folder under views/ and its file under dist/views/ (without `.html`). */
  name: string;
  title: string;
  description: string;
  /** What the view's own CSP allows for images (`img-src`): "'none'" unless it shows remote images. */
  imgSrc?: string;
  /** Origins the view may load images from (the resource's `_meta.ui.csp`); none by default. */
  resourceDomains?: string[];
  /** The origins instead when the service's upstream is on loopback (the sandbox serves those images). */
  sandboxResourceDomains?: string[];
}

export const viewUri = (file: string) => `ui://switchboard/${file}.html`;

/**
 * An MCP Apps view as a resource (`upstream.loopback`: the service runs against the sandbox): a
 * self-contained HTML bundle built at build time (no network at run time), read from beside the
 * server's bundle. Hosts without MCP Apps never read it.
 */
export function viewResource(view: ViewDecl, upstream: { loopback: boolean } = { loopback: false }): ResourceDef {
  const domains = (upstream.loopback ? view.sandboxResourceDomains : view.resourceDomains) ?? [];
  return {
    name: `view-${view.name}`,
    uri: viewUri(view.name),
    title: view.title,
    description: view.description,
    mimeType: VIEW_MIME_TYPE,
    artifact: true,
    meta: {
      ui: { csp: domains.length ? { resourceDomains: domains } : {}, prefersBorder: true },
    },
    read: async () => {
      try {
        return await readFile(new URL(`./views/${view.name}.html`, import.meta.url), "utf8");
      } catch {
        throw new Error(`the view ${view.name} is not built (run npm run build)`);
      }
    },
  };
}
