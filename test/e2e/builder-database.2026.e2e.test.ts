import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Sandbox } from "../../src/sandbox/index.js";
import { call, connectStdio, ok, retryStart, sandboxEnv, testSandbox, text, type StdioConnection } from "../harness.js";

const PROJECT = "acme-storefront";
const RECORDS = "POST /api/v1/vcaas/projects/:projectId/database/records";
const RECORD = "/api/v1/vcaas/projects/:projectId/database/records/:recordId";
const LINK = `${RECORD}/link`;

type Row = { _id: string; [field: string]: unknown };

describe("build_database: record writes and many-to-many links", () => {
  let sandbox: Sandbox;
  let conn: StdioConnection;
  const hits = (key: string) => sandbox.build.router.count(key);
  const find = async (tableName: string, _id: string) =>
    (
      await ok<{ results: Row[] }>(conn.client, "build_query_database", {
        projectId: PROJECT,
        tableName,
        queryOptions: { _filter: { _id } },
      })
    ).results;

  beforeAll(async () => {
    sandbox = await testSandbox();
    // A many-to-many relation between customers and a tags table; both sides carry the same property id.
    const acme = sandbox.build.project(PROJECT)!;
    const customers = acme.tables.find((t) => t.type === "customers")!;
    customers.properties.push({
      id: "rel_tags",
      name: "tags",
      propertyType: "objectReference",
      label: "Tags",
      objectReference: { objectReferenceTypeId: "tbl_tags", objectReferenceRelation: "manyToMany" },
    });
    acme.tables.push({
      _id: "tbl_tags",
      type: "tags",
      label: "Tags",
      description: "Customer tags",
      properties: [
        { id: "p_tag_name", name: "name", propertyType: "string", label: "Name" },
        {
          id: "rel_tags",
          name: "customers",
          propertyType: "objectReference",
          label: "Customers",
          objectReference: { objectReferenceTypeId: customers._id, objectReferenceRelation: "manyToMany" },
        },
      ],
      records: [{ _id: "tag_vip", name: "VIP" }],
    });
    conn = await retryStart(() => connectStdio(sandboxEnv(sandbox)));
  });
  afterAll(async () => {
    await conn?.close();
    await sandbox?.close();
  });

  it("lists the record tools with annotations that follow what they do", async () => {
    const { tools } = await conn.client.listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    expect(byName.get("build_create_record")?.annotations).toMatchObject({
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: false,
    });
    // The fields given overwrite the old values, which are not kept (issue 29): it asks first.
    expect(byName.get("build_update_record")?.annotations).toMatchObject({
      destructiveHint: true,
      idempotentHint: true,
    });
    expect(byName.get("build_delete_record")?.annotations).toMatchObject({ destructiveHint: true });
    expect(byName.get("build_unlink_records")?.annotations).toMatchObject({
      destructiveHint: true,
      idempotentHint: true,
    });
  });

  it("creates, updates and deletes a record", async () => {
    const created = await ok<Row & { createdAt: string }>(conn.client, "build_create_record", {
      projectId: PROJECT,
      tableName: "customers",
      data: { name: "Zoe Quinn", email: "zoe@example.com", country: "ES", vip: false },
    });
    expect(created).toMatchObject({ name: "Zoe Quinn", country: "ES" });
    expect(created._id).toBeTruthy();
    expect(created.createdAt).toBeTruthy();
    expect(await find("customers", created._id)).toMatchObject([{ name: "Zoe Quinn", email: "zoe@example.com" }]);

    const updated = await call(conn.client, "build_update_record", {
      projectId: PROJECT,
      tableName: "customers",
      recordId: created._id,
      data: { vip: true },
    });
    expect(updated.isError).toBeFalsy();
    expect(updated.structuredContent).toMatchObject({ _id: created._id, name: "Zoe Quinn", vip: true });
    expect(text(updated)).toMatch(/^Updated record [0-9a-f]+ in customers/);
    expect(hits(`PATCH ${RECORD}`)).toBe(1);

    // tableName travels in the query string of the DELETE (the upstream refuses it anywhere else).
    const deleted = await call(conn.client, "build_delete_record", {
      projectId: PROJECT,
      tableName: "customers",
      recordId: created._id,
    });
    expect(deleted.structuredContent).toMatchObject({ deleted: true, recordId: created._id });
    expect(await find("customers", created._id)).toEqual([]);

    const again = await call(conn.client, "build_delete_record", {
      projectId: PROJECT,
      tableName: "customers",
      recordId: created._id,
    });
    expect(again.isError).toBe(true);
    expect(text(again)).toMatch(/HTTP 404, RECORD_NOT_FOUND/);
    expect(hits(`DELETE ${RECORD}`)).toBe(2);
  });

  it("refuses what the service would refuse before sending anything", async () => {
    const before = hits(RECORDS);
    const withId = await call(conn.client, "build_create_record", {
      projectId: PROJECT,
      tableName: "customers",
      data: { _id: "mine", name: "X" },
    });
    expect(withId.isError).toBe(true);
    expect(text(withId)).toMatch(/data: data must not contain _id/);
    const noTable = await call(conn.client, "build_create_record", {
      projectId: PROJECT,
      tableName: "",
      data: { name: "X" },
    });
    expect(text(noTable)).toMatch(/tableName: tableName is required/);
    const noData = await call(conn.client, "build_update_record", {
      projectId: PROJECT,
      tableName: "customers",
      recordId: "r1",
      data: "name=X",
    });
    expect(text(noData)).toMatch(/data:/);
    const noReference = await call(conn.client, "build_link_records", {
      projectId: PROJECT,
      tableName: "customers",
      recordId: "r1",
      propertyId: "tags",
      referenceId: "",
    });
    expect(text(noReference)).toMatch(/referenceId: referenceId is required/);
    expect(hits(RECORDS)).toBe(before);
    expect(hits(`POST ${LINK}`)).toBe(0);

    const unknownTable = await call(conn.client, "build_create_record", {
      projectId: PROJECT,
      tableName: "invoices",
      data: { total: 1 },
    });
    expect(unknownTable.isError).toBe(true);
    expect(text(unknownTable)).toMatch(/HTTP 400, TABLE_NOT_FOUND/);
    expect(text(unknownTable)).toMatch(/Next step: .*build_get_database_schema/);
  });

  it("links and unlinks records through a many-to-many property, from either side", async () => {
    const customer = (
      await ok<{ results: Row[] }>(conn.client, "build_query_database", {
        projectId: PROJECT,
        tableName: "customers",
        queryOptions: { _limit: 1 },
      })
    ).results[0];
    const links = () => sandbox.build.project(PROJECT)!.recordLinks ?? [];

    const linked = await call(conn.client, "build_link_records", {
      projectId: PROJECT,
      tableName: "customers",
      recordId: customer._id,
      propertyId: "tags",
      referenceId: "tag_vip",
    });
    expect(linked.structuredContent).toMatchObject({ linked: true });
    expect(text(linked)).toBe(`Linked ${customer._id} to tag_vip through tags.`);
    expect(links()).toEqual([{ propertyId: "rel_tags", recordIds: [customer._id, "tag_vip"].sort() }]);
    // The same link seen from the tags side, by property id: still one junction row.
    await ok(conn.client, "build_link_records", {
      projectId: PROJECT,
      tableName: "tags",
      recordId: "tag_vip",
      propertyId: "rel_tags",
      referenceId: customer._id,
    });
    expect(links()).toHaveLength(1);

    // A DELETE with a JSON body: the body reaches the service (else it would answer MISSING_TABLE_NAME).
    const unlinked = await call(conn.client, "build_unlink_records", {
      projectId: PROJECT,
      tableName: "customers",
      recordId: customer._id,
      propertyId: "tags",
      referenceId: "tag_vip",
    });
    expect(unlinked.isError).toBeFalsy();
    expect(unlinked.structuredContent).toMatchObject({ unlinked: true });
    expect(links()).toEqual([]);
    const twice = await call(conn.client, "build_unlink_records", {
      projectId: PROJECT,
      tableName: "customers",
      recordId: customer._id,
      propertyId: "tags",
      referenceId: "tag_vip",
    });
    expect(twice.isError).toBeFalsy();
    expect(hits(`DELETE ${LINK}`)).toBe(2);

    // Not many-to-many: the service answers success and changes nothing.
    const order = (
      await ok<{ results: Row[] }>(conn.client, "build_query_database", {
        projectId: PROJECT,
        tableName: "orders",
        queryOptions: { _limit: 1 },
      })
    ).results[0];
    const ignored = await ok<{ linked: boolean }>(conn.client, "build_link_records", {
      projectId: PROJECT,
      tableName: "orders",
      recordId: order._id,
      propertyId: "customer",
      referenceId: customer._id,
    });
    expect(ignored.linked).toBe(true);
    expect(links()).toEqual([]);
  });
});
