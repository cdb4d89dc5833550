/** The build service's paging headers: X-Total-Count, X-Limit, X-Skip, and X-Has-More where sent. */
export function pagingHeaders(headers: Record<string, string | string[] | undefined>) {
  const header = (name: string) => {
    const v = headers[name];
    return Array.isArray(v) ? v[0] : v;
  };
  const number = (name: string) => {
    const value = Number(header(name));
    return header(name) !== undefined && Number.isFinite(value) ? value : undefined;
  };
  const hasMore = header("x-has-more");
  return {
    total: number("x-total-count"),
    limit: number("x-limit"),
    skip: number("x-skip"),
    hasMore: hasMore === undefined ? undefined : hasMore === "true",
  };
}
