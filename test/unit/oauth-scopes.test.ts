import { describe, expect, it } from "vitest";
import { discoveryUrls } from "../../src/core/auth/issuer.js";
import { ResourceServer } from "../../src/core/auth/resource-server.js";
import { grantedScopes, scopeForKind, scopesForBody } from "../../src/core/auth/scopes.js";

const toolScope = (name: string) =>
  ({
    build_get_account: scopeForKind("read"),
    build_update_project: scopeForKind("write"),
    build_delete_project: scopeForKind("destructive"),
    build_deploy: scopeForKind("spend"),
  })[name];

describe("OAuth scopes and challenges", () => {
  it("maps each kind of tool, and resources and prompts, to one scope; plumbing needs none", () => {
    const call = (name: string) => ({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name } });
    expect(scopesForBody(call("build_get_account"), toolScope)).toEqual(["switchboard:read"]);
    expect(scopesForBody(call("build_update_project"), toolScope)).toEqual(["switchboard:write"]);
    expect(scopesForBody(call("build_delete_project"), toolScope)).toEqual(["switchboard:write"]);
    expect(scopesForBody(call("build_deploy"), toolScope)).toEqual(["switchboard:spend"]);
    expect(scopesForBody(call("no_such_tool"), toolScope)).toEqual(["switchboard:read"]);
    expect(scopesForBody({ method: "resources/read", params: { uri: "build://account" } }, toolScope)).toEqual([
      "switchboard:read",
    ]);
    expect(scopesForBody({ method: "prompts/get", params: { name: "x" } }, toolScope)).toEqual(["switchboard:read"]);
    expect(scopesForBody({ method: "subscriptions/listen", params: {} }, toolScope)).toEqual(["switchboard:read"]);
    for (const method of ["initialize", "tools/list", "tasks/get", "notifications/initialized", "ping"])
      expect(scopesForBody({ method }, toolScope)).toEqual([]);
    // A 2025 batch needs every scope any of its messages needs.
    expect(scopesForBody([call("build_get_account"), call("build_deploy")], toolScope).sort()).toEqual([
      "switchboard:read",
      "switchboard:spend",
    ]);
  });

  it("reads scope (a string) and scp (a string or a list) from token claims", () => {
    expect(grantedScopes({ scope: "openid switchboard:read" })).toEqual(["openid", "switchboard:read"]);
    expect(grantedScopes({ scp: ["switchboard:read", "switchboard:spend"] })).toEqual([
      "switchboard:read",
      "switchboard:spend",
    ]);
    expect(grantedScopes({ scp: "switchboard:write" })).toEqual(["switchboard:write"]);
    expect(grantedScopes({})).toEqual([]);
  });

  it("asks in a step-up for the scopes held plus the one missing, with the metadata URL", () => {
    const server = new ResourceServer({
      publicUrl: "https://mcp.example.com/mcp",
      issuers: ["https://idp.example.com"],
    });
    expect(server.metadataUrl).toBe("https://mcp.example.com/.well-known/oauth-protected-resource/mcp");
    const identity = {
      issuer: "https://idp.example.com",
      subject: "u",
      scopes: ["openid", "switchboard:read"],
      expiresAt: 0,
    };
    expect(server.authorize(identity, ["switchboard:read"])).toBeUndefined();
    const refusal = server.authorize(identity, ["switchboard:spend"])!;
    expect(refusal.status).toBe(403);
    expect(refusal.headers["www-authenticate"]).toMatch(
      new RegExp(
        /^Bearer error="insufficient_scope", scope="switchboard:read switchboard:spend", /.source +
          /resource_metadata="https:\/\/mcp\.example\.com\/\.well-known\/oauth-protected-resource\/mcp"/.source,
      ),
    );
    expect(server.metadataFor("/.well-known/oauth-protected-resource")).toMatchObject({
      resource: "https://mcp.example.com/mcp",
      authorization_servers: ["https://idp.example.com"],
    });
    expect(server.metadataFor("/.well-known/oauth-protected-resource/other")).toBeUndefined();
  });

  it("discovers an issuer with a path by RFC 8414 path insertion first, then OpenID Connect", () => {
    expect(discoveryUrls("https://kc.example.com/realms/acme")).toEqual([
      "https://kc.example.com/.well-known/oauth-authorization-server/realms/acme",
      "https://kc.example.com/realms/acme/.well-known/openid-configuration",
      "https://kc.example.com/.well-known/openid-configuration/realms/acme",
    ]);
    expect(discoveryUrls("https://tenant.auth0.com/")).toEqual([
      "https://tenant.auth0.com/.well-known/oauth-authorization-server",
      "https://tenant.auth0.com/.well-known/openid-configuration",
    ]);
  });
});
