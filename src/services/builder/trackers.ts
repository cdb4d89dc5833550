import type { Phase } from "../../core/upstream/wait.js";
import { judge, lastAgentMessage, type Kind, type Seen } from "./completion.js";
import type { AgentStatus, ConversationMessage } from "./schemas.js";

export { currentBatch } from "./completion.js";

/**
 * build_wait's trackers: what ends each kind of wait is completion.ts's `judge` (shared with the
 * build console view); a tracker only remembers what it has seen during one wait.
 */
export interface Verdict {
  phase: Phase;
  message?: string;
  line: string;
}

type Tracker<T> = (state: T) => Verdict;

/** The tracker of one wait for `kind` of work started at `since` (ms; undefined: take the first state as it is). */
export function tracker<T>(kind: Kind, since: number | undefined): Tracker<T> {
  let seen: Seen = {};
  return (state) => {
    const j = judge(kind, state, seen, since, Date.now());
    seen = j.seen;
    return j.verdict;
  };
}

export function latestAgentMessage(conversation: ConversationMessage[] | undefined): ConversationMessage | undefined {
  return lastAgentMessage(conversation) as ConversationMessage | undefined;
}

/**
 * The next step after a failed wait: a run stopped at its time budget is billed flat, so a blind
 * retry costs as much again.
 */
export function failureNextStep(until: string, state: unknown): string {
  const last =
    until === "agent" ? latestAgentMessage((state as AgentStatus | undefined)?.realtimeConversation) : undefined;
  if (last?.messageType === "limit-reached") {
    return (
      "the run used its whole time budget and was billed a flat 50 or 60 credits; " +
      "a retry is billed the same way if it runs as long: split the work into smaller prompts first " +
      "(build_get_conversation shows what was done)."
    );
  }
  if (until === "agent")
    return "failed runs are refunded; read build_get_conversation for the reason, then fix the prompt and try again.";
  return "read build_get_conversation or build_get_logs for details, then fix and try again.";
}
