import { isObject } from "../base/json.js";
import { type RequestInfo, UpstreamError } from "./upstream-error.js";

/** What an upstream's answer reports as its failure: the upstream's own code, message and detail. */
interface ReplyFailure {
  code?: string;
  message?: string;
  details?: Record<string, unknown>;
}

/**
 * How a service's upstream shapes its JSON answers: where the data is, and how a failure is told.
 * A service whose upstream answers in a shape of its own passes one; the two shapes seen so far are
 * presets (`REPLY_FORMATS`), named by a string.
 */
export interface ReplyFormat {
  /** The failure the answer reports, or undefined when it reports none. */
  failure(json: unknown): ReplyFailure | undefined;
  /** The answer's data, or undefined when the answer is not in this shape (NON_JSON_RESPONSE). */
  data(json: unknown): { data: unknown } | undefined;
  /**
   * The credits this successful answer says were spent (switchboard.credits.spent, and the CLIENT
   * span's attribute): only the service knows which answers report spend, and how. None without.
   */
  credits?(answer: { method: string; path: string; body?: unknown; data: unknown }): number | undefined;
}

/** The `data` member of an object answer. */
const dataMember = (json: unknown) => (isObject(json) && "data" in json ? { data: json.data } : undefined);

export const REPLY_FORMATS: Readonly<Record<"errors-data" | "ok-data", ReplyFormat>> = {
  /** `{ errors: null, data }`, or `{ errors: { errorCode, errorMessage, errorDetails } }` (the build service). */
  "errors-data": {
    failure(json) {
      if (!isObject(json)) return undefined;
      const errors = json.errors;
      if (errors === null || errors === undefined) return undefined;
      if (isObject(errors))
        return {
          code: str(errors.errorCode),
          message: str(errors.errorMessage),
          details: isObject(errors.errorDetails) ? errors.errorDetails : undefined,
        };
      return { message: String(errors) };
    },
    data: dataMember,
  },
  /** `{ ok: true, data }`, or `{ ok: false, error }` in one of the common shapes (their specs show none). */
  "ok-data": {
    failure(json) {
      if (!isObject(json) || json.ok !== false) return undefined;
      const e = json.error;
      if (isObject(e)) return { code: str(e.code) ?? str(e.errorCode), message: str(e.message) ?? str(e.errorMessage) };
      return { code: str(json.code), message: str(e) ?? str(json.message) };
    },
    data: dataMember,
  },
};

/** Which reply format an upstream answers in: a preset's name, or the service's own. */
export type Envelope = keyof typeof REPLY_FORMATS | ReplyFormat;

/** How a service that takes `Authorization: Bearer <key>` and answers `{ ok, data }` is reached. */
export function bearerAuth(apiKey: string | undefined): { headers: Record<string, string>; envelope: Envelope } {
  return { headers: { authorization: `Bearer ${apiKey ?? ""}` }, envelope: "ok-data" };
}

/** One upstream answer as read off the wire, and what reading it needs to know. */
export interface RawReply {
  service: string;
  status: number;
  contentType: string;
  text: string;
  where: RequestInfo;
  format: ReplyFormat;
  /** Scrubs known secrets from the text before a snippet of it goes into a message. */
  redact?: (text: string) => string;
}

/**
 * The data of an answer in its service's reply format, or the UpstreamError it tells of: a 401, the
 * format's failure, a status outside 2xx, text that is not JSON, or JSON in another shape.
 */
export function readReply(reply: RawReply): UpstreamError | { data: unknown } {
  const { service, status, contentType, text, where, format } = reply;
  /** A short, flattened piece of an unexpected body, scrubbed of known secrets before it is cut. */
  const cut = (body: string) => snippet(reply.redact ? reply.redact(body) : body);
  let json: unknown;
  try {
    json = text.length ? JSON.parse(text) : undefined;
  } catch {
    const kind = contentType.includes("json")
      ? "malformed JSON"
      : `a non-JSON body (${contentType || "no content type"})`;
    if (status >= 200 && status < 300) {
      return new UpstreamError(
        service,
        status,
        "NON_JSON_RESPONSE",
        `The ${service} service answered HTTP ${status} with ${kind}.`,
        where,
      );
    }
    return new UpstreamError(
      service,
      status,
      "HTTP_ERROR",
      `The ${service} service answered HTTP ${status} with ${kind}: ${cut(text)}`,
      where,
    );
  }
  if (status === 401) {
    const body = isObject(json) ? json : {};
    const message =
      str(body.error) ??
      (isObject(body.error) ? str(body.error.message) : undefined) ??
      str(body.message) ??
      "Unauthorized";
    return new UpstreamError(service, 401, "UNAUTHORIZED", message, where);
  }
  const failure = isObject(json) ? format.failure(json) : undefined;
  if (failure || status < 200 || status >= 300) {
    const code = failure?.code ?? `HTTP_${status}`;
    const message = failure?.message ?? `The ${service} service answered HTTP ${status}.`;
    return new UpstreamError(service, status, code, message, where, false, undefined, failure?.details);
  }
  const answer = format.data(json);
  if (!answer) {
    return new UpstreamError(
      service,
      status,
      "NON_JSON_RESPONSE",
      `The ${service} service answered without the expected envelope: ${cut(text)}`,
      where,
    );
  }
  return { data: answer.data };
}

function str(v: unknown): string | undefined {
  return typeof v === "string" && v.length > 0 ? v : undefined;
}

function snippet(text: string): string {
  const flat = text
    .replace(/<[^>]*>/g, " ")
    .replace(/\s+/g, " ")
    .trim();
  return flat.length > 160 ? `${flat.slice(0, 160)}…` : flat || "(empty)";
}
