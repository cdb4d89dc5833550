import {
  type JsonSchemaType,
  type jsonSchemaValidator,
  McpServer,
  SUPPORTED_PROTOCOL_VERSIONS,
  type ServerCapabilities,
  type ServerContext,
} from "@modelcontextprotocol/server";
import { CACHE_HINTS, MODERN_REVISION, type Era } from "./era.js";

// What a server instance is before its tools, resources and prompts are registered: enough to
// answer `initialize` (or `server/discover`). Kept apart from server.ts, whose imports (tools,
// tasks, upstream) a stdio start loads only after that first answer (core/stdio/serve.ts).

export const TASKS_EXTENSION = "io.modelcontextprotocol/tasks";

/** What the capabilities depend on: some tool can run as a task; some resource completes its arguments. */
interface CapabilityFacts {
  tasks: boolean;
  completions: boolean;
}

export interface ServerShell extends CapabilityFacts {
  info: { name: string; version: string; title: string };
  instructions: string;
  /** Checks a confirmation's signed state (the SDK's requestState hook). */
  verifyRequestState(state: string, ctx: ServerContext): unknown;
  /** Checks a 2025 client's answer to a confirmation form against the form's schema (the SDK asks synchronously). */
  formValidator: jsonSchemaValidator;
}

export function serverCapabilities(facts: CapabilityFacts, era: Era): ServerCapabilities {
  return {
    logging: {},
    tools: { listChanged: true },
    resources: { subscribe: true, listChanged: true },
    prompts: { listChanged: true },
    // Declared here, not left to the SDK (it adds it when a resource with completions registers),
    // so that an instance that registers no resource advertises the same capabilities.
    ...(facts.completions ? { completions: {} } : {}),
    ...(facts.tasks && era === "legacy" ? { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } } : {}),
    ...(facts.tasks && era === "modern" ? { extensions: { [TASKS_EXTENSION]: {} } } : {}),
  } as ServerCapabilities;
}

/**
 * A form validator for an instance made before Ajv is read (a stdio start answers first): it
 * checks with what `loaded` returns once the tools' modules are in (core/mcp/form-validator.ts).
 * Only a tool sends a form, so by the time an answer is checked it is there.
 */
export function formValidatorWhenLoaded(loaded: () => jsonSchemaValidator | undefined): jsonSchemaValidator {
  return {
    getValidator<T>(schema: JsonSchemaType) {
      const validator = loaded();
      if (!validator) throw new Error("no JSON Schema validator yet: the server's tools are not loaded");
      return validator.getValidator<T>(schema);
    },
  };
}

/** An instance with its identity, instructions and capabilities, and nothing registered yet. */
export function newMcpServer(shell: ServerShell, era: Era): McpServer {
  return new McpServer(shell.info, {
    instructions: shell.instructions,
    capabilities: serverCapabilities(shell, era),
    cacheHints: CACHE_HINTS,
    jsonSchemaValidator: shell.formValidator,
    requestState: { verify: (state, ctx) => shell.verifyRequestState(state, ctx) as never },
    // A 2026-07-28 instance lists the revision itself, so that connecting it to the SDK's per-request
    // transport binds it (the lean path, http/modern.ts); createMcpHandler adds it the same way.
    ...(era === "modern" ? { supportedProtocolVersions: [...SUPPORTED_PROTOCOL_VERSIONS, MODERN_REVISION] } : {}),
  });
}
