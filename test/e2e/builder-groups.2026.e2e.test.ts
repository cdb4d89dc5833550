import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Sandbox } from "../../src/sandbox/index.js";
import { call, connectStdio, ok, retryStart, sandboxEnv, testSandbox, text, type StdioConnection } from "../harness.js";

const GROUPS = "/api/v1/vcaas/project-groups";
const PATCH_PROJECT = "PATCH /api/v1/vcaas/projects/:projectId";

type Group = { groupId: string; name: string; description: string; projectCount?: number };
type Page = { groups: Group[]; count: number; total?: number; skip: number; limit: number };

describe("build_groups and build_update_project", () => {
  let sandbox: Sandbox;
  let conn: StdioConnection;
  let clients: Group;
  const hits = (key: string) => sandbox.build.router.count(key);

  beforeAll(async () => {
    sandbox = await testSandbox();
    conn = await retryStart(() => connectStdio(sandboxEnv(sandbox)));
  });
  afterAll(async () => {
    await conn?.close();
    await sandbox?.close();
  });

  it("creates a group: name trimmed, description cut to 500 by the service", async () => {
    clients = await ok<Group>(conn.client, "build_create_group", { name: "  Clients  ", description: "x".repeat(600) });
    expect(clients).toMatchObject({ name: "Clients" });
    expect(clients.description).toHaveLength(500);
    expect(clients.groupId).toBeTruthy();

    const before = hits(`POST ${GROUPS}`);
    const empty = await call(conn.client, "build_create_group", { name: "   " });
    expect(text(empty)).toMatch(/name: name must not be empty/);
    const long = await call(conn.client, "build_create_group", { name: "n".repeat(81) });
    expect(text(long)).toMatch(/name: name must be at most 80 characters/);
    expect(hits(`POST ${GROUPS}`)).toBe(before);
  });

  it("lists groups newest first with the paging headers, and searches names", async () => {
    const all = await ok<Page>(conn.client, "build_list_groups");
    expect(all.total).toBe(3);
    expect(all.groups.map((g) => g.groupId)[0]).toBe(clients.groupId);
    expect(all.groups.find((g) => g.groupId === "grp_marketing")).toMatchObject({ name: "Marketing", projectCount: 1 });

    const page = await call(conn.client, "build_list_groups", { limit: 1, skip: 1 });
    expect(page.structuredContent).toMatchObject({ count: 1, total: 3, skip: 1, limit: 1 });
    expect(text(page)).toMatch(/^1 of 3 group\(s\):\n- grp_/);
    expect(text(page)).toMatch(/More: call again with skip 2\./);

    const found = await ok<Page>(conn.client, "build_list_groups", { search: "CLIENT" });
    expect(found.groups.map((g) => g.name)).toEqual(["Clients"]);

    const tooMany = await call(conn.client, "build_list_groups", { limit: 201 });
    expect(text(tooMany)).toMatch(/limit: limit must be 1-200/);
    expect(hits(`GET ${GROUPS}`)).toBe(3);
  });

  it("moves a project into a group, renames the group, and deletes it keeping the project", async () => {
    await ok(conn.client, "build_get_project", { projectId: "booking-app" }); // a cached snapshot without the group
    const moved = await call(conn.client, "build_update_project", {
      projectId: "booking-app",
      groupId: clients.groupId,
    });
    expect(moved.structuredContent).toMatchObject({ projectId: "booking-app", groupId: clients.groupId });
    // The PATCH discards the cached details: an immediate read-back shows the group.
    expect(await ok(conn.client, "build_get_project", { projectId: "booking-app" })).toMatchObject({
      groupId: clients.groupId,
    });
    const listed = await ok<{ projects: Array<{ projectId: string }> }>(conn.client, "build_list_projects", {
      groupId: clients.groupId,
    });
    expect(listed.projects.map((p) => p.projectId)).toEqual(["booking-app"]);

    const renamed = await call(conn.client, "build_update_group", {
      groupId: clients.groupId,
      name: "Key clients",
      description: "",
    });
    expect(renamed.structuredContent).toMatchObject({ name: "Key clients", description: "", projectCount: 1 });
    expect(text(renamed)).toBe(`Updated group ${clients.groupId}: "Key clients" (1 project)`);

    const deleted = await call(conn.client, "build_delete_group", { groupId: clients.groupId });
    expect(deleted.structuredContent).toMatchObject({ deleted: true, releasedProjects: 1 });
    expect(text(deleted)).toMatch(/1 project\(s\) are now ungrouped/);
    const project = await ok<{ groupId?: string }>(conn.client, "build_get_project", { projectId: "booking-app" });
    expect(project.groupId).toBeUndefined();

    const gone = await call(conn.client, "build_get_group", { groupId: clients.groupId });
    expect(gone.isError).toBe(true);
    expect(text(gone)).toMatch(/HTTP 404, PROJECT_GROUP_NOT_FOUND/);
    expect(text(gone)).toMatch(/Next step: .*build_list_groups/);
  });

  it("updates a project's label and description: null clears, {} never leaves", async () => {
    const nothing = await call(conn.client, "build_update_project", { projectId: "acme-storefront" });
    expect(nothing.isError).toBe(true);
    expect(text(nothing)).toMatch(/pass at least one of label, description or groupId\. Nothing was sent upstream/);
    expect(hits(PATCH_PROJECT)).toBe(1);

    const long = "L".repeat(100);
    const relabelled = await call(conn.client, "build_update_project", {
      projectId: "acme-storefront",
      label: long,
      description: "  Outdoor gear shop  ",
    });
    expect(relabelled.structuredContent).toMatchObject({ label: "L".repeat(80), description: "Outdoor gear shop" });
    expect(text(relabelled)).toMatch(/The service kept only the first 80 characters of the label\./);

    const cleared = await ok<{ label?: string; description: string; groupId?: string }>(
      conn.client,
      "build_update_project",
      { projectId: "spring-campaign", label: null, groupId: null },
    );
    expect(cleared.label).toBeUndefined();
    expect(cleared.groupId).toBeUndefined();
    expect(cleared.description).toBe("Landing page for the spring marketing campaign");

    const full = await call(conn.client, "build_update_project", { projectId: "acme-storefront", groupId: "grp_nope" });
    expect(text(full)).toMatch(/HTTP 400, INVALID_PROJECT_GROUP/);
  });
});
