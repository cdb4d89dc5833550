// Issue 29: no tool that can overwrite or drop user data is annotated non-destructive or runs
// without a confirmation. Checked from the declarations: the reference's overwriting and dropping
// operations are destructive, every destructive tool says what it destroys (which makes the call ask
// the user first, core/tools/tool.ts runBeforeHooks), and every other write is classified here.
import { describe, expect, it } from "vitest";
import { Egress } from "../../src/core/base/egress.js";
import { createLogger } from "../../src/core/base/logger.js";
import {
  annotationsFor,
  type CallContext,
  type ConfirmRequest,
  runBefore,
  runTool,
  type ToolDef,
  type ToolHost,
} from "../../src/core/tools/tool.js";
import { CreditGuard } from "../../src/services/builder/credits.js";
import { loadServices, SERVICES } from "../../src/services/registry.js";

/** Operations that overwrite or drop user data (project code, database contents, secrets, a repository). */
const OVERWRITES: Record<string, string> = {
  "POST …/github/connect":
    "§12: no shared history: totalum_to_github overwrites both branches, github_to_totalum replaces the code",
  "POST …/import": "§15: the target's existing data is always dropped",
  "DELETE /projects/{projectId}": "§3: the project, its database and deployments",
  "DELETE …/database/records/{recordId}": "§10: a record",
  "PATCH …/database/records/{recordId}": "§10: the fields given replace the old values",
  "DELETE …/database/records/{recordId}/link": "§10: a link between records",
  "DELETE …/secrets/{secretId}": "§8: a secret, whose value is never returned",
};

/** Every other write, and why it overwrites or drops no user data. */
const NOT_DESTRUCTIVE: Record<string, string> = {
  "POST …/agent/start": "adds a run; its changes are a version (§7)",
  "POST …/agent/stop": "stops a run",
  "PATCH …/credit-limits": "a setting",
  "POST …/database/records": "adds a record",
  "POST …/database/records/{recordId}/link": "adds a link",
  "POST …/figma/connect": "stores a token",
  "GET …/source-code": "a paid read",
  "POST …/files/upload": "adds a file",
  "PUT …/files/content": "versioned: each write commits a version (§7, §11), recoverable",
  "POST …/rebuild": "builds what is there",
  "POST …/github/pull": "versioned: a pull creates a version (§12), recoverable",
  "POST /project-groups": "adds a group",
  "PATCH /project-groups/{groupId}": "a label",
  "POST …/deployments/deploy": "publishes the current version",
  "POST …/versions/{versionId}/recover": "versioned: the current state is a version; a recovery makes one (§7)",
  "POST …/agent/server/start-or-restart": "restarts the sandbox",
  "POST …/secrets": "adds a secret (a duplicate name is not stated, §8)",
  "PUT …/domain": "a setting",
  "PATCH /projects/{projectId}": "label, description, group",
  "POST /projects": "adds a project",
  "POST /projects/launch": "adds a project",
  "POST …/export": "a copy; the source is untouched",
  "PUT /webhooks": "adds a subscription",
};

const tools = (await loadServices(SERVICES)).flatMap((s) => s.tools() as ToolDef<any, any, any>[]);
const byUpstream = (upstream: string) => tools.filter((t) => t.upstream === upstream);
const destructive = (t: ToolDef<any, any, any>) => annotationsFor(t).destructiveHint === true;

describe("tools that overwrite or drop user data", () => {
  it("are annotated destructive and declare what they destroy, for every such operation of the reference", () => {
    for (const upstream of Object.keys(OVERWRITES)) {
      const found = byUpstream(upstream);
      expect(found.length, upstream).toBeGreaterThan(0);
      for (const t of found) {
        expect(destructive(t), `${t.name} (${upstream})`).toBe(true);
        expect(t.destroys, `${t.name} says what it destroys`).toBeTypeOf("function");
      }
    }
  });

  it("every destructive tool asks first: it declares what it destroys", () => {
    const silent = tools.filter((t) => destructive(t) && !t.destroys).map((t) => t.name);
    expect(silent).toEqual([]);
    expect(tools.filter(destructive).length).toBeGreaterThanOrEqual(Object.keys(OVERWRITES).length);
  });

  it("every other builder write is classified as one that overwrites nothing", () => {
    const writes = tools.filter((t) => t.name.startsWith("build_") && t.kind !== "read" && !destructive(t));
    const unclassified = writes.filter((t) => !(String(t.upstream) in NOT_DESTRUCTIVE)).map((t) => t.name);
    expect(unclassified).toEqual([]);
    expect(writes.length).toBeGreaterThan(10);
  });
});

const egress = new Egress();
const logger = createLogger("error", egress);

/** A call whose user answers `answer`; the questions asked are kept. */
function caller(answer: "approved" | "declined" | "unsupported") {
  const asked: ConfirmRequest[] = [];
  const ctx = {
    signal: new AbortController().signal,
    progress: async () => undefined,
    logger,
    secret: () => undefined,
    confirm: async (r: ConfirmRequest) => {
      asked.push(r);
      return answer;
    },
    resourcesChanged: () => undefined,
  } as unknown as CallContext;
  return { ctx, asked };
}

const tool = (name: string) => tools.find((t) => t.name === name)!;
const text = (r: { content: Array<{ type: string; text?: string }> }) => r.content.map((c) => c.text ?? "").join("\n");

describe("the confirmation of what a tool destroys", () => {
  const sent: string[] = [];
  const client = {
    github: {
      connect: async (_p: string, body: { repositoryFullName: string }) => {
        sent.push(body.repositoryFullName);
        return {
          connected: true,
          repositoryFullName: body.repositoryFullName,
          syncAction: "push",
          repoHasContent: true,
        };
      },
    },
    getProject: async (projectId: string) => ({ projectId, agentServerStatus: "Active" }),
    getAccount: async () => ({ credits: 100 }),
    getCreditCosts: async () => ({ creditCosts: { IMPORT_PROJECT: 6 } }),
  };
  const host = (policy: "always" | "never"): ToolHost => ({
    egress,
    advice: new Map(),
    deps: () => ({ client, guard: new CreditGuard(client as never, policy) }),
  });
  const connect = {
    projectId: "shop",
    token: "github_pat_abc",
    repositoryFullName: "acme/site",
  };

  it("build_connect_github names the repository and branches it may overwrite; a decline sends nothing", async () => {
    const { ctx, asked } = caller("declined");
    const result = await runTool(tool("build_connect_github"), connect, ctx, host("never"));
    expect(asked).toHaveLength(1);
    expect(asked[0].message).toMatch(/acme\/site.*main and develop are overwritten/s);
    expect(result.isError).toBe(true);
    expect(text(result)).toMatch(/^Not done: the user did not approve this/);
    expect(sent).toEqual([]);
    const other = caller("declined");
    await runBefore(
      tool("build_connect_github"),
      { ...connect, syncDirection: "github_to_totalum" },
      other.ctx,
      host("never"),
    );
    expect(other.asked[0].message).toMatch(/project's code is replaced by the repository's/);
  });

  it("build_connect_github's result says what was overwritten", async () => {
    const { ctx } = caller("approved");
    const result = await runTool(tool("build_connect_github"), connect, ctx, host("never"));
    expect(result.isError).toBeFalsy();
    expect(sent).toEqual(["acme/site"]);
    expect(result.structuredContent).toMatchObject({
      overwritten: expect.stringMatching(/main and develop of acme\/site/),
    });
    expect(text(result)).toMatch(/Overwritten: branches main and develop of acme\/site/);
  });

  it("build_import_project asks once, loss named with the price, even when spending needs no question", async () => {
    const input = { projectId: "fresh", importCode: "shop-export-project-0123456789abcdef0123456789abcdef.zip" };
    const spending = caller("declined");
    const refused = await runBefore(tool("build_import_project"), input, spending.ctx, host("always"));
    expect(spending.asked).toHaveLength(1);
    expect(spending.asked[0].message).toMatch(/All existing data of project fresh .* is dropped[\s\S]*6 credits/);
    expect(spending.asked[0].binding).toMatchObject({ destroys: expect.any(String), cost: 6 });
    expect(refused?.isError).toBe(true);
    const free = caller("declined");
    expect((await runBefore(tool("build_import_project"), input, free.ctx, host("never")))?.isError).toBe(true);
    expect(free.asked).toHaveLength(1);
    expect(free.asked[0].message).toMatch(/All existing data of project fresh/);
    // A client that cannot be asked has the destructive annotation instead (its host asks).
    expect(
      await runBefore(tool("build_import_project"), input, caller("unsupported").ctx, host("never")),
    ).toBeUndefined();
  });
});
