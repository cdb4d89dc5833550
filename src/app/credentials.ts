/** The entries of a runtime's credentials that name its signed-in user (OAuth), not an upstream key. */
export const ISSUER = "@issuer";
export const SUBJECT = "@subject";

/** A tenant's upstream keys, by service, without the entries that name its user. */
export function identityOf(credentials: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(credentials).filter(([name]) => name.startsWith("@")));
}

export function upstreamKeys(credentials: Readonly<Record<string, string>> | undefined): Record<string, string> {
  return Object.fromEntries(Object.entries(credentials ?? {}).filter(([name]) => !name.startsWith("@")));
}
