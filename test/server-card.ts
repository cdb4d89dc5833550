// The Server Card extension's published schema (vendored, pinned in test/unit/server-card.test.ts)
// as a check the unit and end-to-end tests share.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";

export const SERVER_CARD_SCHEMA_PATH = fileURLToPath(
  new URL("../scripts/server-card/server-card.schema.json", import.meta.url),
);

// ajv-formats is CommonJS: its default export arrives wrapped or not depending on the loader.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv2020,
) => Ajv2020;
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema(JSON.parse(readFileSync(SERVER_CARD_SCHEMA_PATH, "utf8")), "server-card");
const validate = ajv.compile({ $ref: "server-card#/$defs/ServerCard" });

/** The schema's complaints about a card, one line each ("/name must match pattern …"). */
export function cardProblems(card: unknown): string[] {
  return validate(card) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath || "/"} ${e.message}`);
}
