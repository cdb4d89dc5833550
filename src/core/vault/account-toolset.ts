/**
 * The account tools' toolset (core/vault/account-tools.ts), and the name their hooks' deps go by:
 * the tenant's own linked keys, not a service's. Offered whenever keys are linked; no service of
 * the registry may take the name. Its own module, so the start-up path names it without loading
 * the tools.
 */
export const ACCOUNT_TOOLSET = "account";
