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
// That side benefit must not reach further than Python's does. V8 keeps one context per scope for all
// of its captured variables, and every closure made in that scope (or below it) keeps the whole
// context chain: a Python closure keeps only the cells it names. So a function-local variable that
// only the wrapping arrows read (`h = checkpoint(f, h)` in a loop) would be kept alive by any closure
// the function makes — measured: notebook 09's `checkpoint(f, …)` keeps `f` until backward, and `f`
// kept the forward's last `h` (64 MiB) through the forward's context. So in a scope where the user
// makes a closure, a variable that no closure of the user's reads or writes is passed to the arrow as
// an argument instead: it stays in its frame as it would without the transform. Variables the user's
// own closures capture live in a context anyway and are still closed over, and so are the variables
// of scopes that make no closure (a loop body's context dies with each turn, where a register of the
// frame would keep a block's last tensor until the function returns: measured in a cell's loop). An assignment `a = expr` wraps `expr` alone, so the
// variable it writes is not written from inside the arrow.
//
// Only statements that call something are wrapped; statements that contain `yield` or `super` are left
// alone (an arrow cannot yield; `super()` must stay in its constructor), and so is the cell's last
// expression (the transform turns it into the cell's value).

import { analyze } from "eslint-scope";

type Node = { type: string; start: number; end: number; [k: string]: any };
/** Wraps source [start, end) in `open` … `close`; wrappers of different passes nest by their extent. */
export type Wrap = (start: number, end: number, open: string, close: string) => void;

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
function scan(expr: Node): { calls: number; await: boolean; unsafe: boolean } {
  const r = { calls: 0, await: false, unsafe: false };
  const stack = [expr];
  while (stack.length) {
    const n = stack.pop()!;
    if (n !== expr && FUNCTIONS.has(n.type)) {
      // an arrow still sees the enclosing super/arguments: only a class or function body is opaque
      if (n.type === "ArrowFunctionExpression" && hasSuper(n)) r.unsafe = true;
      continue;
    }
    if (n.type === "CallExpression" || n.type === "NewExpression" || n.type === "TaggedTemplateExpression") r.calls++;
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

/** Function-local variables a wrapping arrow can take as arguments (see the header), by name, and
 *  where they are read or written: for each, every reference lies in the function that declares it. */
interface Locals {
  /** `home`: where the scope that declares the variable begins (a function or block node's start);
   *  `ready`: where a let, const or class binding leaves its temporal dead zone (0 for var, function, parameter) */
  refs: { pos: number; name: string; write: boolean; home: number; ready: number }[];
}

function analyzeLocals(root: Node): Locals {
  const manager = analyze(root as unknown as Parameters<typeof analyze>[0], { ecmaVersion: 2022, sourceType: "module", fallback: "iteration" });
  const refs: Locals["refs"] = [];
  type Scope = (typeof manager.scopes)[number];
  const CLOSURES = new Set(["function", "class-field-initializer", "class-static-block"]);
  const makesClosures = (s: Scope): boolean => s.childScopes.some((c) => CLOSURES.has(c.type) || makesClosures(c));
  for (const scope of manager.scopes) {
    // module scope: the cell's top-level names, which the transform makes globals
    if (scope.type === "module" || scope.type === "global") continue;
    // no closure of the user's is made in this scope: its context dies with the scope (a loop body's
    // with each turn), sooner than a frame's register would let go: keep closing over its variables
    if (!makesClosures(scope)) continue;
    for (const v of scope.variables) {
      if (v.name === "arguments") continue;
      const home = scope.variableScope;
      if (!v.references.every((r) => r.from.variableScope === home)) continue; // a closure of the user's captures it
      const at = (scope.block as unknown as Node).start;
      const d = v.defs[0];
      const lexical = d?.type === "ClassName" || (d?.type === "Variable" && (d.parent as unknown as Node).kind !== "var");
      const ready = lexical ? (d.node as unknown as Node).end : 0;
      for (const r of v.references) refs.push({ pos: (r.identifier as unknown as Node).start, name: v.name, write: r.isWrite(), home: at, ready });
    }
  }
  refs.sort((a, b) => a.pos - b.pos);
  return { refs };
}

/** The uncaptured locals `expr` reads and does not write (in source order), of the scopes around it:
 *  a function inside `expr` (`xs.map((s) => ...)`) reads its own parameters, which the arrow cannot pass. */
function argumentsFor(expr: Node, locals: Locals): string[] {
  const read = new Set<string>();
  const written = new Set<string>();
  for (const r of locals.refs) {
    if (r.pos < expr.start) continue;
    if (r.pos >= expr.end) break;
    if (r.home >= expr.start) continue;
    // a binding still in its temporal dead zone here (`flag ? new Later() : x` before `class Later`): read
    // as an argument, eagerly, it would throw where the code may not read it at all; the arrow closes over it
    (r.write || r.ready > expr.start ? written : read).add(r.name);
  }
  return [...read].filter((n) => !written.has(n));
}

/** `statement`: the expression is a whole statement, which may follow a line without a semicolon:
 *  starting it with `(` would make it a call of the line before (`b = f()\n(...)`), so it starts with
 *  `void`, which cannot continue an expression. `minCalls`: wrap only an expression that makes at least
 *  that many calls (an operand needs two to have a temporary of its own: see `wrapOperands`). */
function wrap(expr0: Node, insert: Wrap, locals: Locals, statement = false, minCalls = 1): void {
  // `a = b = expr`, `a += expr`: only `expr` goes in the arrow (the variables written stay outside)
  let expr = expr0;
  while (expr.type === "AssignmentExpression") expr = expr.right;
  if (expr !== expr0) statement = false;
  if (FUNCTIONS.has(expr.type)) return; // creating a function or class makes no temporaries
  const s = scan(expr);
  if (s.calls < minCalls || s.unsafe) return;
  const args = argumentsFor(expr, locals).join(", ");
  insert(expr.start, expr.end, (statement ? "void " : "") + (s.await ? `(await (async (${args}) => (` : `(((${args}) => (`), `))(${args}))`);
}

/**
 * Whether the statement-level expression `expr0` (an expression statement's or an initialiser) gets a
 * frame of its own: then what it evaluates, its variables' old values included, dies with the statement.
 */
export function framed(expr0: Node): boolean {
  let expr = expr0;
  while (expr.type === "AssignmentExpression") expr = expr.right;
  if (FUNCTIONS.has(expr.type)) return false;
  const s = scan(expr);
  return s.calls >= 1 && !s.unsafe;
}

/** Does evaluating `n` short-circuit on an optional link (`a?.b`, `f?.()`) before it ends? */
export function optionalChain(n: Node): boolean {
  for (let c = n; c.type === "MemberExpression" || c.type === "CallExpression"; c = c.type === "CallExpression" ? c.callee : c.object)
    if (c.optional) return true;
  return false;
}

/**
 * A call's operands (its arguments and its receiver) get frames of their own when computing one makes
 * temporaries: `linear2(act(linear1(x)))`. CPython frees linear1's output when `act` returns, since only
 * act's arguments held it; V8's interpreter keeps it in a register of the caller's frame until the frame
 * returns or reuses the register, so a forward written in nested calls would peak one activation above
 * torch's (measured in a block's forward: 4 activations against torch's 2). Wrapped, `linear2((() =>
 * act(linear1(x)))())` leaves only act's output, which linear2 holds as its argument in Python too. The
 * same holds for a receiver: in `f(x).g().h()`, f's output is freed when `g` returns. An operand that
 * makes a single call is the value the call holds anyway, so it is left as it is, and so is a receiver
 * inside an optional chain (wrapping it would cut the chain's short-circuit).
 */
function wrapOperands(call: Node, insert: Wrap, locals: Locals): void {
  for (const a of call.arguments as Node[]) wrap(a.type === "SpreadElement" ? a.argument : a, insert, locals, false, 2);
  const callee = call.callee as Node;
  if (call.type === "CallExpression" && callee.type === "MemberExpression" && !optionalChain(callee.object)) wrap(callee.object, insert, locals, false, 2);
}

/**
 * Wraps the expression of every expression statement and every variable initialiser in `root` (at
 * any depth: loops, blocks, function bodies) except those in `skip`, and the operands of every call
 * whose computation makes temporaries (`wrapOperands`). A node is wrapped before the nodes inside it, so
 * an outer frame's opening goes before an inner one's at the same position.
 */
export function wrapTemporaries(root: Node, insert: Wrap, skip: ReadonlySet<Node>): void {
  const locals = analyzeLocals(root);
  const stack = [root];
  while (stack.length) {
    const n = stack.pop()!;
    if (!skip.has(n)) {
      if (n.type === "ExpressionStatement" && !n.directive) wrap(n.expression, insert, locals, n.expression.start === n.start);
      else if (n.type === "VariableDeclarator" && n.init) wrap(n.init, insert, locals);
    }
    if (n.type === "CallExpression" || n.type === "NewExpression") wrapOperands(n, insert, locals);
    stack.push(...children(n));
  }
}
