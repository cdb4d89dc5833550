import { isObject } from "../../core/base/json.js";
import { REPLY_FORMATS, type ReplyFormat } from "../../core/upstream/upstream.js";

/** The requests the build service charges a flat price for, by their credit-cost key (reference §1.7). */
const PRICED: ReadonlyArray<[method: string, route: RegExp, key: string]> = [
  ["POST", /\/projects$/, "CREATE_PROJECT"],
  ["POST", /\/projects\/launch$/, "CREATE_PROJECT"],
  ["POST", /\/deployments\/deploy$/, "CREATE_DEPLOYMENT"],
  ["POST", /\/agent\/server\/start-or-restart$/, "START_SERVER"],
  ["GET", /\/source-code$/, "GET_SOURCE_CODE"],
  ["POST", /\/versions\/[^/]+\/recover$/, "RECOVER_VERSION"],
  ["POST", /\/files\/upload$/, "UPLOAD_FILE"],
  ["PUT", /\/domain$/, "ADD_CUSTOM_DOMAIN"],
  ["POST", /\/export$/, "EXPORT_PROJECT"],
  ["POST", /\/import$/, "IMPORT_PROJECT"],
  ["PUT", /\/files\/content$/, "UPDATE_FILE"],
  ["POST", /\/rebuild$/, "REBUILD_PROJECT"],
];

/** Prompts followed at once, at most: the oldest is forgotten (its credits then go uncounted). */
const MAX_FOLLOWED = 1000;
/** A prompt started by a request of this process, its start time not yet read. */
const STARTED = Symbol("started here");

/**
 * The build service's replies, with what each says was spent (switchboard.credits.spent): the flat
 * price of a priced request that succeeded (from the credit-cost table the guard read before
 * sending it; a launch adds UPLOAD_FILE per inline file), and an agent prompt's `creditsSpent` once,
 * when this process sees that prompt go from running (or started here) to done. Every poll of a
 * finished prompt repeats its creditsSpent: counting each answer would count it many times.
 * Auto-started servers, infrastructure credits and a prompt that ends between two polls of another
 * replica are not counted.
 */
export function buildReplies(price: (key: string) => number | undefined): ReplyFormat {
  const prompts = new Map<string, unknown>();
  const follow = (statusPath: string, startedAt: unknown) => {
    prompts.delete(statusPath);
    prompts.set(statusPath, startedAt);
    if (prompts.size > MAX_FOLLOWED) prompts.delete(prompts.keys().next().value as string);
  };
  return {
    ...REPLY_FORMATS["errors-data"],
    credits({ method, path, body, data }) {
      if (method === "GET" && path.endsWith("/agent/status")) {
        if (!isObject(data)) return undefined;
        if (data.status === "init") {
          if (prompts.get(path) !== data.startedAt) follow(path, data.startedAt);
          return undefined;
        }
        const seen = prompts.get(path);
        if (data.status !== "done" || seen === undefined) return undefined;
        prompts.delete(path);
        const ours = seen === STARTED || seen === data.startedAt;
        return ours && typeof data.creditsSpent === "number" ? data.creditsSpent : undefined;
      }
      if (method === "POST" && path.endsWith("/agent/start")) follow(path.replace(/start$/, "status"), STARTED);
      const priced = PRICED.find(([m, route]) => m === method && route.test(path));
      if (!priced) return undefined;
      let spent = price(priced[2]) ?? 0;
      if (priced[1].source.includes("launch")) {
        const files = isObject(body) && Array.isArray(body.files) ? body.files : [];
        spent += files.filter((f) => isObject(f) && f.content !== undefined).length * (price("UPLOAD_FILE") ?? 0);
        const id = isObject(data) && typeof data.projectId === "string" ? data.projectId : undefined;
        const started = isObject(data) && isObject(data.agent) && data.agent.started === true;
        if (id && started) follow(`${path.replace(/launch$/, encodeURIComponent(id))}/agent/status`, STARTED);
      }
      return spent || undefined;
    },
  };
}
