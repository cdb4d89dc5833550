import type { SimRequest } from "../../router.js";
import { fail } from "./routes.js";
import {
  DAY,
  SECRET_ENVIRONMENTS,
  given,
  isObject,
  type Attachment,
  type CreditLimits,
  type Json,
  type RunOptions,
  type SecretEnvironment,
} from "./state.js";

/** Request validation: pure functions that return clean input or throw with fail(). */

const MAX_FILES = 10;
const MAX_SECRETS = 50;
const PROJECT_ID_PATTERN = /^[a-z][a-z0-9-]*$/;
const MODELS = ["opus", "sonnet"];
const EFFORTS = ["low", "medium", "high", "xhigh"];

export function bodyOf(req: SimRequest): Json {
  if (req.body === undefined) return {};
  if (!isObject(req.body)) fail(400, "INVALID_JSON", "The request body must be a JSON object");
  return req.body;
}

export function validateProjectId(value: unknown): string {
  if (value === undefined || value === null || value === "") {
    fail(400, "MISSING_PROJECT_ID", "projectId is required");
  }
  if (typeof value !== "string") fail(400, "INVALID_PROJECT_NAME", "projectId must be a string");
  if (value.length < 4 || value.length > 35) {
    fail(400, "INVALID_PROJECT_NAME_LENGTH", "projectId must be between 4 and 35 characters");
  }
  if (!PROJECT_ID_PATTERN.test(value)) {
    fail(
      400,
      "INVALID_PROJECT_NAME",
      "projectId may contain only lowercase letters, digits and hyphens, and must start with a letter",
    );
  }
  return value;
}

/** The spec gives the limits (500 / 80) but not the codes; INVALID_DESCRIPTION/INVALID_LABEL are ours. */
export function validateDescriptionAndLabel(body: Json): { description: string; label?: string } {
  const { description, label } = body;
  if (given(description) && (typeof description !== "string" || description.length > 500)) {
    fail(400, "INVALID_DESCRIPTION", "description must be a string of at most 500 characters");
  }
  if (given(label) && (typeof label !== "string" || label.length > 80)) {
    fail(400, "INVALID_LABEL", "label must be a string of at most 80 characters");
  }
  return {
    description: typeof description === "string" ? description : "",
    label: typeof label === "string" && label.length > 0 ? label : undefined,
  };
}

function isPrivateHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, "").toLowerCase();
  if (host === "localhost" || host.endsWith(".localhost") || host.endsWith(".local") || host.endsWith(".internal")) {
    return true;
  }
  if (host.includes(":")) return host === "::1" || host === "::" || /^f[cd]/.test(host) || host.startsWith("fe80");
  const ipv4 = /^(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(host);
  if (!ipv4) return !host.includes(".");
  const [a, b] = [Number(ipv4[1]), Number(ipv4[2])];
  return (
    a === 0 ||
    a === 10 ||
    a === 127 ||
    (a === 169 && b === 254) ||
    (a === 172 && b >= 16 && b <= 31) ||
    (a === 192 && b === 168)
  );
}

function isPublicHttpUrl(value: unknown): boolean {
  if (typeof value !== "string") return false;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  return (url.protocol === "http:" || url.protocol === "https:") && !isPrivateHost(url.hostname);
}

/** Returns the decoded byte length, or undefined when the content is not base64. */
function base64Length(value: unknown): number | undefined {
  if (typeof value !== "string") return undefined;
  const stripped = value.replace(/^data:[^,]*;base64,/i, "").replace(/\s+/g, "");
  if (stripped.length === 0 || stripped.length % 4 === 1) return undefined;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(stripped)) return undefined;
  return Buffer.from(stripped, "base64").length;
}

export interface FileInput {
  name: string;
  imageDescription: string;
  url?: string;
  content?: string;
}

export function validateFiles(value: unknown): FileInput[] {
  if (!given(value)) return [];
  if (!Array.isArray(value) || !value.every(isObject)) {
    fail(400, "INVALID_FILES", "files must be an array of objects");
  }
  if (value.length > MAX_FILES) fail(400, "TOO_MANY_FILES", `At most ${MAX_FILES} files are allowed`);
  return value.map((entry, i) => validateFile(entry, i));
}

function validateFile(entry: Json, index: number): FileInput {
  const where = `files[${index}]`;
  if (typeof entry.name !== "string" || entry.name.trim() === "") {
    fail(400, "INVALID_FILE_NAME", `${where} needs a name`);
  }
  if (given(entry.url) === given(entry.content)) {
    fail(400, "INVALID_FILE_SOURCE", `${where} needs exactly one of url or content`);
  }
  if (given(entry.url) && !isPublicHttpUrl(entry.url)) {
    fail(400, "INVALID_FILE_URL", `${where}.url must be a public http(s) URL`);
  }
  if (given(entry.content) && base64Length(entry.content) === undefined) {
    fail(400, "INVALID_FILE_CONTENT", `${where}.content must be base64 (a data-URL prefix is accepted)`);
  }
  const description = entry.description ?? entry.imageDescription;
  return {
    name: entry.name,
    imageDescription: typeof description === "string" ? description : "",
    url: given(entry.url) ? (entry.url as string) : undefined,
    content: given(entry.content) ? (entry.content as string) : undefined,
  };
}

/** inputFiles of agent/start: url entries only. */
export function validateInputFiles(value: unknown): Attachment[] {
  if (!given(value)) return [];
  if (!Array.isArray(value) || !value.every(isObject)) {
    fail(400, "INVALID_FILES", "inputFiles must be an array of objects");
  }
  if (value.length > MAX_FILES) fail(400, "TOO_MANY_FILES", `At most ${MAX_FILES} files are allowed`);
  return value.map((entry, i) => {
    if (typeof entry.name !== "string" || entry.name.trim() === "") {
      fail(400, "INVALID_FILE_NAME", `inputFiles[${i}] needs a name`);
    }
    if (!isPublicHttpUrl(entry.url)) fail(400, "INVALID_FILE_URL", `inputFiles[${i}].url must be a public http(s) URL`);
    const description = entry.imageDescription ?? entry.description;
    return {
      name: entry.name,
      url: entry.url as string,
      imageDescription: typeof description === "string" ? description : "",
    };
  });
}

export interface SecretInput {
  secretName: string;
  secretValue: string;
  environment: SecretEnvironment;
}

export function validateSecretFields(entry: Json, where: string): SecretInput {
  const { secretName, secretValue, environment } = entry;
  if (typeof secretName !== "string" || secretName === "" || typeof secretValue !== "string" || secretValue === "") {
    fail(400, "MISSING_SECRET_FIELDS", `${where} needs secretName and secretValue`);
  }
  if (given(environment) && !SECRET_ENVIRONMENTS.includes(environment as SecretEnvironment)) {
    fail(400, "INVALID_SECRET_ENVIRONMENT", `${where}.environment must be development, production or both`);
  }
  return { secretName, secretValue, environment: given(environment) ? (environment as SecretEnvironment) : "both" };
}

export function validateSecrets(value: unknown): SecretInput[] {
  if (!given(value)) return [];
  if (!Array.isArray(value) || !value.every(isObject)) {
    fail(400, "INVALID_SECRETS", "secrets must be an array of objects");
  }
  if (value.length > MAX_SECRETS) fail(400, "TOO_MANY_SECRETS", `At most ${MAX_SECRETS} secrets are allowed`);
  const seen = new Set<string>();
  return value.map((entry, i) => {
    const where = `secrets[${i}]`;
    const { secretName } = entry;
    if (typeof secretName === "string" && seen.has(secretName)) {
      fail(400, "DUPLICATE_SECRET_NAME", `${where}: secretName ${secretName} appears twice`);
    }
    const secret = validateSecretFields(entry, where);
    seen.add(secret.secretName);
    return secret;
  });
}

export function validateCreditLimits(value: unknown): CreditLimits {
  const limits: CreditLimits = { maxDevelopmentCreditsPerMonth: null, maxInfrastructureCreditsPerMonth: 250 };
  if (!given(value)) return limits;
  if (!isObject(value)) fail(400, "INVALID_CREDIT_LIMITS", "creditLimits must be an object");
  for (const key of Object.keys(limits) as Array<keyof CreditLimits>) {
    if (!(key in value)) continue;
    const limit = value[key];
    if (limit !== null && (typeof limit !== "number" || !Number.isFinite(limit) || limit <= 0)) {
      fail(400, "INVALID_LIMIT", `creditLimits.${key} must be a positive number or null`);
    }
    limits[key] = limit as number | null;
  }
  return limits;
}

export function runOptions(body: Json): { options: RunOptions; warnings: string[] } {
  const warnings: string[] = [];
  const options: RunOptions = { model: "opus", effort: "high", fastMode: false };
  if (given(body.model)) {
    if (typeof body.model === "string" && MODELS.includes(body.model)) options.model = body.model;
    else warnings.push(`model ${JSON.stringify(body.model)} is not available; the run uses opus`);
  }
  if (given(body.effort)) {
    if (typeof body.effort === "string" && EFFORTS.includes(body.effort)) options.effort = body.effort;
    else
      warnings.push(
        `effort ${JSON.stringify(body.effort)} is not one of ${EFFORTS.join(", ")}; the run uses the default`,
      );
  }
  if (given(body.fastMode)) {
    if (typeof body.fastMode !== "boolean") warnings.push("fastMode must be a boolean; it was ignored");
    else if (body.fastMode && options.model === "sonnet")
      warnings.push("fastMode is available with opus only; it was ignored");
    else options.fastMode = body.fastMode;
  }
  return { options, warnings };
}

export function validHostname(value: unknown): string | undefined {
  if (typeof value !== "string") return undefined;
  const host = value.trim().toLowerCase().replace(/\.$/, "");
  const label = "[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?";
  const pattern = new RegExp(`^(?:${label}\\.)+[a-z]{2,63}$`);
  return host.length <= 253 && pattern.test(host) ? host : undefined;
}

/** Reads an integer query parameter; empty or absent means the default. */
export function intParam(
  query: URLSearchParams,
  name: string,
  fallback: number,
  min: number,
  max: number,
  code: string,
): number {
  const raw = query.get(name);
  if (raw === null || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max)
    fail(400, code, `${name} must be an integer between ${min} and ${max}`);
  return n;
}

/** createdFrom/createdTo: a full instant is used verbatim; a bare day is UTC, widened to its end for `to`. */
export function dateBound(query: URLSearchParams, name: string, endOfDay: boolean): number | undefined {
  const raw = query.get(name);
  if (raw === null || raw === "") return undefined;
  const bareDay = /^\d{4}-\d{2}-\d{2}$/.test(raw);
  const ms = bareDay ? Date.parse(`${raw}T00:00:00.000Z`) : Date.parse(raw);
  if (Number.isNaN(ms)) fail(400, "LIST_PROJECTS_ERROR", `${name} is not a valid date`);
  return bareDay && endOfDay ? ms + DAY - 1 : ms;
}
