// The TypeScript language service over a virtual notebook: a prelude that declares the kernel's globals
// (torch, display, ...) and one file holding every cell run so far followed by the cell being edited.
// Shared by the server kernel's worker thread (service-worker.ts: the files from Node's file system)
// and GradLab Lite's language Worker (lite/src/language-worker.ts: the typings the site ships), so it
// imports nothing of Node: TypeScript and the files come in through NotebookFiles.
import type * as TS from "typescript";

/** Where the service finds what it reads besides the notebook's own files. */
export interface NotebookFiles {
  /** the folder the virtual files sit in */
  baseDir: string;
  /** the runtime module `torch` stands for (its typings are found beside it: index.d.ts) */
  runtimeModule: string;
  readFile(path: string): string | undefined;
  fileExists(path: string): boolean;
  directoryExists?(path: string): boolean;
  getDirectories?(path: string): string[];
  readDirectory?: TS.LanguageServiceHost["readDirectory"];
  defaultLibFileName(options: TS.CompilerOptions): string;
  /** @types packages the cells see (the server: ["node"]; a browser has no Node) and where they are */
  types: string[];
  /** TypeScript lib files beyond the language's (a browser's cells run in a Worker: lib.webworker.d.ts
   *  declares what Node's types declare on the server, `console`, `performance`, timers) */
  libs?: string[];
  typeRoots: string[];
  /** the cells' bytes the checker sees at most (older cells' names stay known as `any`) */
  historyBytes: number;
}

/** The files a browser's language service reads, as `gradlab lite build` collects them (typings.json):
 *  paths relative to the checkout the site was built from. */
export interface Typings {
  runtimeModule: string;
  defaultLib: string;
  files: Record<string, string>;
}

/** NotebookFiles over Typings, at a virtual root: no file system (GradLab Lite's language Worker). */
/** The lib files a browser's cells are checked with beyond the language's (see NotebookFiles.libs). */
export const BROWSER_LIBS = ["lib.webworker.d.ts"];

export function typingsFiles(typings: Typings, root = "/gradlab"): NotebookFiles {
  const files = new Map(Object.entries(typings.files).map(([p, text]) => [`${root}/${p}`, text]));
  const dirs = new Set<string>();
  for (const p of files.keys()) for (let d = p.slice(0, p.lastIndexOf("/")); d; d = d.slice(0, d.lastIndexOf("/"))) dirs.add(d);
  return {
    baseDir: root,
    runtimeModule: `${root}/${typings.runtimeModule}`,
    readFile: (p) => files.get(p),
    fileExists: (p) => files.has(p),
    directoryExists: (p) => dirs.has(p.replace(/\/$/, "")),
    getDirectories: () => [],
    defaultLibFileName: () => `${root}/${typings.defaultLib}`,
    // no @types/node: there is no Node in a browser; its cells run in a Worker
    types: [],
    typeRoots: [],
    libs: BROWSER_LIBS,
    historyBytes: 64 * 1024,
  };
}

export type NotebookRequest =
  | { op: "addCell"; code: string }
  | { op: "forget" }
  | { op: "complete"; code: string; cursor: number }
  | { op: "inspect"; code: string; cursor: number }
  | { op: "diagnostics"; code: string };

// \`torch\` is the runtime module as a UMD global: a namespace for types and values both, as
// \`import * as torch from "gradlab"\` would give (\`let t: torch.Tensor\`, \`torch.nn.Module\`, \`torch.tensor(...)\`).
const torchText = (runtimeModule: string) => `export * from ${JSON.stringify(runtimeModule)};
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

// Diagnostics that notebooks trigger by design (redeclaring across cells, top-level await, ...).
const IGNORED = new Set([2300, 2451, 2403, 2393, 1375, 1378, 2440, 6133, 7016, 2307, 2792]);

/** The compiler options the cells are checked with (also what `gradlab lite build` collects the
 *  site's typings by, so the browser reads the files the server reads). */
export function notebookOptions(ts: typeof TS, files: Pick<NotebookFiles, "types" | "typeRoots" | "libs">): TS.CompilerOptions {
  return {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    allowImportingTsExtensions: true,
    noEmit: true,
    strict: true,
    noImplicitAny: false,
    skipLibCheck: true,
    esModuleInterop: true,
    lib: ["lib.es2023.d.ts", "lib.esnext.disposable.d.ts", ...(files.libs ?? [])],
    types: files.types,
    // the cells file is a module; let it see the UMD global \`torch\`
    allowUmdGlobalAccess: true,
    typeRoots: files.typeRoots,
  };
}

/** The virtual files' names and texts that do not depend on the cells (for collecting typings). */
export function notebookRoots(files: Pick<NotebookFiles, "baseDir" | "runtimeModule">): { prelude: [string, string]; torch: [string, string]; cells: string } {
  const at = (name: string) => `${files.baseDir.replace(/\/$/, "")}/${name}`;
  return {
    prelude: [at("__gradlab_prelude.d.ts"), preludeText],
    torch: [at("__gradlab_torch.d.ts"), torchText(files.runtimeModule)],
    cells: at("__gradlab_cells.ts"),
  };
}

/** A language service over the notebook; `handle` answers one request (null: nothing to say). */
export function notebookService(ts: typeof TS, files: NotebookFiles, initialCells: string[] = []): { handle(m: NotebookRequest): unknown } {
  const roots = notebookRoots(files);
  const [PRELUDE, prelude] = roots.prelude;
  const [TORCH, torch] = roots.torch;
  const CELLS = roots.cells;

  // The cells the checker sees: the most recent ones, up to a byte budget, so that checking a cell costs
  // the same in a long session as in a short one (an ever-growing history made every cell slower and the
  // process bigger: 445 → 678 MB over 1,000 cells). Names declared only in cells that fell out of the
  // window stay known, as `any` (the kernel's live values still complete them).
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
    while (historyBytes > files.historyBytes && history.length > 1) {
      historyBytes -= history.shift()!.length;
      for (const n of historyNames.shift()!) droppedNames.add(n);
    }
  }
  for (const c of initialCells) remember(c);

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

  function cellsText(): { text: string; offset: number } {
    const prefix = stubs() + history.map((c) => `${c}\n;\n`).join("");
    return { text: `${prefix}${current}\nexport {};\n`, offset: prefix.length };
  }

  const options = notebookOptions(ts, files);
  const virtual = (f: string) => (f === PRELUDE ? prelude : f === TORCH ? torch : f === CELLS ? cellsText().text : undefined);
  const host: TS.LanguageServiceHost = {
    getCompilationSettings: () => options,
    getScriptFileNames: () => [PRELUDE, TORCH, CELLS],
    getScriptVersion: (f) => (f === CELLS ? String(version) : "1"),
    getScriptSnapshot: (f) => {
      const text = virtual(f) ?? files.readFile(f);
      return text === undefined ? undefined : ts.ScriptSnapshot.fromString(text);
    },
    getCurrentDirectory: () => files.baseDir,
    getDefaultLibFileName: (o) => files.defaultLibFileName(o),
    fileExists: (f) => f === PRELUDE || f === TORCH || f === CELLS || files.fileExists(f),
    readFile: (f) => virtual(f) ?? files.readFile(f),
    readDirectory: files.readDirectory,
    directoryExists: files.directoryExists,
    getDirectories: files.getDirectories,
  };
  const service = ts.createLanguageService(host, ts.createDocumentRegistry());

  function setCurrent(code: string): number {
    current = code;
    version++;
    return cellsText().offset;
  }

  function handle(m: NotebookRequest): unknown {
    switch (m.op) {
      case "addCell":
        remember(m.code);
        version++;
        return undefined;
      case "forget":
        history.length = 0;
        historyNames.length = 0;
        historyBytes = 0;
        droppedNames.clear();
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

  // compile the notebook once now, so the first real request is fast
  try {
    service.getProgram();
  } catch {
    // reported on the first request
  }
  return {
    handle(m) {
      try {
        return handle(m);
      } catch {
        return null; // a request the service cannot answer gets null, as when it is not loaded
      }
    },
  };
}
