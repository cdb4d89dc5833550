import type { JsonSchemaType, jsonSchemaValidator } from "@modelcontextprotocol/server";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/server/validators/ajv";

// The SDK's Ajv validator, made on the first form answer it checks. It lives here, on the tools'
// side (core/mcp/server.ts provides it to every instance, shell.ts), and not in the SDK's default
// (scripts/build.mjs leaves that out of the bundle), so a stdio start answers before Ajv is read.

let ajv: AjvJsonSchemaValidator | undefined;

export const ajvFormValidator: jsonSchemaValidator = {
  getValidator<T>(schema: JsonSchemaType) {
    ajv ??= new AjvJsonSchemaValidator();
    return ajv.getValidator<T>(schema);
  },
};
