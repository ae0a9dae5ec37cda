// Worker thread hosting the TypeScript language service over a virtual notebook: a prelude that
// declares the kernel's globals (torch, display, ...) and one file holding every cell run so far
// followed by the cell being edited.
import { parentPort, workerData } from "node:worker_threads";
import { dirname, join } from "node:path";
import { createRequire } from "node:module";
import type * as TS from "typescript";
import { REPO, RUNTIME_MODULE } from "../repo.ts";

// Loaded with require, not `import ts from "typescript"`: an ESM import of the 9 MB CommonJS file makes
// Node scan it for named exports first (measured: 0.75-0.82 s of CPU at every kernel start, against
// 0.23-0.24 s for require), and the service starts with every kernel.
const ts: typeof TS = createRequire(import.meta.url)("typescript");

const repo = REPO;
const baseDir = process.cwd();
const PRELUDE = join(baseDir, "__gradlab_prelude.d.ts");
const TORCH = join(baseDir, "__gradlab_torch.d.ts");
const CELLS = join(baseDir, "__gradlab_cells.ts");

// \`torch\` is the runtime module as a UMD global: a namespace for types and values both, as
// \`import * as torch from "gradlab"\` would give (\`let t: torch.Tensor\`, \`torch.nn.Module\`, \`torch.tensor(...)\`).
const torchText = `export * from ${JSON.stringify(RUNTIME_MODULE)};
export as namespace torch;
`;

const preludeText = `
interface GradlabDisplayHandle { display_id: string; update(obj: unknown, opts?: { metadata?: Record<string, unknown> }): void }
interface GradlabDisplayOptions { display_id?: string | boolean; update?: boolean; metadata?: Record<string, unknown> }
/** Show a value in the notebook as rich output (honours obj[Symbol.for("Jupyter.display")]()). */
declare function display(obj: unknown, opts?: GradlabDisplayOptions): GradlabDisplayHandle | undefined;
declare namespace display {
  function html(html: string, opts?: GradlabDisplayOptions): GradlabDisplayHandle | undefined;
  function markdown(md: string, opts?: GradlabDisplayOptions): GradlabDisplayHandle | undefined;
  function svg(svg: string, opts?: GradlabDisplayOptions): GradlabDisplayHandle | undefined;
  function json(value: unknown, opts?: GradlabDisplayOptions): GradlabDisplayHandle | undefined;
  function latex(tex: string, opts?: GradlabDisplayOptions): GradlabDisplayHandle | undefined;
  function png(data: string | Uint8Array, opts?: GradlabDisplayOptions): GradlabDisplayHandle | undefined;
  function bundle(data: Record<string, unknown>, opts?: GradlabDisplayOptions): GradlabDisplayHandle | undefined;
}
/** tslab's display API (kernel/display/tslab.ts), for tslab notebooks: import * as tslab from "tslab". */
declare module "tslab" {
  interface Display {
    javascript(s: string): void; html(s: string): void; markdown(s: string): void; latex(s: string): void;
    svg(s: string): void; png(b: Uint8Array): void; jpeg(b: Uint8Array): void; gif(b: Uint8Array): void;
    pdf(b: Uint8Array): void; text(s: string): void; raw(contentType: string, b: string | Uint8Array): void;
  }
  export const display: Display;
  export function newDisplay(): Display;
  export const isNode: boolean;
  export const isBrowser: boolean;
}
/** Clear this cell's output; with {wait: true}, when the next output arrives. */
declare function clear_output(opts?: { wait?: boolean }): void;
/** Ask the user for a line of text (blocks until answered). */
declare function prompt(message?: string, _default?: string): string | null;
declare function input(message?: string, opts?: { password?: boolean }): Promise<string | null>;
interface GradlabComm {
  readonly comm_id: string; readonly target_name: string;
  send(data?: unknown, metadata?: object, buffers?: Uint8Array[]): void;
  close(data?: unknown): void;
  onMsg(fn: (data: any, msg: { metadata: unknown; buffers: Uint8Array[] }) => void): this;
  onClose(fn: (data: any) => void): this;
}
declare const comms: {
  registerTarget(name: string, handler: (comm: GradlabComm, open: { data: unknown; metadata: unknown; buffers: Uint8Array[] }) => void): void;
  unregisterTarget(name: string): void;
  open(target_name: string, data?: unknown, metadata?: object, buffers?: Uint8Array[]): GradlabComm;
  list(): GradlabComm[];
};
`;

// The cells the checker sees: the most recent ones, up to a byte budget, so that checking a cell costs
// the same in a long session as in a short one (an ever-growing history made every cell slower and the
// process bigger: 445 → 678 MB over 1,000 cells). Names declared only in cells that fell out of the
// window stay known, as `any` (the kernel's live values still complete them).
const BUDGET = Number(process.env.GRADLAB_LS_HISTORY_BYTES ?? 64 * 1024);
const history: string[] = [];
const historyNames: string[][] = [];
let historyBytes = 0;
const droppedNames = new Set<string>();

/** Top-level names a cell declares (variables, functions, classes, imports). */
function declaredNames(code: string): string[] {
  const sf = ts.createSourceFile("cell.ts", code, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const names: string[] = [];
  const bind = (n: TS.BindingName) => {
    if (ts.isIdentifier(n)) names.push(n.text);
    else for (const el of n.elements) if (!ts.isOmittedExpression(el)) bind(el.name);
  };
  for (const st of sf.statements) {
    if (ts.isVariableStatement(st)) for (const d of st.declarationList.declarations) bind(d.name);
    else if ((ts.isFunctionDeclaration(st) || ts.isClassDeclaration(st)) && st.name) names.push(st.name.text);
    else if (ts.isImportDeclaration(st) && st.importClause) {
      const c = st.importClause;
      if (c.name) names.push(c.name.text);
      const b = c.namedBindings;
      if (b && ts.isNamespaceImport(b)) names.push(b.name.text);
      else if (b) for (const el of b.elements) names.push(el.name.text);
    }
  }
  return names;
}

function remember(code: string): void {
  history.push(code);
  historyNames.push(declaredNames(code));
  historyBytes += code.length;
  while (historyBytes > BUDGET && history.length > 1) {
    historyBytes -= history.shift()!.length;
    for (const n of historyNames.shift()!) droppedNames.add(n);
  }
}
for (const c of (workerData?.cells as string[]) ?? []) remember(c);

/** `declare var` for names only the dropped cells declared. */
function stubs(): string {
  if (droppedNames.size === 0) return "";
  const live = new Set(historyNames.flat());
  return [...droppedNames]
    .filter((n) => !live.has(n))
    .map((n) => `declare var ${n}: any;\n`)
    .join("");
}
let current = "";
let version = 0;

const options: TS.CompilerOptions = {
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.ESNext,
  moduleResolution: ts.ModuleResolutionKind.Bundler,
  allowImportingTsExtensions: true,
  noEmit: true,
  strict: true,
  noImplicitAny: false,
  skipLibCheck: true,
  esModuleInterop: true,
  lib: ["lib.es2023.d.ts", "lib.esnext.disposable.d.ts"],
  types: ["node"],
  // the cells file is a module; let it see the UMD global \`torch\`
  allowUmdGlobalAccess: true,
  typeRoots: [typesDir()],
};

/** Where npm put @types/node: the checkout's node_modules, or the one an installed gradlab sits in. */
function typesDir(): string {
  try {
    return dirname(dirname(createRequire(join(repo, "package.json")).resolve("@types/node/package.json")));
  } catch {
    return join(repo, "node_modules/@types"); // not installed: cells then see no Node types
  }
}

function cellsText(): { text: string; offset: number } {
  const prefix = stubs() + history.map((c) => `${c}\n;\n`).join("");
  return { text: `${prefix}${current}\nexport {};\n`, offset: prefix.length };
}

const host: TS.LanguageServiceHost = {
  getCompilationSettings: () => options,
  getScriptFileNames: () => [PRELUDE, TORCH, CELLS],
  getScriptVersion: (f) => (f === CELLS ? String(version) : "1"),
  getScriptSnapshot: (f) => {
    if (f === PRELUDE) return ts.ScriptSnapshot.fromString(preludeText);
    if (f === TORCH) return ts.ScriptSnapshot.fromString(torchText);
    if (f === CELLS) return ts.ScriptSnapshot.fromString(cellsText().text);
    const text = ts.sys.readFile(f);
    return text === undefined ? undefined : ts.ScriptSnapshot.fromString(text);
  },
  getCurrentDirectory: () => baseDir,
  getDefaultLibFileName: (o) => ts.getDefaultLibFilePath(o),
  fileExists: (f) => f === PRELUDE || f === TORCH || f === CELLS || ts.sys.fileExists(f),
  readFile: (f) => (f === PRELUDE ? preludeText : f === TORCH ? torchText : f === CELLS ? cellsText().text : ts.sys.readFile(f)),
  readDirectory: ts.sys.readDirectory,
  directoryExists: ts.sys.directoryExists,
  getDirectories: ts.sys.getDirectories,
};
const service = ts.createLanguageService(host, ts.createDocumentRegistry());

function setCurrent(code: string): number {
  current = code;
  version++;
  return cellsText().offset;
}

// Diagnostics that notebooks trigger by design (redeclaring across cells, top-level await, ...).
const IGNORED = new Set([2300, 2451, 2403, 2393, 1375, 1378, 2440, 6133, 7016, 2307, 2792]);

function handle(m: any): unknown {
  switch (m.op) {
    case "addCell":
      remember(m.code);
      version++;
      return undefined;
    case "complete": {
      const off = setCurrent(m.code);
      const r = service.getCompletionsAtPosition(CELLS, off + m.cursor, { includeCompletionsWithInsertText: false });
      return { entries: (r?.entries ?? []).filter((e) => !e.name.startsWith("__gradlab")).map((e) => ({ name: e.name, kind: e.kind })) };
    }
    case "inspect": {
      const off = setCurrent(m.code);
      let info = service.getQuickInfoAtPosition(CELLS, off + m.cursor);
      if (!info && m.cursor > 0) info = service.getQuickInfoAtPosition(CELLS, off + m.cursor - 1);
      if (!info) return null;
      return { signature: ts.displayPartsToString(info.displayParts), docs: ts.displayPartsToString(info.documentation) };
    }
    case "diagnostics": {
      const off = setCurrent(m.code);
      const end = off + m.code.length;
      const sf = service.getProgram()!.getSourceFile(CELLS)!;
      return [...service.getSyntacticDiagnostics(CELLS), ...service.getSemanticDiagnostics(CELLS)]
        .filter((d) => d.start !== undefined && d.start >= off && d.start <= end && !IGNORED.has(d.code))
        .map((d) => {
          const lc = sf.getLineAndCharacterOfPosition(d.start!);
          const base = sf.getLineAndCharacterOfPosition(off);
          return { line: lc.line - base.line + 1, col: lc.character + 1, code: d.code, text: ts.flattenDiagnosticMessageText(d.messageText, "\n") };
        });
    }
  }
  return null;
}

// compile the notebook once now, so the first real request is fast, then say we are ready
try {
  service.getProgram();
} catch {
  // reported on the first request
}
parentPort!.postMessage({ id: -1 });

parentPort!.on("message", (m) => {
  let result: unknown = null;
  try {
    result = handle(m);
  } catch {
    // a request the service cannot answer gets null, as when it is not loaded
    result = null;
  }
  if (m.id) parentPort!.postMessage({ id: m.id, result });
});
