// Temporaries die with their statement, as in Python.
//
// CPython frees `model(x).pow(2)` the moment `.mean()` has consumed it. V8's interpreter keeps the
// intermediate results of a statement in its frame's registers until something else overwrites them,
// so a tensor that no variable names can stay reachable for the rest of the cell and be counted by
// memory_allocated() (GradLab reclaims unreachable tensors before every figure: src/memory/lifetime.ts).
// Measured: `const loss = model(x).pow(2).mean()` kept pow's [128, 256] output (128 KiB) alive after
// backward. Running each statement's expression in its own arrow function gives the temporaries a frame
// that is gone when the statement ends; only the value the statement keeps survives. A side benefit:
// variables that these arrows close over live in a context, which optimised code never drops early, so
// a tensor bound to a variable lives until the variable is rebound, as in Python.
//
// Only statements that call something are wrapped; statements that contain `yield` or `super` are left
// alone (an arrow cannot yield; `super()` must stay in its constructor), and so is the cell's last
// expression (the transform turns it into the cell's value).

type Node = { type: string; start: number; end: number; [k: string]: any };
/** Inserts `text` at `pos`; `late` inserts go after, early ones before, any other insert at that position. */
export type Insert = (pos: number, text: string, placement: "early" | "late") => void;

const FUNCTIONS = new Set(["FunctionDeclaration", "FunctionExpression", "ArrowFunctionExpression", "ClassDeclaration", "ClassExpression"]);

/** An ESTree node's child nodes, in source order of their keys. */
export function children(n: Node): Node[] {
  const out: Node[] = [];
  for (const key in n) {
    if (key === "type" || key === "start" || key === "end") continue;
    const v = n[key];
    if (Array.isArray(v)) {
      for (const c of v) if (c && typeof c.type === "string") out.push(c);
    } else if (v && typeof v === "object" && typeof v.type === "string") out.push(v);
  }
  return out;
}

/** What evaluating `expr` does, not counting the bodies of functions it creates. */
function scan(expr: Node): { calls: boolean; await: boolean; unsafe: boolean } {
  const r = { calls: false, await: false, unsafe: false };
  const stack = [expr];
  while (stack.length) {
    const n = stack.pop()!;
    if (n !== expr && FUNCTIONS.has(n.type)) {
      // an arrow still sees the enclosing super/arguments: only a class or function body is opaque
      if (n.type === "ArrowFunctionExpression" && hasSuper(n)) r.unsafe = true;
      continue;
    }
    if (n.type === "CallExpression" || n.type === "NewExpression" || n.type === "TaggedTemplateExpression") r.calls = true;
    if (n.type === "AwaitExpression" || (n.type === "ForOfStatement" && n.await)) r.await = true;
    if (n.type === "YieldExpression" || n.type === "Super") r.unsafe = true;
    stack.push(...children(n));
  }
  return r;
}

function hasSuper(n: Node): boolean {
  const stack = [n];
  while (stack.length) {
    const c = stack.pop()!;
    if (c.type === "Super") return true;
    if (c !== n && (c.type === "FunctionExpression" || c.type === "FunctionDeclaration" || c.type.startsWith("Class"))) continue;
    stack.push(...children(c));
  }
  return false;
}

/** `statement`: the expression is a whole statement, which may follow a line without a semicolon:
 *  starting it with `(` would make it a call of the line before (`b = f()\n(...)`), so it starts with
 *  `void`, which cannot continue an expression. */
function wrap(expr: Node, insert: Insert, statement = false): void {
  if (FUNCTIONS.has(expr.type)) return; // creating a function or class makes no temporaries
  const s = scan(expr);
  if (!s.calls || s.unsafe) return;
  insert(expr.start, (statement ? "void " : "") + (s.await ? "(await (async () => (" : "((() => ("), "late");
  insert(expr.end, "))())", "early");
}

/**
 * Wraps the expression of every expression statement and every variable initialiser in `root` (at
 * any depth: loops, blocks, function bodies) except those in `skip`.
 */
export function wrapTemporaries(root: Node, insert: Insert, skip: ReadonlySet<Node>): void {
  const stack = [root];
  while (stack.length) {
    const n = stack.pop()!;
    if (!skip.has(n)) {
      if (n.type === "ExpressionStatement" && !n.directive) wrap(n.expression, insert, n.expression.start === n.start);
      else if (n.type === "VariableDeclarator" && n.init) wrap(n.init, insert);
    }
    stack.push(...children(n));
  }
}
