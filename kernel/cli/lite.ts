// gradlab lite build --out DIR | gradlab lite serve DIR [--port N]
//
// GradLab Lite: the course as a static site. `build` assembles a JupyterLite application with Node
// alone, from npm packages (JupyterLab 4 and JupyterLite's in-browser services, listed in
// lite/package.json and installed there, apart from GradLab's own dependencies), bundled by esbuild:
//   DIR/lab/index.html                   the page (JupyterLab with the file browser and notebooks)
//   DIR/gradlab/dist/app.js, app.css     JupyterLab, its extensions and the GradLab kernel extension
//   DIR/gradlab/dist/worker.js           the kernel's Web Worker: runtime + executor, WGSL inlined
//   DIR/gradlab/dist/language.js         the language service's Web Worker: TypeScript + kernel/language/service.ts
//   DIR/gradlab/dist/typings.json        the files it reads: TypeScript's lib files and the runtime's .d.ts
//   DIR/gradlab/dist/esbuild.wasm        the cell transform's esbuild, as WebAssembly
//   DIR/build/schemas/all.json           every extension's settings schema (JupyterLite reads it)
//   DIR/build/themes/<pkg>/index.css     the light and dark themes
//   DIR/files/, DIR/api/contents/        the course notebooks and check.ts, with their listings
//   DIR/service-worker.js                every file above, cached by the browser: offline once loaded
// No Python and no package index are needed; nothing in the site refers to another origin.
// `serve` serves such a folder on 127.0.0.1 for a try-out; any static host serves it in production.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { extname, join, relative, resolve, sep } from "node:path";
import { build, type Plugin } from "esbuild";
import { createRequire } from "node:module";
import type * as TS from "typescript";
import { REPO, RUNTIME_MODULE } from "../repo.ts";
import { BROWSER_LIBS, notebookOptions, notebookRoots, type Typings } from "../language/service.ts";
import { LITE_DIR, LITE_WORKER } from "./paths.ts";

const MODULES = join(LITE_DIR, "node_modules");

const USAGE = `usage:
  gradlab lite build --out DIR [--notebooks DIR]   assemble the static site (the course notebooks by default)
  gradlab lite serve DIR [--port N]                serve it on http://127.0.0.1:N/ (default 8000)`;

export async function liteCli(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  const opt = (name: string) => {
    const i = rest.indexOf(name);
    return i >= 0 ? rest[i + 1] : undefined;
  };
  if (sub === "build") {
    const out = opt("--out");
    if (!out) throw new Error(`gradlab lite build needs --out DIR\n${USAGE}`);
    const t0 = performance.now();
    const size = await buildSite(resolve(out), resolve(opt("--notebooks") ?? join(REPO, "notebooks")));
    console.log(`GradLab Lite site in ${resolve(out)}: ${(size / 2 ** 20).toFixed(1)} MiB, built in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    return 0;
  }
  if (sub === "serve") {
    const dir = rest.find((a, i) => !a.startsWith("--") && rest[i - 1] !== "--port");
    if (!dir) throw new Error(`gradlab lite serve needs the site's folder\n${USAGE}`);
    const server = await serve(resolve(dir), Number(opt("--port") ?? 8000));
    console.log(`GradLab Lite on http://127.0.0.1:${server.port}/lab/index.html (Ctrl-C stops it)`);
    return -1;
  }
  console.error(USAGE);
  return 2;
}

/** lite/node_modules, installed from lite/package-lock.json when missing. */
function ensureModules(): void {
  if (existsSync(join(MODULES, "@jupyterlab", "application", "package.json"))) return;
  console.log("Installing JupyterLite's npm packages into lite/node_modules (once) ...");
  const r = spawnSync("npm", ["ci", "--no-audit", "--no-fund", "--prefix", LITE_DIR], { stdio: "inherit" });
  if (r.status !== 0) throw new Error("npm ci --prefix lite failed: GradLab Lite is assembled from npm packages, which need the npm registry once");
}

/** lite/package.json's "gradlab-lite": what the app is made of (JupyterLite's app/lab/package.json
 *  keeps the same lists under "jupyterlab"). */
interface LiteConfig {
  extensions: string[];
  mimeExtensions: string[];
  /** plugins JupyterLite replaces with in-browser ones (the server's kernels, sessions, settings, ...) */
  disabledExtensions: string[];
}
const readJson = (p: string) => JSON.parse(readFileSync(p, "utf8"));
const pkgJson = (name: string) => readJson(join(MODULES, name, "package.json"));

export async function buildSite(out: string, notebooks: string): Promise<number> {
  // the site bundles GradLab's TypeScript sources (src/, kernel/, lite/src), which the npm package leaves out
  if (!existsSync(LITE_WORKER)) throw new Error(`gradlab lite build runs from a GradLab checkout (it bundles the sources): ${LITE_DIR} is missing`);
  if (!existsSync(notebooks)) throw new Error(`no notebooks at ${notebooks} (--notebooks DIR)`);
  ensureModules();
  const cfg = readJson(join(LITE_DIR, "package.json"))["gradlab-lite"] as LiteConfig;
  rmSync(out, { recursive: true, force: true });
  const dist = join(out, "gradlab", "dist");
  mkdirSync(dist, { recursive: true });
  await Promise.all([bundleApp(cfg, dist), bundleWorker(dist), bundleLanguage(dist)]);
  cpSync(join(MODULES, "esbuild-wasm", "esbuild.wasm"), join(dist, "esbuild.wasm"));
  for (const size of [32, 64]) cpSync(join(REPO, "kernel", "assets", `logo-${size}x${size}.png`), join(out, "gradlab", `logo-${size}x${size}.png`));
  await themes(cfg, join(out, "build", "themes"));
  schemas(cfg, join(out, "build", "schemas"));
  translations(out);
  course(notebooks, out);
  page(out, cfg);
  await serviceWorker(out); // last: it lists every file of the site
  return folderSize(out);
}

/** The page: JupyterLite's options for PageConfig (JupyterLab reads them from the page). */
function page(out: string, cfg: LiteConfig): void {
  const config = {
    appName: "GradLab Lite",
    appUrl: "./lab",
    appVersion: "0.8.1",
    settingsUrl: "build/schemas", // made absolute by the page (index.html)
    themesUrl: "./build/themes",
    contentsAllJsonFile: "all.json",
    defaultKernelName: "gradlab",
    exposeAppInBrowser: "true",
    notebookPage: "notebooks",
    disabledExtensions: cfg.disabledExtensions,
    federated_extensions: [],
  };
  const html = readFileSync(join(LITE_DIR, "src", "index.html"), "utf8").replace(
    'type="application/json">{}<',
    `type="application/json">${JSON.stringify(config)}<`,
  );
  mkdirSync(join(out, "lab"), { recursive: true });
  writeFileSync(join(out, "lab", "index.html"), html);
  writeFileSync(
    join(out, "index.html"),
    `<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0; url=lab/index.html"><a href="lab/index.html">GradLab Lite</a>\n`,
  );
}

/** service-worker.js at the site's root (lite/src/service-worker.ts): the site offline once loaded. It
 *  carries the list of the site's files and a hash of their content, so a rebuilt site replaces it. */
async function serviceWorker(out: string): Promise<void> {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir).sort()) {
      const p = join(dir, e);
      if (statSync(p).isDirectory()) walk(p);
      else files.push(relative(out, p).split(sep).join("/"));
    }
  };
  walk(out);
  const hash = createHash("sha256");
  for (const f of files)
    hash
      .update(f)
      .update("\0")
      .update(readFileSync(join(out, f)))
      .update("\0");
  // a folder's index.html is also asked for by the folder's URL (the site's root, lab/)
  const urls = files.flatMap((f) => (f === "index.html" ? ["", f] : f.endsWith("/index.html") ? [f.slice(0, -"index.html".length), f] : [f]));
  await build({
    ...esbuildCommon,
    format: "iife",
    entryPoints: [join(LITE_DIR, "src", "service-worker.ts")],
    outfile: join(out, "service-worker.js"),
    define: { __GRADLAB_PRECACHE__: JSON.stringify(urls), __GRADLAB_BUILD__: JSON.stringify(hash.digest("hex").slice(0, 16)) },
  });
}

const esbuildCommon = {
  bundle: true,
  platform: "browser" as const,
  format: "esm" as const,
  target: "es2022",
  minify: true,
  legalComments: "none" as const,
  logLevel: "warning" as const,
  absWorkingDir: LITE_DIR,
  nodePaths: [MODULES],
  define: { "process.env.NODE_ENV": '"production"', global: "globalThis" },
};

/** JupyterLab's packages import SVG icons as text (webpack's raw loader) and name SVGs in CSS url()s;
 *  their CSS names packages webpack's way, `~pkg/file`. */
const svgPlugin: Plugin = {
  name: "svg",
  setup(b) {
    b.onResolve({ filter: /^~/ }, (a) => b.resolve(a.path.slice(1), { kind: a.kind, resolveDir: a.resolveDir }));
    b.onResolve({ filter: /\.svg$/ }, (a) => (a.kind === "url-token" ? { path: resolve(a.resolveDir, a.path), namespace: "svg-url" } : undefined));
    b.onLoad({ filter: /.*/, namespace: "svg-url" }, (a) => ({ contents: readFileSync(a.path), loader: "dataurl" }));
  },
};

async function bundleApp(cfg: LiteConfig, dist: string): Promise<void> {
  const imp = (list: string[], prefix: string) => list.map((name, i) => `import * as ${prefix}${i} from ${JSON.stringify(name)};`).join("\n");
  const styles = [...cfg.extensions, ...cfg.mimeExtensions]
    .map((name) => {
      const p = pkgJson(name);
      const style = p.styleModule ?? p.style;
      return style ? `import ${JSON.stringify(`${name}/${style}`)};` : "";
    })
    .join("\n");
  const entry = [
    `import { main } from ${JSON.stringify(join(LITE_DIR, "src", "app.ts"))};`,
    `import gradlab from ${JSON.stringify(join(LITE_DIR, "src", "extension.ts"))};`,
    styles,
    imp(cfg.extensions, "e"),
    imp(cfg.mimeExtensions, "m"),
    `main([${cfg.extensions.map((_, i) => `e${i}`).join(", ")}, { default: gradlab }], [${cfg.mimeExtensions.map((_, i) => `m${i}`).join(", ")}]);`,
  ].join("\n");
  await build({
    ...esbuildCommon,
    stdin: { contents: entry, resolveDir: LITE_DIR, sourcefile: "gradlab-lite-entry.js", loader: "js" },
    outfile: join(dist, "app.js"),
    // MathJax's loader reads __dirname, which webpack (JupyterLab's own bundler) defines as "/"
    define: { ...esbuildCommon.define, __dirname: '"/"' },
    loader: { ".svg": "text", ".woff": "file", ".woff2": "file", ".ttf": "file", ".eot": "file", ".png": "file", ".gif": "file", ".md": "text" },
    assetNames: "assets/[name]-[hash]",
    plugins: [svgPlugin],
  });
}

/** Node's built-ins the kernel's executor imports, and the modules that differ in a browser. */
function workerPlugin(): Plugin {
  const shim = (f: string) => join(LITE_DIR, "src", "shims", f);
  const builtins: Record<string, string> = {
    "node:vm": shim("vm.ts"),
    "node:async_hooks": shim("async-hooks.ts"),
    "node:module": shim("module.ts"),
    "node:crypto": shim("crypto.ts"),
    "node:url": shim("url.ts"),
    "node:util": shim("inspect.ts"),
    "node:path": join(MODULES, "path-browserify", "index.js"),
    esbuild: shim("esbuild.ts"),
  };
  const swapped: Record<string, string> = {
    [join(REPO, "src", "platform", "node.ts")]: join(REPO, "src", "platform", "browser.ts"),
    [join(REPO, "kernel", "executor", "modules.ts")]: join(LITE_DIR, "src", "modules.ts"),
    [join(REPO, "kernel", "repo.ts")]: shim("repo.ts"),
  };
  return {
    name: "gradlab-browser",
    setup(b) {
      b.onResolve({ filter: /^(node:[a-z_]+|esbuild)$/ }, (a) => {
        const to = builtins[a.path];
        if (!to) return { errors: [{ text: `${a.path} has no browser stand-in (imported by ${a.importer})` }] };
        return { path: to };
      });
      b.onResolve({ filter: /\.ts$/ }, (a) => {
        const to = swapped[resolve(a.resolveDir, a.path)];
        return to ? { path: to } : undefined;
      });
    },
  };
}

async function bundleWorker(dist: string): Promise<void> {
  const wgslDir = join(REPO, "kernels-wgsl");
  const wgsl: Record<string, string> = {};
  for (const f of readdirSync(wgslDir)) if (f.endsWith(".wgsl")) wgsl[f.slice(0, -5)] = readFileSync(join(wgslDir, f), "utf8");
  await build({
    ...esbuildCommon,
    // names of the runtime's classes show in what cells print (<AddBackward0 object ...>, repr)
    keepNames: true,
    entryPoints: [join(LITE_DIR, "src", "worker.ts")],
    outfile: join(dist, "worker.js"),
    define: { ...esbuildCommon.define, __GRADLAB_WGSL__: JSON.stringify(wgsl) },
    plugins: [workerPlugin()],
  });
}

/** The language service's Worker (lite/src/language-worker.ts, with TypeScript) and typings.json. */
async function bundleLanguage(dist: string): Promise<void> {
  await build({ ...esbuildCommon, entryPoints: [join(LITE_DIR, "src", "language-worker.ts")], outfile: join(dist, "language.js") });
  writeFileSync(join(dist, "typings.json"), JSON.stringify(collectTypings()));
}

/** typings.json: the files the language service reads when it compiles a notebook, as Node reads them
 *  for the server kernel (TypeScript's lib files, the runtime's typings and the package.json files module
 *  resolution reads), without @types/node (a browser has no Node) but with a Worker's globals. Paths are relative to the checkout.
 *  The runtime's typings are the built ones (dist/src/*.d.ts, beside the built CLI that builds sites). */
export function collectTypings(runtimeModule = RUNTIME_MODULE): Typings {
  const ts: typeof TS = createRequire(import.meta.url)("typescript");
  const where = { baseDir: REPO, runtimeModule, types: [], typeRoots: [], libs: BROWSER_LIBS };
  const options = notebookOptions(ts, where);
  const roots = notebookRoots(where);
  const virtual = new Map([roots.prelude, roots.torch, [roots.cells, "export {};\n"]]);
  const rel = (f: string) => relative(REPO, f).split(sep).join("/");
  const files: Record<string, string> = {};
  const keep = (f: string, text: string | undefined) => {
    if (text !== undefined && !virtual.has(f)) files[rel(f)] = text;
    return text;
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  const readFile = host.readFile.bind(host);
  host.getSourceFile = (f, lang) => {
    const text = virtual.get(f);
    if (text !== undefined) return ts.createSourceFile(f, text, lang);
    const sf = getSourceFile(f, lang);
    keep(f, sf?.text);
    return sf;
  };
  host.readFile = (f) => virtual.get(f) ?? keep(f, readFile(f));
  host.fileExists = (f) => virtual.has(f) || ts.sys.fileExists(f);
  // creating the program reads every file the cells can reach (imports, references, lib files)
  ts.createProgram([...virtual.keys()], options, host);
  return { runtimeModule: rel(runtimeModule), defaultLib: rel(ts.getDefaultLibFilePath(options)), files };
}

/** Each theme's CSS (package.json jupyterlab.themePath), where JupyterLab's theme manager loads it. */
async function themes(cfg: LiteConfig, dir: string): Promise<void> {
  for (const name of cfg.extensions) {
    const themePath = pkgJson(name).jupyterlab?.themePath;
    if (!themePath) continue;
    await build({
      ...esbuildCommon,
      entryPoints: [join(MODULES, name, themePath)],
      outfile: join(dir, name, "index.css"),
      loader: { ".svg": "dataurl", ".woff": "file", ".woff2": "file", ".png": "file" },
      assetNames: "[name]-[hash]",
    });
  }
}

/** build/schemas/all.json: every plugin's settings schema, as JupyterLite's settings service reads it. */
function schemas(cfg: LiteConfig, dir: string): void {
  const all: object[] = [];
  const names = new Set([...cfg.extensions, ...cfg.mimeExtensions]);
  for (const name of names) {
    const p = pkgJson(name);
    const schemaDir = p.jupyterlab?.schemaDir;
    const d = join(MODULES, name, schemaDir ?? "schema");
    if (!schemaDir || !existsSync(d)) continue; // some packages name a folder they do not ship
    for (const f of readdirSync(d).sort()) {
      if (!f.endsWith(".json")) continue;
      all.push({ id: `${name}:${f.slice(0, -5)}`, raw: "{}", schema: readJson(join(d, f)), settings: {}, version: p.version });
    }
  }
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "all.json"), JSON.stringify(all));
  writeFileSync(join(dir, "all_federated.json"), "[]"); // no federated extensions: the core bundle has them all
}

/** JupyterLite's translation listing: English only (JupyterLab's own strings), so nothing 404s. */
function translations(out: string): void {
  const dir = join(out, "api", "translations");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "all.json"), JSON.stringify({ data: { en: { displayName: "English", nativeName: "English" } }, message: "" }));
  writeFileSync(join(dir, "en.json"), JSON.stringify({ data: {}, message: "" }));
}

/** The course: notebooks and check.ts under files/, with the listings JupyterLite's drive reads. */
function course(notebooks: string, out: string): void {
  const files = join(out, "files");
  const copy = (from: string, to: string) => {
    mkdirSync(to, { recursive: true });
    const listing: object[] = [];
    for (const e of readdirSync(from).sort()) {
      const src = join(from, e);
      const st = statSync(src);
      const path = relative(files, join(to, e)).split(sep).join("/");
      const stamp = st.mtime.toISOString();
      const base = { name: e, path, created: stamp, last_modified: stamp, writable: true };
      if (st.isDirectory()) {
        copy(src, join(to, e));
        listing.push({ ...base, type: "directory", mimetype: null, format: null, size: null, content: null });
      } else if (/\.(ipynb|ts|md)$/.test(e)) {
        cpSync(src, join(to, e));
        const nb = e.endsWith(".ipynb");
        listing.push({
          ...base,
          type: nb ? "notebook" : "file",
          mimetype: nb ? "application/json" : "text/plain",
          format: nb ? "json" : "text",
          size: st.size,
          content: null,
        });
      }
    }
    const api = join(out, "api", "contents", relative(files, to));
    mkdirSync(api, { recursive: true });
    writeFileSync(join(api, "all.json"), JSON.stringify({ name: "", path: relative(files, to).split(sep).join("/"), type: "directory", content: listing }));
  };
  copy(notebooks, files);
}

function folderSize(p: string): number {
  const st = statSync(p);
  return st.isDirectory() ? readdirSync(p).reduce((n, e) => n + folderSize(join(p, e)), 0) : st.size;
}

const MIME: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".ipynb": "application/json; charset=utf-8",
  ".wasm": "application/wasm",
  ".png": "image/png",
  ".svg": "image/svg+xml",
  ".woff": "font/woff",
  ".woff2": "font/woff2",
  ".ttf": "font/ttf",
  ".ts": "text/plain; charset=utf-8",
  ".md": "text/markdown; charset=utf-8",
};

/** A static server on 127.0.0.1 (port 0: any free port). Resolves once listening. */
export function serve(root: string, port: number): Promise<{ port: number; close: () => void }> {
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    let path = join(root, decodeURIComponent(url.pathname));
    if (!path.startsWith(root)) {
      res.writeHead(403).end();
      return;
    }
    if (existsSync(path) && statSync(path).isDirectory()) path = join(path, "index.html");
    if (!existsSync(path)) {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found");
      return;
    }
    res.writeHead(200, { "content-type": MIME[extname(path)] ?? "application/octet-stream", "cache-control": "no-cache" });
    res.end(readFileSync(path));
  });
  return new Promise((ok, fail) => {
    server.once("error", fail);
    server.listen(port, "127.0.0.1", () => {
      const a = server.address();
      // close: the server is gone at once, kept-alive connections too (the Lite tier cuts it to go offline)
      const close = () => {
        server.close();
        server.closeAllConnections();
      };
      ok({ port: typeof a === "object" && a ? a.port : port, close });
    });
  });
}
