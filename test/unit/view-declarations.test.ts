// A view is declared once, by its service (`views` in src/services/<name>/index.ts): the build
// script builds exactly those, the implementation registers them, and every tool's `view` names one
// of its own service's (issue 32, item 8).
import { existsSync, readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { declaredViews } from "../../scripts/build-views.mjs";
import { viewUri } from "../../src/core/service/views.js";
import { SANDBOX_APPS_DOMAIN } from "../../src/sandbox/simulators/builder/state.js";
import { loadServices, SERVICES } from "../../src/services/registry.js";

const VIEWS_DIR = fileURLToPath(new URL("../../views/", import.meta.url));
const views = SERVICES.flatMap((service) => (service.views ?? []).map((view) => ({ service: service.name, view })));

describe("view declarations", () => {
  it("each view has its folder under views/, and each folder with an index.ts is declared", () => {
    expect(views.length).toBeGreaterThanOrEqual(3);
    for (const { view } of views) expect(existsSync(`${VIEWS_DIR}${view.name}/index.ts`), view.name).toBe(true);
    const folders = readdirSync(VIEWS_DIR).filter((f) => existsSync(`${VIEWS_DIR}${f}/index.ts`));
    expect(folders.sort()).toEqual(views.map(({ view }) => view.name).sort());
  });

  it("the build script builds the views the registry declares, with their titles", async () => {
    const built = await declaredViews();
    expect(built.map(({ name, title }) => ({ name, title }))).toEqual(
      views.map(({ view }) => ({ name: view.name, title: view.title })),
    );
    expect(built.find((v) => v.name === "build-console")?.imgSrc).toBe("https:");
    expect(built.find((v) => v.name === "fleet-map")?.imgSrc).toBe("'none'");
  });

  it("each service registers its declared views, and each tool's view is one of its service's", async () => {
    for (const service of await loadServices()) {
      const own = (service.views ?? []).map((v) => viewUri(v.name));
      const resources = (await service.resources?.(testSettings(service.name))) ?? [];
      expect(
        resources.map((r) => r.uri).filter((u) => u.startsWith("ui://")),
        service.name,
      ).toEqual(own);
      for (const tool of service.tools()) if (tool.view) expect(own, tool.name).toContain(tool.view);
    }
  });

  it("the build console admits the sandbox's preview origin, and only against the sandbox", async () => {
    const [builder] = (await loadServices()).filter((s) => s.name === "build");
    const meta = async (baseUrl: string) => {
      const settings = { ...testSettings("build"), BUILD_API_BASE_URL: baseUrl };
      const resources = await builder.resources!(settings);
      return resources.find((r) => r.uri === viewUri("build-console"))?.meta;
    };
    const sandbox = {
      ui: { csp: { resourceDomains: [`https://previews.${SANDBOX_APPS_DOMAIN}`] }, prefersBorder: true },
    };
    expect(await meta("http://127.0.0.1:4010/build")).toEqual(sandbox);
    expect(await meta("https://api.example.com")).toEqual({ ui: { csp: {}, prefersBorder: true } });
  });
});

/** Settings enough for `resources(settings)`: a base URL off loopback. */
function testSettings(service: string): any {
  return { BUILD_API_BASE_URL: "https://api.example.com", service };
}
