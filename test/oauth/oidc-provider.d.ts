// oidc-provider ships no types; the tests use its constructor, its node request handler, and what
// a consent page needs (the interaction's details, a grant, finishing the interaction).
declare module "oidc-provider" {
  import type { IncomingMessage, ServerResponse } from "node:http";
  interface Grant {
    addOIDCScope(scope: string): void;
    rejectOIDCScope(scope: string): void;
    addResourceScope(resource: string, scope: string): void;
    rejectResourceScope(resource: string, scope: string): void;
    save(): Promise<string>;
  }
  export default class Provider {
    constructor(issuer: string, configuration: unknown);
    proxy: boolean;
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    Grant: new (init: {
      accountId: string;
      clientId: string;
    }) => Grant;
    interactionDetails(
      req: IncomingMessage,
      res: ServerResponse,
    ): Promise<{ prompt: { name: string }; params: Record<string, unknown>; session?: { accountId: string } }>;
    interactionFinished(
      req: IncomingMessage,
      res: ServerResponse,
      result: unknown,
      options?: { mergeWithLastSubmission?: boolean },
    ): Promise<void>;
  }
}
