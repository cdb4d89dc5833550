/**
 * Sample calls of a service, for the tests that drive every tool, prompt and resource of every
 * registered service (the secret canary): each service says how its tools are called, so that a
 * new service goes through those tests with no edit to them. Loaded only by tests (the
 * declaration's `samples()`); the server never reads them.
 */

/** What one drive of the samples hands to the arguments that are not constants. */
export interface SampleRun {
  /** Unique to this drive ("cnry-s"): the ids a sample creates start with it. */
  readonly prefix: string;
  /** False on the second drive in one run: a call an upstream allows once a minute is refused there. */
  readonly first: boolean;
  /**
   * A secret the caller sends (a key, a token, a secret's value): the test watches for it in every
   * answer and log. `shape` is how the upstream wants it to start (`figd_`).
   */
  secret(name: string, shape?: string): string;
  /** The structured result of an earlier sample (by its `as`, else its tool), or undefined if it failed. */
  result<T = any>(key: string): T | undefined;
}

/** One call of one tool. */
export interface ToolSample {
  tool: string;
  /** Its arguments; undefined skips the call on this drive (it needs a result an earlier call lacked). */
  args(run: SampleRun): Record<string, unknown> | undefined;
  /** The name its result is kept under for later samples (default: the tool's name). */
  as?: string;
  /** Asks for progress notifications. */
  progress?: boolean;
  /** The call must fail, saying this: a refusal that still carries secrets, which must not leak. */
  fails?: RegExp;
  /** Every one of these appears in the answer's text or structured content. */
  shows?: RegExp[];
  /** What is wrong with a successful answer, or undefined: a check no pattern can say. */
  check?(answer: { text: string; structured: any }): string | undefined;
  /** The upstream allows it once a minute per account: on a second drive it may be refused, saying this. */
  limited?: RegExp;
  /** Only on the first drive (the upstream limits how often it may be asked: 10 a minute). */
  firstOnly?: boolean;
}

export interface ServiceSamples {
  /** In order: a later sample may use an earlier one's result. Every tool of the service appears. */
  tools: ToolSample[];
  /** Each prompt of the service, with the argument sets to get it with. */
  prompts?: Record<string, Array<Record<string, string>>>;
  /** Resources to read beyond the listed ones (a template's instances), from the drive's results. */
  resources?(run: SampleRun): string[];
}
