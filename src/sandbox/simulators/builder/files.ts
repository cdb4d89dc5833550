import type { SimRequest } from "../../router.js";
import type { BuildContext } from "./context.js";
import { chargeProject } from "./credits.js";
import { fail, type BuildRoutes } from "./routes.js";
import { MINUTE, SANDBOX_APPS_DOMAIN, iso, sha1, type SimProject, type SourceTree } from "./state.js";
import { bodyOf } from "./validation.js";
import { setVersionDiff } from "./diffs.js";
import { addVersion } from "./versions.js";

/**
 * Source code and files (reference §11): the source archive, agent uploads, the file tree, reading
 * and writing one file. A project whose agent never ran has no sandbox: no files, commitSha null,
 * writes answer NO_SANDBOX. Once it has one, its files start as a small Next.js app (made on first
 * use). Every write is committed (a new commitSha and a version) and, when GitHub is connected,
 * pushed; the running app keeps its old build until a rebuild (rebuild.ts).
 */

const KB = 1024;
const MB = 1024 * KB;
const MAX_READ = 1 * MB;
const MAX_WRITE = 512 * KB;
const MAX_UPLOAD = 12 * MB;
const TREE_DEFAULT = 2000;
const TREE_MAX = 5000;
/** PROJECT_TOO_LARGE above this many tracked files (the service's threshold is not stated). */
const MAX_LISTABLE_FILES = 20_000;
export const EXCLUDED = ["node_modules", ".next", ".git", "dist"];

export type AccountPlan = "paid" | "free";
const plans = new WeakMap<BuildContext, AccountPlan>();

/** The account's plan: paid unless a test switches it (writes need a paid plan; rebuild limits differ). */
export function accountPlan(ctx: BuildContext): AccountPlan {
  return plans.get(ctx) ?? "paid";
}
export function setAccountPlan(ctx: BuildContext, plan: AccountPlan): void {
  plans.set(ctx, plan);
}

export function registerFileRoutes(ctx: BuildContext, routes: BuildRoutes): void {
  routes.onProject("GET", "/source-code", (p) => sourceCode(ctx, p));
  routes.onProject("POST", "/files/upload", (p, req) => upload(ctx, p, req));
  routes.onProject("GET", "/files/tree", (p, req) => tree(ctx, p, req.query));
  routes.onProject("GET", "/files/content", (p, req) => readFile(ctx, p, req.query.get("path")));
  routes.onProject("PUT", "/files/content", (p, req) => writeFile(ctx, p, req));
}

/** A sandbox exists once the agent has run (or anything else made a version). */
export function hasSandbox(p: SimProject): boolean {
  return p.run !== null || p.versions.length > 1;
}

/** The project's source, made on first use; the template arrives with the sandbox. */
export function sourceOf(p: SimProject): SourceTree {
  p.source ??= { files: new Map(), seeded: false, uploads: [] };
  if (!p.source.seeded && hasSandbox(p)) {
    for (const [path, content] of Object.entries(template(p))) p.source.files.set(path, Buffer.from(content));
    p.source.files.set("public/favicon.ico", Buffer.from([0, 0, 1, 0, 1, 0, 16, 16, 0, 0, 1, 0, 32, 0, 0x68, 4, 0, 0]));
    // A clip over the 1 MB read limit: reading it answers FILE_TOO_LARGE.
    p.source.files.set("public/intro.mp4", Buffer.alloc(MAX_READ + 4096, 7));
    p.source.seeded = true;
  }
  return p.source;
}

/** HEAD: the latest version's commit, or null while the project has no sandbox (nothing committed). */
function headSha(p: SimProject): string | null {
  return sourceOf(p).seeded ? (p.versions[p.versions.length - 1]?.commitSha ?? null) : null;
}

/**
 * Commits files: a version (its commitSha is the new HEAD, its diff the real change); pushed to
 * develop when GitHub is connected.
 */
export function commitFiles(
  ctx: BuildContext,
  p: SimProject,
  changes: Map<string, Buffer>,
  message: string,
  at: number,
): string {
  const source = sourceOf(p);
  const diff = [...changes].map(([path, bytes]) => fileDiff(path, source.files.get(path), bytes)).join("");
  for (const [path, bytes] of changes) source.files.set(path, bytes);
  const version = addVersion(ctx, p, at, `Version ${p.versions.length + 1}`, message, "");
  setVersionDiff(version, diff);
  p.lastModifiedAt = at;
  const sha = version.commitSha;
  ctx.log(p, at, `[git] ${sha.slice(0, 7)} ${message}`);
  if (p.github?.link)
    ctx.log(p, at, `[github] Pushed ${sha.slice(0, 7)} to ${p.github.link.repositoryFullName} (develop)`);
  return sha;
}

/** A whole-file unified diff (the simulator does not compute minimal hunks). */
function fileDiff(path: string, before: Buffer | undefined, after: Buffer): string {
  const id = (b: Buffer | undefined) => (b ? sha1(b.toString("base64")).slice(0, 7) : "0000000");
  const mode = before ? "" : "new file mode 100644\n";
  const head = `diff --git a/${path} b/${path}\n${mode}index ${id(before)}..${id(after)}\n`;
  if ([before, after].some((b) => b?.subarray(0, 8 * KB).includes(0)))
    return `${head}Binary files ${before ? `a/${path}` : "/dev/null"} and b/${path} differ\n`;
  const lines = (b: Buffer | undefined) => (b?.length ? b.toString("utf8").replace(/\n$/, "").split("\n") : []);
  const old = lines(before);
  const now = lines(after);
  const hunk = `@@ -${old.length ? 1 : 0},${old.length} +${now.length ? 1 : 0},${now.length} @@\n`;
  const body = old.map((l) => `-${l}\n`).join("") + now.map((l) => `+${l}\n`).join("");
  return `${head}--- ${before ? `a/${path}` : "/dev/null"}\n+++ b/${path}\n${hunk}${body}`;
}

/** INVALID_PATH: absolute, containing "..", or inside an excluded folder. */
function checkPath(path: string | null | undefined, required: boolean): string {
  if (path === null || path === undefined || path === "") {
    if (required) fail(400, "INVALID_PATH", "path is required");
    return "";
  }
  if (typeof path !== "string" || path.startsWith("/") || path.includes(".."))
    fail(
      400,
      "INVALID_PATH",
      `Invalid path "${path}": it must be relative to the project root and must not contain ".."`,
    );
  const clean = path.replace(/\/+$/, "");
  if (clean.split("/").some((segment) => EXCLUDED.includes(segment)))
    fail(400, "INVALID_PATH", `Invalid path "${path}": ${EXCLUDED.join(", ")} are not accessible`);
  return clean;
}

const listable = (path: string) => !path.split("/").some((segment) => EXCLUDED.includes(segment));

function sourceCode(ctx: BuildContext, p: SimProject) {
  const source = sourceOf(p);
  chargeProject(ctx, p, "GET_SOURCE_CODE");
  const sha = headSha(p);
  const expires = iso(ctx.simNow() + 10 * MINUTE);
  return {
    filesCount: source.files.size,
    ...(sha ? { lastCommitSha: sha } : {}),
    downloadUrl: sha
      ? `https://storage.${SANDBOX_APPS_DOMAIN}/source/${p.projectId}/${sha}.zip` +
        `?expires=${encodeURIComponent(expires)}&signature=${sha1(`${sha}:${expires}`)}`
      : null,
  };
}

function upload(ctx: BuildContext, p: SimProject, req: SimRequest) {
  const file = req.form?.files.file;
  if (!file) fail(400, "MISSING_FILE", 'multipart field "file" is required');
  if (file.bytes.length > MAX_UPLOAD)
    fail(413, "FILE_TOO_LARGE", `The file is ${file.bytes.length} bytes; uploads may be at most 12 MB`);
  if (file.name.includes("upload-fail")) fail(500, "UPLOAD_FAILED", "The file could not be stored");
  chargeProject(ctx, p, "UPLOAD_FILE");
  const source = sourceOf(p);
  const fileNameId = ctx.newId();
  const at = ctx.simNow();
  source.uploads.push({ fileNameId, name: file.name, type: file.type, size: file.bytes.length, at });
  const expires = iso(at + 7 * 24 * 60 * MINUTE);
  return {
    fileNameId,
    url:
      `https://storage.${SANDBOX_APPS_DOMAIN}/uploads/${p.projectId}/${fileNameId}/${encodeURIComponent(file.name)}` +
      `?expires=${encodeURIComponent(expires)}&signature=${sha1(fileNameId)}`,
  };
}

function pageParam(query: URLSearchParams, name: string, fallback: number, max: number): number {
  const raw = query.get(name);
  if (raw === null || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < (name === "limit" ? 1 : 0))
    fail(
      400,
      "INVALID_PAGINATION",
      `${name} must be a whole number${name === "limit" ? " of at least 1" : " of 0 or more"}`,
    );
  return Math.min(n, max);
}

interface Entry {
  path: string;
  name: string;
  type: "file" | "folder";
  size?: number;
  depth: number;
}

function tree(_ctx: BuildContext, p: SimProject, query: URLSearchParams) {
  const base = checkPath(query.get("path"), false);
  const limit = pageParam(query, "limit", TREE_DEFAULT, TREE_MAX);
  const offset = pageParam(query, "offset", 0, Number.MAX_SAFE_INTEGER);
  const source = sourceOf(p);
  if (source.files.size > MAX_LISTABLE_FILES)
    fail(413, "PROJECT_TOO_LARGE", "The project has too many files to list; download the source archive instead");
  const entries = listEntries(
    [...source.files].filter(([path]) => listable(path)),
    base,
  );
  return {
    entries: entries.slice(offset, offset + limit),
    totalEntries: entries.length,
    offset,
    limit,
    hasMore: offset + limit < entries.length,
    commitSha: headSha(p),
    filesCount: source.files.size,
  };
}

/** Depth first: in each folder its subfolders (each followed by its content), then its files, alphabetically. */
function listEntries(files: Array<[string, Buffer]>, base: string): Entry[] {
  interface Folder {
    folders: Map<string, Folder>;
    files: Map<string, number>;
  }
  const root: Folder = { folders: new Map(), files: new Map() };
  for (const [path, bytes] of files) {
    const parts = path.split("/");
    let folder = root;
    for (const part of parts.slice(0, -1)) {
      if (!folder.folders.has(part)) folder.folders.set(part, { folders: new Map(), files: new Map() });
      folder = folder.folders.get(part)!;
    }
    folder.files.set(parts[parts.length - 1], bytes.length);
  }
  let start: Folder | undefined = root;
  for (const part of base ? base.split("/") : []) start = start?.folders.get(part);
  const out: Entry[] = [];
  const walk = (folder: Folder, prefix: string, depth: number) => {
    for (const name of [...folder.folders.keys()].sort()) {
      const path = prefix + name;
      out.push({ path, name, type: "folder", depth });
      walk(folder.folders.get(name)!, `${path}/`, depth + 1);
    }
    for (const name of [...folder.files.keys()].sort())
      out.push({ path: prefix + name, name, type: "file", size: folder.files.get(name), depth });
  };
  // An unknown folder lists nothing (no error is documented for it).
  if (start) walk(start, base ? `${base}/` : "", base ? base.split("/").length : 0);
  return out;
}

function readFile(_ctx: BuildContext, p: SimProject, rawPath: string | null) {
  const path = checkPath(rawPath, true);
  const source = sourceOf(p);
  const bytes = source.files.get(path);
  if (!bytes) fail(404, "FILE_NOT_FOUND", `No file at ${path}`);
  if (bytes.length > MAX_READ)
    fail(413, "FILE_TOO_LARGE", `${path} is ${bytes.length} bytes; files over 1 MB cannot be read here`);
  const binary = bytes.subarray(0, 8 * KB).includes(0);
  return {
    path,
    name: path.split("/").pop(),
    size: bytes.length,
    encoding: binary ? "base64" : "utf8",
    content: bytes.toString(binary ? "base64" : "utf8"),
    commitSha: headSha(p),
  };
}

/**
 * The service's HTML sanitizer runs over utf8 bodies: it drops script elements and className
 * attributes, and still answers 200.
 */
function sanitize(text: string): string {
  return text
    .replace(/<script\b[^>]*>[\s\S]*?<\/script>/gi, "")
    .replace(/\s+className=(\{[^}]*\}|"[^"]*"|'[^']*')/g, "");
}

function writeFile(ctx: BuildContext, p: SimProject, req: SimRequest) {
  const body = bodyOf(req);
  const path = checkPath(typeof body.path === "string" ? body.path : undefined, true);
  if (typeof body.content !== "string") fail(400, "MISSING_CONTENT", "content is required and must be a string");
  const encoding = body.encoding ?? "utf8";
  if (encoding !== "utf8" && encoding !== "base64") fail(400, "INVALID_ENCODING", "encoding must be utf8 or base64");
  if (encoding === "base64" && !/^[A-Za-z0-9+/\s]*={0,2}\s*$/.test(body.content))
    fail(400, "INVALID_ENCODING", "content is not valid base64");
  const bytes =
    encoding === "base64" ? Buffer.from(body.content, "base64") : Buffer.from(sanitize(body.content), "utf8");
  if (bytes.length > MAX_WRITE)
    fail(413, "FILE_TOO_LARGE", `The file would be ${bytes.length} bytes; writes may be at most 512 KB`);
  if (accountPlan(ctx) === "free") fail(400, "FREE_PLAN_NO_SOURCE_EDITING", "Editing source files needs a paid plan");
  if (!hasSandbox(p)) fail(400, "NO_SANDBOX", "The project has no sandbox yet; run the agent once first");
  if (p.server.status !== "Active")
    fail(400, "SANDBOX_NOT_ACTIVE", `The sandbox is not active (${p.server.status}); wait until it is`);
  if (p.run?.state === "running")
    fail(409, "AGENT_RUNNING", "The agent is running on this project; wait until it is done");
  const source = sourceOf(p);
  const isFolder = [...source.files.keys()].some((f) => f.startsWith(`${path}/`));
  const underFile = path
    .split("/")
    .some((_, i, parts) => i < parts.length - 1 && source.files.has(parts.slice(0, i + 1).join("/")));
  if (isFolder || underFile)
    fail(400, "INVALID_PATH", `Invalid path "${path}": ${isFolder ? "it is a folder" : "a parent is a file"}`);
  chargeProject(ctx, p, "UPDATE_FILE");
  const created = !source.files.has(path);
  const commitSha = commitFiles(
    ctx,
    p,
    new Map([[path, bytes]]),
    `${created ? "Create" : "Update"} ${path}`,
    ctx.simNow(),
  );
  return { path, bytesWritten: bytes.length, created, commitSha, filesCount: source.files.size, rebuildRequired: true };
}

/** A file of these lines, each ended by a newline. */
const lines = (...text: string[]) => text.map((line) => `${line}\n`).join("");
const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;

function template(p: SimProject): Record<string, string> {
  const title = p.label ?? p.projectId;
  return {
    ".gitignore": "node_modules\n.next\ndist\n.env*\n",
    "README.md": lines(
      `# ${title}`,
      "",
      p.description,
      "",
      "Built with the project build service. Run `npm run dev` to start.",
    ),
    "package.json": json({
      name: p.projectId,
      private: true,
      scripts: { dev: "next dev", build: "next build", start: "next start" },
      dependencies: { next: "14.2.5", react: "18.3.1", "react-dom": "18.3.1" },
    }),
    "next.config.js": "/** @type {import('next').NextConfig} */\nmodule.exports = { reactStrictMode: true };\n",
    "tsconfig.json": json({
      compilerOptions: { target: "ES2020", jsx: "preserve", strict: true, paths: { "@/*": ["./src/*"] } },
    }),
    "src/app/layout.tsx": lines(
      'import "./globals.css";',
      'import { Header } from "@/components/Header";',
      "",
      `export const metadata = { title: ${JSON.stringify(title)} };`,
      "",
      "export default function RootLayout({ children }: { children: React.ReactNode }) {",
      "  return (",
      '    <html lang="en">',
      '      <body className="min-h-screen bg-white">',
      "        <Header />",
      "        {children}",
      "      </body>",
      "    </html>",
      "  );",
      "}",
    ),
    "src/app/page.tsx": lines(
      "export default function Home() {",
      "  return (",
      '    <main className="mx-auto max-w-4xl p-8">',
      `      <h1 className="text-3xl font-bold">${title}</h1>`,
      `      <p className="mt-4 text-gray-600">${p.description}</p>`,
      "    </main>",
      "  );",
      "}",
    ),
    "src/app/globals.css": "@tailwind base;\n@tailwind components;\n@tailwind utilities;\n",
    "src/app/api/health/route.ts": "export function GET() {\n  return Response.json({ ok: true });\n}\n",
    "src/components/Header.tsx": lines(
      "export function Header() {",
      `  return <header className="border-b p-4 font-semibold">${title}</header>;`,
      "}",
    ),
    "src/lib/db.ts": 'export const databaseUrl = process.env.DATABASE_URL ?? "";\n',
    "dist/build-info.json": `${JSON.stringify({ builtAt: iso(p.createdAt) })}\n`,
  };
}
