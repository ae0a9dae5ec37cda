// Cell source (TypeScript) -> a script the executor can run in the main realm:
//  - esbuild strips types (keeping every import, since a notebook imports for later cells);
//  - top-level declarations become assignments to globals, so they persist and may be redeclared;
//  - imports become awaited dynamic imports resolved against the notebook's directory;
//  - the last expression statement becomes the cell's value;
//  - every loop body and function entry polls the interrupt flag (so interrupts stop loops and
//    recursion by throwing, and `finally` blocks run);
//  - each statement's temporaries get a frame of their own, so they die with the statement as in
//    Python (temporaries.ts);
//  - a tensor only one variable holds is released when the variable lets go of it (ownership.ts).
// Edits never add or remove newlines, so line numbers of esbuild's output (and its source map) hold.
import { transformSync, stop as stopEsbuild, type Message as EsbuildMessage } from "esbuild";
import { Parser } from "acorn";
import { createRequire } from "node:module";
import { join } from "node:path";
import { REPO } from "../repo.ts";
import { children, wrapTemporaries, type Wrap } from "./temporaries.ts";
import { TRANSFORMED, trackOwnership } from "./ownership.ts";

export const IRQ = "__gradlab_irq";
export const RT = "__gradlab";
/** global that keeps an otherwise dropped last expression alive through esbuild */
export const LAST = "__gradlab_last";
const LOOP_CHECK = `if(Atomics.load(${IRQ},0)!==0)${RT}.interrupted();`;
const CHECK_EXPR = `(Atomics.load(${IRQ},0)!==0&&${RT}.interrupted())`;

export interface Transformed {
  code: string;
  /** esbuild's source map; null when the cell was plain JavaScript (lines are unchanged) */
  map: string | null;
  names: string[];
  hasTopLevelValue: boolean;
  /** A 1-based line and column of `code` as a line and column of the JavaScript the transform read
   *  (what `map` maps on to the cell; the cell itself when `map` is null). */
  jsPosition: (line: number, col: number) => { line: number; col: number };
}

const lineStarts = (text: string) => {
  const starts = [0];
  for (let i = text.indexOf("\n"); i >= 0; i = text.indexOf("\n", i + 1)) starts.push(i + 1);
  return starts;
};

/** The transform's inserts never add lines but shift columns: undo them (see Transformed.jsPosition). */
function positionMapper(code: string, js: string, copied: number[]): Transformed["jsPosition"] {
  let codeLines: number[] | null = null;
  let jsLines: number[] | null = null;
  return (line, col) => {
    codeLines ??= lineStarts(code);
    jsLines ??= lineStarts(js);
    const at = (codeLines[line - 1] ?? 0) + col - 1;
    // the last piece copied from js that starts at or before `at`: inside it, or on text inserted after it
    let k = 0;
    while (k + 3 < copied.length && copied[k + 3] <= at) k += 3;
    const jsAt = copied[k + 1] + Math.min(copied[k + 2], Math.max(0, at - copied[k]));
    let l = 0;
    while (l + 1 < jsLines.length && jsLines[l + 1] <= jsAt) l++;
    return { line: l + 1, col: jsAt - jsLines[l] + 1 };
  };
}

export class CellSyntaxError extends Error {
  constructor(
    readonly errors: EsbuildMessage[],
    readonly sourcefile: string,
  ) {
    super(errors.map((e) => e.text).join("; "));
    this.name = "SyntaxError";
  }
}

type Node = { type: string; start: number; end: number; [k: string]: any };
/**
 * An insert or a replacement. Inserts at one position go: closings (of the wrapper that started last
 * first), then plain inserts (in the order made), then openings (of the wrapper that ends last first):
 * so wrappers from different passes (temporaries.ts, ownership.ts, this file's) nest by their extent.
 */
interface Edit {
  pos: number;
  end: number;
  text: string;
  order: number;
  /** 0: a wrapper's closing, 1: a plain insert or a replacement, 2: a wrapper's opening */
  kind: 0 | 1 | 2;
  /** for a wrapper's halves: the other end of what it wraps */
  other: number;
  /** of wrappers of the same extent, the outermost (a loop body's braces around its statement) */
  outer?: boolean;
}
function compareEdits(a: Edit, b: Edit): number {
  if (a.pos !== b.pos) return a.pos - b.pos;
  if (a.kind !== b.kind) return a.kind - b.kind;
  const rank = Number(!!b.outer) - Number(!!a.outer);
  if (a.kind === 0) return b.other - a.other || -rank || b.order - a.order;
  if (a.kind === 2) return b.other - a.other || rank || a.order - b.order;
  return a.order - b.order;
}

export function stripTypes(source: string, sourcefile: string) {
  // esbuild's service is a child process in the kernel's process group: a SIGINT sent to the group
  // (jupyter_client's signal_kernel, a terminal's Ctrl-C) ends it. Start a fresh one and retry (a
  // few times: signals may keep coming).
  const gone = /service (is no longer running|was stopped)/i;
  for (let attempt = 1; ; attempt++) {
    try {
      return esbuildTransform(source, sourcefile);
    } catch (e: any) {
      const died = gone.test(String(e?.message)) || gone.test(String(e?.errors?.[0]?.text));
      if (died && attempt < 4) {
        stopEsbuild();
        continue;
      }
      if (!died && Array.isArray(e?.errors) && e.errors.length) throw new CellSyntaxError(e.errors, sourcefile);
      throw e;
    }
  }
}

/** esbuild's options for a cell (GradLab Lite's Worker strips with the same ones, ahead of time). */
export const stripOptions = (sourcefile: string) =>
  ({
    loader: "ts",
    target: "es2022",
    sourcemap: "external",
    sourcefile,
    sourcesContent: false,
    tsconfigRaw: { compilerOptions: { verbatimModuleSyntax: true, experimentalDecorators: false } },
    logLevel: "silent",
  }) as const;

function esbuildTransform(source: string, sourcefile: string) {
  return transformSync(source, stripOptions(sourcefile));
}

const parse = (js: string) =>
  Parser.parse(js, { ecmaVersion: "latest", sourceType: "module", allowAwaitOutsideFunction: true, ranges: true }) as unknown as Node;

/** Plain JavaScript needs no type stripping: parse it directly (saves esbuild's ~1.5 ms round trip). */
function parseAsPlainJs(source: string): Node | null {
  // `f<T>(x)` is a generic call in TypeScript but two comparisons in JavaScript
  if (/<[\w\s,.[\]|&]+>\s*\(/.test(source)) return null;
  // acorn parses `using` declarations, which Node 20 cannot run: esbuild lowers them
  if (/\busing\s+[\w$]/.test(source)) return null;
  try {
    return parse(source);
  } catch {
    return null;
  }
}

/** True when the cell has no TypeScript syntax (and so nothing for the type checker to add). */
export function isPlainJs(source: string): boolean {
  return parseAsPlainJs(source) !== null;
}

/** `ownership: false` leaves out ownership.ts's calls (for tests that read another pass's output). */
export function transformCell(source: string, sourcefile: string, opts: { lastValue?: boolean; ownership?: boolean } = {}): Transformed {
  const plain = parseAsPlainJs(source);
  let js: string, map: string | null, ast: Node;
  if (plain) {
    js = source;
    map = null;
    ast = plain;
  } else {
    ({ code: js, map } = stripTypes(source, sourcefile));
    ast = parse(js);
  }
  if (!plain && opts.lastValue !== false && mayHaveDroppedValue(source, ast)) {
    // esbuild drops side-effect-free expression statements such as 'a' + 'b': find the cell's last
    // statement with the TypeScript parser (only in this rare case) and keep it alive as an assignment.
    const kept = keepLastExpression(source);
    if (kept) {
      ({ code: js, map } = stripTypes(kept, sourcefile));
      ast = parse(js);
    }
  }
  const { edits, insert, replace, wrap } = editList();
  const names = new Set<string>();
  const hoisted: string[] = [];
  let importCount = 0;

  const body: Node[] = ast.body;
  const lastIdx = opts.lastValue === false ? -1 : body.length - 1;
  // Statement temporaries get their own frame (temporaries.ts); tensors one variable holds are released
  // when it lets go (ownership.ts).
  const lastStmt = lastIdx >= 0 && body[lastIdx].type === "ExpressionStatement" ? body[lastIdx] : null;
  const unframed = new Set<Node>(lastStmt ? [lastStmt] : []);
  wrapTemporaries(ast, wrap, unframed);
  if (opts.ownership !== false) trackOwnership(ast, js, wrap, insert, unframed);
  // A dynamic import() in a script run by node:vm has no loader ("A dynamic import callback was not
  // specified"; Node 20 offers one only behind --experimental-vm-modules): it goes through the cell's
  // import, as static imports do, so both resolve a specifier the same way (relative to the notebook).
  for (const stack: Node[] = [ast]; stack.length; ) {
    const n = stack.pop()!;
    if (n.type === "ImportExpression") replace(n.start, (n.source as Node).start, `${RT}.import(`);
    stack.push(...children(n));
  }
  body.forEach((stmt0, idx) => {
    let stmt = stmt0;
    if (stmt.type === "ExportNamedDeclaration" || stmt.type === "ExportDefaultDeclaration") {
      if (!stmt.declaration) {
        replace(stmt.start, stmt.end, ";");
        return;
      }
      replace(stmt.start, stmt.declaration.start, "");
      stmt = stmt.declaration;
      if (stmt.type.endsWith("Expression")) return; // export default <expr>
    }
    switch (stmt.type) {
      case "ImportDeclaration": {
        const m = `__gradlab_m${importCount++}`;
        const parts = [`const ${m} = await ${RT}.import(${JSON.stringify(stmt.source.value)});`];
        for (const s of stmt.specifiers) {
          const local = s.local.name;
          names.add(local);
          if (s.type === "ImportNamespaceSpecifier") parts.push(`${local} = ${m};`);
          else if (s.type === "ImportDefaultSpecifier") parts.push(`${local} = ${RT}.defaultExport(${m});`);
          else {
            const imported = s.imported.type === "Literal" ? s.imported.value : s.imported.name;
            parts.push(`${local} = ${RT}.namedExport(${m}, ${JSON.stringify(imported)});`);
          }
        }
        replace(stmt.start, stmt.end, parts.join(" "));
        return;
      }
      case "VariableDeclaration": {
        if (stmt.kind !== "var" && stmt.kind !== "let" && stmt.kind !== "const") return; // using
        replace(stmt.start, stmt.declarations[0].start, ";");
        for (const d of stmt.declarations) {
          collectPattern(d.id, names);
          if (d.init) {
            wrap(d.id.start, d.init.end, "(", ")");
            walkLoops(d.init, insert, wrap);
          } else wrap(d.id.start, d.id.end, "(", stmt.kind === "var" ? ")" : " = void 0)");
        }
        return;
      }
      case "FunctionDeclaration":
        names.add(stmt.id.name);
        hoisted.push(`globalThis[${JSON.stringify(stmt.id.name)}] = ${stmt.id.name};`);
        walkLoops(stmt, insert, wrap);
        return;
      case "ClassDeclaration":
        names.add(stmt.id.name);
        wrap(stmt.start, stmt.end, `${stmt.id.name} = `, ";");
        walkLoops(stmt, insert, wrap);
        return;
      case "ExpressionStatement":
        walkLoops(stmt, insert, wrap);
        if (idx === lastIdx) {
          // around the whole statement: the expression may be parenthesized, e.g. ({ a: 1 })
          let end = stmt.end;
          while (end > stmt.start && /[\s;]/.test(js[end - 1])) end--;
          wrap(stmt.start, end, "return (", ");", true);
        }
        return;
      default:
        walkLoops(stmt, insert, wrap);
    }
  });

  const { out, copied } = applyEdits(js, edits, `(async () => {${hoisted.join("")}`);
  const code = `${out}\n})()`;
  const last = lastIdx >= 0 ? body[lastIdx] : undefined;
  return { code, map, names: [...names], hasTopLevelValue: last?.type === "ExpressionStatement", jsPosition: positionMapper(code, js, copied) };
}

/** The edits of one transform, in the order they are made (see Edit). */
function editList() {
  const edits: Edit[] = [];
  let order = 0;
  return {
    edits,
    insert: (pos: number, text: string) => void edits.push({ pos, end: pos, text, order: order++, kind: 1, other: pos }),
    replace: (pos: number, end: number, text: string) => void edits.push({ pos, end, text, order: order++, kind: 1, other: pos }),
    wrap: (start: number, end: number, open: string, close: string, outer?: boolean) => {
      edits.push({ pos: start, end: start, text: open, order: order++, kind: 2, other: end, outer });
      edits.push({ pos: end, end, text: close, order: order++, kind: 0, other: start, outer });
    },
  };
}

/** `prefix`, then `js` with the edits made; `copied`: where each piece of `js` copied verbatim lies in
 *  the result, as [result offset, js offset, length] triples. */
function applyEdits(js: string, edits: Edit[], prefix: string): { out: string; copied: number[] } {
  edits.sort(compareEdits);
  let out = prefix;
  let cur = 0;
  const copied: number[] = [];
  for (const e of edits) {
    if (e.pos < cur) continue; // overlapped by a replacement
    copied.push(out.length, cur, e.pos - cur);
    out += js.slice(cur, e.pos) + e.text;
    cur = e.end;
  }
  copied.push(out.length, cur, js.length - cur);
  out += js.slice(cur);
  return { out, copied };
}

/**
 * A module of a plain script (kernel/register.ts's hooks; JavaScript, TypeScript already stripped) made to
 * let go of tensors where a cell does: each statement's temporaries get a frame of their own
 * (temporaries.ts), and a tensor only one variable holds is released when the variable lets go of it
 * (ownership.ts). Each function carries ownership.ts's TRANSFORMED mark, which tells the runtime that it
 * marks what it keeps of its arguments (a cell's functions are told by their interrupt checks: a script has
 * no interrupt flag to poll, and a check in every loop turn made a tight loop 5–8 times slower). Unlike a
 * cell, the module stays a module: its declarations, imports and exports are left as they are. Lines stay
 * where they were (a source map of the code's own still holds for lines; columns shift).
 */
/** A module's JavaScript with the transform's edits, and where each piece of `js` was copied to (for its
 *  source map: source-map.ts). */
export function transformModule(js: string): { out: string; copied: number[] } {
  const ast = parse(js);
  const { edits, insert, wrap } = editList();
  const none = new Set<Node>();
  wrapTemporaries(ast, wrap, none);
  trackOwnership(ast, js, wrap, insert, none, "module");
  for (const stack: Node[] = [ast]; stack.length; ) {
    const n = stack.pop()!;
    if (FUNCTIONS.has(n.type)) insert((n.body as Node).start + ((n.body as Node).type === "BlockStatement" ? 1 : 0), TRANSFORMED);
    stack.push(...children(n));
  }
  return applyEdits(js, edits, "");
}

function collectPattern(p: Node | null, names: Set<string>): void {
  if (!p) return;
  switch (p.type) {
    case "Identifier":
      names.add(p.name);
      break;
    case "ObjectPattern":
      for (const prop of p.properties) collectPattern(prop.type === "RestElement" ? prop.argument : prop.value, names);
      break;
    case "ArrayPattern":
      for (const el of p.elements) collectPattern(el, names);
      break;
    case "RestElement":
      collectPattern(p.argument, names);
      break;
    case "AssignmentPattern":
      collectPattern(p.left, names);
      break;
  }
}

const LOOPS = new Set(["ForStatement", "ForInStatement", "ForOfStatement", "WhileStatement", "DoWhileStatement"]);
const FUNCTIONS = new Set(["FunctionDeclaration", "FunctionExpression", "ArrowFunctionExpression"]);

function walkLoops(node: Node, insert: (pos: number, text: string) => void, wrap: (...a: [...Parameters<Wrap>, boolean?]) => void): void {
  const stack: Node[] = [node];
  while (stack.length) {
    const n = stack.pop()!;
    if (LOOPS.has(n.type)) {
      const b = n.body as Node;
      if (b.type === "BlockStatement") insert(b.start + 1, LOOP_CHECK);
      else wrap(b.start, b.end, `{${LOOP_CHECK}`, "}", true);
    } else if (FUNCTIONS.has(n.type)) {
      const b = n.body as Node;
      if (b.type === "BlockStatement") {
        // after a directive prologue ("use strict"), which must stay first
        const first = b.body[0];
        const directive = first?.type === "ExpressionStatement" && typeof first.directive === "string";
        if (directive) insert(first.end, LOOP_CHECK);
        else insert(b.start + 1, LOOP_CHECK);
      } else wrap(b.start, b.end, `(${CHECK_EXPR},`, ")");
    }
    stack.push(...children(n));
  }
}

function mayHaveDroppedValue(source: string, ast: Node): boolean {
  const trimmed = source.replace(/\/\/[^\n]*$/gm, "").replace(/[\s;]+$/, "");
  if (!trimmed) return false;
  const last = ast.body[ast.body.length - 1];
  const endsLikeLiteral = /['"`]$/.test(trimmed);
  return endsLikeLiteral || (!last && !trimmed.endsWith("}"));
}

let tsModule: typeof import("typescript") | null = null;

function keepLastExpression(source: string): string | null {
  try {
    tsModule ??= createRequire(join(REPO, "package.json"))("typescript") as typeof import("typescript");
  } catch {
    return null; // no TypeScript compiler here (GradLab Lite's Worker): the dropped value stays dropped
  }
  const ts = tsModule;
  const sf = ts.createSourceFile("cell.ts", source, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const last = sf.statements[sf.statements.length - 1];
  if (!last || !ts.isExpressionStatement(last)) return null;
  const e = last.expression;
  const start = e.getStart(sf);
  return `${source.slice(0, start)}${LAST} = (${source.slice(start, e.end)})${source.slice(e.end)}`;
}
