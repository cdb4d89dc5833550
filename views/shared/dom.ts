/**
 * Tiny DOM builders. Strings always become text nodes; there is no way to pass markup, and
 * attributes that could run code or inject styles are refused.
 */

type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, string | number | boolean | null | undefined>;

const SVG_NS = "http://www.w3.org/2000/svg";
const FORBIDDEN = /^(on|style$|srcdoc$|innerhtml$|outerhtml$)/i;

function setAttrs(node: Element, attrs: Attrs | undefined): void {
  if (!attrs) return;
  for (const [name, value] of Object.entries(attrs)) {
    if (FORBIDDEN.test(name)) throw new Error(`attribute ${name} is not allowed`);
    if (value === null || value === undefined || value === false) continue;
    node.setAttribute(name, value === true ? "" : String(value));
  }
}

function append(node: Node, children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    node.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
  }
}

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs?: Attrs,
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  setAttrs(node, attrs);
  append(node, children);
  return node;
}

export function s<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs?: Attrs,
  ...children: Child[]
): SVGElementTagNameMap[K] {
  const node = document.createElementNS(SVG_NS, tag) as SVGElementTagNameMap[K];
  setAttrs(node, attrs);
  append(node, children);
  return node;
}

export function replaceChildren(node: Node, ...children: Child[]): void {
  while (node.firstChild) node.removeChild(node.firstChild);
  append(node, children);
}

/** Runs fn at most once per animation frame, with the latest arguments. */
export function perFrame<A extends unknown[]>(fn: (...args: A) => void): (...args: A) => void {
  let pending: A | null = null;
  return (...args: A) => {
    const scheduled = pending !== null;
    pending = args;
    if (scheduled) return;
    requestAnimationFrame(() => {
      const latest = pending!;
      pending = null;
      fn(...latest);
    });
  };
}
