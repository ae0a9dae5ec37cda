// Tensors freed where CPython frees them, without a garbage collection, where the cell's code shows it.
//
// `y = y.add(1)` in a loop drops the previous `y` at each turn. The runtime only learns that a handle is
// unreachable from a full collection, so a chain of ops paid one per op (issue 20). But the transform
// sees every place the cell's code puts a value: it tells the runtime (src/memory/ownership.ts), and a
// handle only ever held by one variable is released when that variable lets go of it. Three rewrites:
//   - an assignment or declaration of a tracked variable, as a statement of its own, becomes
//     `y = own(mark(), <rhs>, <old y>)`: the old handle is released if the variable owned it, and the
//     new one is owned if the right-hand side made it;
//   - every expression whose value the code puts somewhere else (an argument, an array or object
//     element, a property, a variable that is not tracked, a thrown or yielded value, a default) becomes
//     `e(<expr>)`, which marks a handle (or the handles directly in an array or a plain object) as
//     possibly kept: it is then never released early (`t(<expr>)` for what a pattern takes apart into a
//     function's own locals: kept until the function ends, not stored);
//   - at the end of a block, `drop(...)` releases what its tracked variables still own, and
//     `return x` of a tracked variable hands its handle to the caller (`give`).
// Receivers (`y.add(1)`), operands of arithmetic and comparisons, and conditions keep no reference.
// Tracked variables: those declared by `let`/`const`/`var` with a plain name (not in a loop's head) that
// no function nested in their own reads or writes (a closure could outlive the block), and the cell's
// globals (a closure reads a global's current value, never an old one). Everything not tracked is left
// to the collector, as before.

import { analyze } from "eslint-scope";
import { children, framed, optionalChain, type Wrap } from "./temporaries.ts";

type Node = { type: string; start: number; end: number; [k: string]: any };
const RT = "__gradlab";
/** transform.ts's interrupt flag, checked at every function's entry */
const IRQ = "__gradlab_irq";

/** Values that are never a tensor or a container of one the code could keep. */
const INERT = new Set([
  "Literal",
  "TemplateLiteral",
  "FunctionExpression",
  "ArrowFunctionExpression",
  "ClassExpression",
  "UnaryExpression",
  "BinaryExpression",
  "UpdateExpression",
  "ObjectExpression", // its values are wrapped one by one
  "ArrayExpression", // its elements are
  "ImportExpression",
]);
const FUNCTION = new Set(["FunctionDeclaration", "FunctionExpression", "ArrowFunctionExpression"]);
const FOR_HEADS = new Set(["ForStatement", "ForInStatement", "ForOfStatement"]);

/** Whether evaluating `n` may suspend (an await or a yield outside the functions it makes). */
function suspends(n: Node): boolean {
  const stack = [n];
  while (stack.length) {
    const c = stack.pop()!;
    if (c.type === "AwaitExpression" || c.type === "YieldExpression" || (c.type === "ForOfStatement" && c.await)) return true;
    if (c !== n && (FUNCTION.has(c.type) || c.type.startsWith("Class"))) continue;
    stack.push(...children(c));
  }
  return false;
}

type Scope = ReturnType<typeof analyze>["scopes"][number];
type Variable = Scope["variables"][number];
const CLOSURES = new Set(["function", "class-field-initializer", "class-static-block"]);
const makesClosures = (s: Scope): boolean => s.childScopes.some((c) => CLOSURES.has(c.type) || makesClosures(c));

/** Marks a function the argument policy must distrust: it may keep an argument without a mark. */
const UNTRACKED = "/*gradlab:untracked*/";
/** Marks a function of a module the transform saw (transformModule), as a cell's interrupt check does. */
export const TRANSFORMED = "/*gradlab:transformed*/";

/** `insert` puts a statement at a position (after the closings of wrappers that end there). */
/**
 * `level`: what the top level is. A cell's (the transform makes its declarations globals, which a later
 * cell may declare again: a declaration releases the value it replaces) or a module's (kernel/register.ts:
 * a module's declarations are its own, read before they are made only in their temporal dead zone).
 */
export function trackOwnership(
  root: Node,
  js: string,
  wrapRange: Wrap,
  insert: (pos: number, text: string) => void,
  unframed: ReadonlySet<Node>,
  level: "cell" | "module" = "cell",
): void {
  const manager = analyze(root as unknown as Parameters<typeof analyze>[0], { ecmaVersion: 2022, sourceType: "module" });
  // the calls this pass writes name the runtime by these globals: code that declares one would get its own
  for (const sc of manager.scopes)
    for (const v of sc.variables)
      if (v.name.startsWith(RT) && v.defs.length > 0)
        throw new SyntaxError(`${v.name}: names that begin with ${RT} are GradLab's own (the calls its transform writes into the code use them): rename it`);
  const functions = manager.scopes.filter((sc) => sc.type === "function");
  const distrust = (sc: Scope) => {
    const body = (sc.block as unknown as Node).body as Node;
    insert(body.start + (body.type === "BlockStatement" ? 1 : 0), UNTRACKED);
  };
  // Direct eval can read and keep any local: leave such a cell to the collector, and its functions too
  // (they carry no marks). Only a call of the name eval is direct: not `net.eval()`, not a comment.
  if (manager.scopes.some((sc) => sc.directCallToEvalScope)) {
    for (const sc of functions) distrust(sc);
    return;
  }
  // A rest parameter or `arguments` holds the arguments in an array the function may copy by a method
  // (`saved = ts.slice()`), which marks nothing.
  for (const sc of functions)
    if (sc.isArgumentsMaterialized() || (sc.block as unknown as Node).params.some((p: Node) => p.type === "RestElement")) distrust(sc);
  const parents = new Map<Node, Node>();
  for (const stack: Node[] = [root]; stack.length; ) {
    const n = stack.pop()!;
    for (const c of children(n)) {
      parents.set(c, n);
      stack.push(c);
    }
  }
  // identifier node -> the variable it names (null: a global the cell does not declare)
  const resolved = new Map<Node, Variable | null>();
  for (const s of manager.scopes) for (const r of s.references) resolved.set(r.identifier as unknown as Node, r.resolved);

  const tracked = new Set<Variable>();
  /** tracked variables a pattern binds -> whether they can be let go of at their block's end (atEnd) */
  const patterned = new Map<Variable, boolean>();
  /**
   * block node (a function's body for its `var`s and top-level `let`s) -> its tracked variables: released
   * at its end where `atEnd` (when it completes normally), or by a `return` below it
   */
  const localsOf = new Map<Node, Array<{ name: string; at: number; hoisted: boolean; atEnd: boolean }>>();
  for (const scope of manager.scopes) {
    if (scope.type === "global" || scope.type === "switch" || scope.type === "with" || scope.type === "catch") continue;
    const cellLevel = scope.type === "module";
    for (const v of scope.variables) {
      const declared = v.defs.length > 0 && v.defs.every((d) => d.type === "Variable");
      const plain = declared && v.defs.every((d) => (d.node as unknown as Node).id.type === "Identifier");
      const own = v.references.every((r) => r.from.variableScope === scope.variableScope);
      const head = v.defs.some((d) => FOR_HEADS.has(parents.get(d.parent as unknown as Node)?.type ?? ""));
      // bound by a pattern (`const { grad } = p`), in a function or block, read by no closure: named while
      // it holds a value (see markDestructured); in a for-of or for-in head (`for (const [n, p] of ...)`),
      // for the turn
      if (declared && !plain && !cellLevel && own && v.defs.length === 1) {
        const decl = v.defs[0].parent as unknown as Node;
        const loop = parents.get(decl);
        if (!head || (loop?.type !== "ForStatement" && decl.kind !== "var")) {
          patterned.set(v, !makesClosures(scope));
          tracked.add(v);
        }
        if (head) continue;
      } else if (!plain || head) continue;
      if (!cellLevel && !own) continue;
      tracked.add(v);
      if (cellLevel) continue;
      const block = scope.block as unknown as Node;
      const body = FUNCTION.has(block.type) ? (block.body as Node) : block;
      if (body.type !== "BlockStatement") continue;
      let locals = localsOf.get(body);
      if (!locals) localsOf.set(body, (locals = []));
      const d = v.defs[0];
      // the release at the block's end reads the variables in an arrow (see own): where the user makes
      // closures, that arrow would make them context variables, which outlive the block (temporaries.ts)
      locals.push({ name: v.name, at: (d.node as unknown as Node).start, hoisted: (d.parent as unknown as Node).kind === "var", atEnd: !makesClosures(scope) });
    }
  }
  // A function of a cell is trusted to mark what it keeps of its arguments (settle): a parameter that a
  // closure of its own reads, or `arguments`, may outlive the call, so the values are marked on entry.
  for (const scope of manager.scopes) {
    if (scope.type !== "function") continue;
    const kept = scope.variables.filter((v) =>
      v.name === "arguments" ? v.references.length > 0 : v.defs.some((d) => d.type === "Parameter") && v.references.some((r) => r.from.variableScope !== scope),
    );
    if (!kept.length) continue;
    const marks = kept.map((v) => (v.name === "arguments" ? `${RT}.es(arguments)` : `${RT}.e(${v.name})`)).join(", ");
    const fn = scope.block as unknown as Node;
    const body = fn.body as Node;
    if (body.type !== "BlockStatement") wrapRange(body.start, body.end, `(${marks}, `, ")");
    else {
      // after a directive prologue ("use strict"), which must stay first
      const first = (body.body as Node[])[0];
      const directive = first?.type === "ExpressionStatement" && typeof first.directive === "string";
      insert(directive ? first.end : body.start + 1, `${marks};`);
    }
  }

  /** What a `return` at `ret` ends: the tracked locals of the blocks around it, up to its function. */
  const endedBy = (ret: Node): string[] => {
    const names: string[] = [];
    for (let c = ret, n = parents.get(ret); n && !FUNCTION.has(n.type); c = n, n = parents.get(n)) {
      // a `finally` still runs after the return's value is computed, and may use any local: release
      // none here (the collector frees them), or `finally { stat = h.sum() }` found h disposed
      if (n.type === "TryStatement" && n.finalizer && c !== n.finalizer) return [];
      for (const l of localsOf.get(n) ?? []) if (l.hoisted || l.at < ret.start) names.push(l.name);
    }
    return names;
  };

  const wrap = (n: Node, open: string, close: string) => wrapRange(n.start, n.end, open, close);
  /** The function a node is in (undefined at the top level). */
  const functionOf = (n: Node): Node | undefined => {
    let p = parents.get(n);
    while (p && !FUNCTION.has(p.type)) p = parents.get(p);
    return p;
  };
  /** A variable of the top level a returned value may be: a cell's global (also one of an earlier cell) or
   *  a module's own tracked variable or import. */
  const topLevel = (id: Node): boolean => {
    const v = resolved.get(id);
    if (v === null) return level === "cell";
    if (v === undefined) return false;
    return (tracked.has(v) && v.scope.type === "module") || v.defs.some((d) => d.type === "ImportBinding");
  };
  /** Whether evaluating `e` gives the value of a variable of the top level where it gives a variable's. */
  const mayBeTopLevel = (e: Node | null | undefined): boolean => {
    if (!e) return false;
    switch (e.type) {
      case "Identifier":
        return topLevel(e);
      case "ConditionalExpression":
        return mayBeTopLevel(e.consequent) || mayBeTopLevel(e.alternate);
      case "LogicalExpression":
        return mayBeTopLevel(e.left) || mayBeTopLevel(e.right);
      case "SequenceExpression":
        return mayBeTopLevel((e.expressions as Node[]).at(-1));
      case "AwaitExpression":
        return mayBeTopLevel(e.argument);
      default:
        return false;
    }
  };
  /** The variables of the top level `e` reads (not in the functions it makes). */
  const topLevelIn = (e: Node): string[] => {
    const names = new Set<string>();
    for (const stack = [e]; stack.length; ) {
      const c = stack.pop()!;
      if (c !== e && (FUNCTION.has(c.type) || c.type.startsWith("Class"))) continue;
      if (c.type === "Identifier" && topLevel(c)) names.add(c.name);
      stack.push(...children(c));
    }
    return [...names];
  };
  /**
   * A value a function hands out (its return, a concise arrow's body) that a variable of the top level may
   * still name: given to native code (map, a getter's reader), it may be stored, and the variable, rebound,
   * would release it. Handed out (`ho`: kept unless the cell's code that receives it claims it, see
   * src/memory/ownership.ts) where it is the variable's value itself; where a call may return it
   * (`detach_or_self(w)`, `w.requires_grad_()`), `same` hands it out only if it is one of the variables'
   * values when it is returned.
   */
  const handOut = (e: Node | null | undefined) => {
    if (!e || inert(e)) return;
    if (mayBeTopLevel(e)) wrap(e, `${RT}.ho(`, ")");
    else {
      const names = topLevelIn(e);
      if (names.length) wrap(e, `${RT}.same(`, `, () => [${names.join(", ")}])`);
    }
  };
  const inert = (n: Node) => INERT.has(n.type) || (n.type === "Identifier" && n.name === "undefined");
  const escape = (n: Node | null | undefined) => {
    if (n && !inert(n)) wrap(n, `${RT}.e(`, ")");
  };
  /**
   * A value in an array or object literal a function returns (`return [gx, gw]`, `(x) => ({ h })`):
   * taken, never released early, but not stored: a custom backward's fresh gradients, returned so, are
   * not the user's to keep (what the caller keeps of the literal, it marks itself).
   */
  const hand = (n: Node | null | undefined) => {
    if (n && !inert(n)) wrap(n, `${RT}.t(`, ")");
  };
  const returned = (literal: Node): boolean => {
    const p = parents.get(literal);
    return (p?.type === "ReturnStatement" && p.argument === literal) || (p?.type === "ArrowFunctionExpression" && p.body === literal);
  };
  /**
   * A call whose arguments are lent (settle: see src/memory/ownership.ts): for `f(x)`, settle's opening
   * (f's name, read again); for `o.m(x)`, settleOn's opening and the receiver `o` to record (evaluated
   * once: a getter in it must not run twice). Null for an optional link, super, a private or computed
   * method name, `new o.C(x)` (a wrapper would change what `new` applies to), or where the receiver or
   * the arguments could suspend (another cell's code would share the stack meanwhile).
   */
  const lendable = (call: Node): { open: string; receiver?: Node } | null => {
    const callee = call.callee as Node;
    if (call.optional || parents.get(call)?.type === "ChainExpression") return null;
    if ((call.arguments as Node[]).some(suspends)) return null;
    if (callee.type === "Identifier") return { open: `${RT}.settle(${RT}.depth(), ${callee.name}, ` };
    if (call.type !== "CallExpression" || callee.type !== "MemberExpression" || callee.optional) return null;
    const o = callee.object as Node;
    if (o.type === "Super" || suspends(o)) return null;
    // `a?.b.m(x)`: a wrapper around `a?.b` would end the chain's short-circuit there
    for (let c = o; c.type === "MemberExpression" || c.type === "CallExpression"; c = c.type === "CallExpression" ? c.callee : c.object)
      if (c.optional) return null;
    const p = callee.property as Node;
    const key = !callee.computed ? (p.type === "Identifier" ? JSON.stringify(p.name) : null) : p.type === "Literal" ? js.slice(p.start, p.end) : null;
    return key === null ? null : { open: `${RT}.so(${RT}.depth(), ${key}, `, receiver: o };
  };
  /** `name = rhs` as a statement: the variable it writes if it is tracked, else null */
  const trackedTarget = (id: Node): { name: string; old: string } | null => {
    if (id.type !== "Identifier" || id.name.startsWith(RT)) return null;
    const v = resolved.get(id);
    if (v === undefined) return null;
    // a global of an earlier cell; in a module, a global no code here declares: left to the collector
    if (v === null) return level === "cell" ? { name: id.name, old: `globalThis[${JSON.stringify(id.name)}]` } : null;
    return tracked.has(v) ? { name: id.name, old: id.name } : null;
  };
  // An argument stays in a register of the frame that made the call until something overwrites it, and
  // a register keeps a tensor alive: the old value must be read inside the statement's own frame
  // (temporaries.ts), which ends with it. Where the statement has none, nothing is owned.
  const own = (stmt: Node, rhs: Node, old: string | null): boolean => {
    if (rhs.type === "ImportExpression" || unframed.has(stmt) || !framed(rhs)) return false;
    wrap(rhs, `${RT}.own(${RT}.mark(), `, old ? `, ${old})` : ")");
    return true;
  };
  const ownedStatements = new Set<Node>();

  for (const stack: Node[] = [root]; stack.length; ) {
    const n = stack.pop()!;
    switch (n.type) {
      case "ExpressionStatement": {
        const a = n.expression;
        // `await step();` drops what step handed out: claimed (see handOut)
        if (a.type === "AwaitExpression") wrap(a, `${RT}.c(`, ")");
        if (a.type === "AssignmentExpression" && a.operator === "=") {
          markDestructured(n, [a.left]);
          const t = trackedTarget(a.left);
          if (t && own(n, a.right, t.old)) ownedStatements.add(a);
        }
        break;
      }
      case "VariableDeclaration": {
        const head = FOR_HEADS.has(parents.get(n)?.type ?? "");
        markDestructured(
          n,
          (n.declarations as Node[]).map((d) => d.id),
        );
        for (const d of n.declarations as Node[]) {
          if (!d.init) continue;
          const v = d.id.type === "Identifier" ? resolved.get(d.id) : undefined;
          // a declaration at the cell's level or with `var` may overwrite a value of its own
          const rebinds = v && ((level === "cell" && v.scope.type === "module") || n.kind === "var");
          if (!head && v && tracked.has(v) && own(d, d.init, rebinds ? d.id.name : null)) continue;
          // a new local named after a value that exists (`const g = w.grad`): counted as named, so that
          // the runtime, letting go of it, leaves it to the variable (src/memory/ownership.ts, named)
          if (!head && v && tracked.has(v) && !rebinds && !inert(d.init)) wrap(d.init, `${RT}.n(`, ")");
          else if (!namesBound(d)) escape(d.init);
        }
        break;
      }
      case "AssignmentExpression":
        if (!ownedStatements.has(n)) escape(n.right);
        break;
      case "CallExpression":
      case "NewExpression": {
        if (n.type === "CallExpression") receiverTemporary(n);
        const args = n.arguments as Node[];
        for (const a of args) if (a.type === "SpreadElement") wrap(a.argument, `${RT}.es(`, ")");
        const lent = lendable(n);
        if (lent && args.some((a) => a.type !== "SpreadElement" && !inert(a))) {
          // an argument that is a call's result (`f(g(x))`) is a temporary: released once f returned, as
          // CPython does, unless f kept it (settle runs first) or returned it
          const temporaries = args.filter((a) => a.type === "CallExpression" && !optionalChain(a));
          for (const _ of temporaries) wrap(n, `${RT}.after(`, ")");
          wrap(n, lent.open, ")");
          if (lent.receiver) wrap(lent.receiver, `${RT}.rv(`, ")");
          for (const a of args)
            if (a.type !== "SpreadElement" && !inert(a)) {
              wrap(a, `${RT}.p(`, ")");
              if (temporaries.includes(a)) wrap(a, `${RT}.hold(${RT}.mark(), `, ")");
            }
        } else for (const a of args) escape(a.type === "SpreadElement" ? null : a);
        break;
      }
      case "ArrayExpression": {
        const mark = returned(n) ? hand : escape;
        for (const el of n.elements as Array<Node | null>) {
          if (el?.type === "SpreadElement") wrap(el.argument, `${RT}.es(`, ")");
          else mark(el);
        }
        break;
      }
      case "Property": {
        const object = parents.get(n);
        if (object?.type !== "ObjectExpression" || n.kind !== "init" || n.method) break;
        const call = returned(object) ? "t" : "e";
        // `{ t }` is `{ t: t }`: the wrapped value needs the key written out
        if (n.shorthand) wrap(n.value, `${n.key.name}: ${RT}.${call}(`, ")");
        else if (!inert(n.value)) wrap(n.value, `${RT}.${call}(`, ")");
        break;
      }
      case "PropertyDefinition":
      case "AssignmentPattern":
        escape(n.type === "PropertyDefinition" ? n.value : n.right);
        break;
      case "ThrowStatement":
        escape(n.argument);
        break;
      case "YieldExpression":
        if (!n.delegate) escape(n.argument);
        break;
      case "TaggedTemplateExpression":
        for (const e of n.quasi.expressions as Node[]) escape(e);
        break;
      case "ArrowFunctionExpression":
        // a concise body is a return (see ReturnStatement)
        if (n.body.type !== "BlockStatement") handOut(n.body);
        break;
      case "ExportDefaultDeclaration":
        // an importer's binding names the value, for good
        if (!FUNCTION.has(n.declaration.type) && !n.declaration.type.startsWith("Class") && mayBeTopLevel(n.declaration)) escape(n.declaration);
        break;
      case "ForOfStatement":
        // `for (snap[0] of grads)`: each value goes into a property, which no mark reaches: the values in
        // an array or a plain object iterated are marked where they are
        if (n.left.type === "MemberExpression") escape(n.right);
        break;
      case "ReturnStatement": {
        // The function's frame goes: its tracked locals are released, but for the one it returns, whose
        // handle is the caller's to own. (A returned value is not kept by the function: what else could
        // keep it went through a place that marked it.) Two exceptions: a value a variable of the top level
        // may still name is handed out (handOut: `() => best` given to map, a getter's `return state`), and
        // a generator's value, which its iterator hands out, is marked kept. (An async function's value is the awaiting variable's,
        // as a sync function's is the caller's: its promise awaited again after that variable let go of
        // it, from a cache, finds it freed. Marking it kept cost a full collection per step of a loop of
        // `const loss = await step()`.)
        const a = n.argument as Node | null;
        const fn = functionOf(n);
        const generator = !!fn && fn.generator;
        if (generator) escape(a);
        else handOut(a);
        const ended = endedBy(n);
        if (!ended.length) break;
        const v = a?.type === "Identifier" ? resolved.get(a) : undefined;
        const gives = a && v && tracked.has(v) && v.scope.type !== "module" && !generator ? "true" : "false";
        if (a) wrap(a, `${RT}.ret(${gives}, `, `, ${ended.join(", ")})`);
        else insert(n.start + "return".length, ` ${RT}.ret(false, undefined, ${ended.join(", ")})`);
        break;
      }
    }
    stack.push(...children(n));
  }

  /** Whether a declarator is a pattern whose variables all name their values (see patterned). */
  function namesBound(d: Node): boolean {
    if (d.id.type !== "ObjectPattern" && d.id.type !== "ArrayPattern") return false;
    const vars = manager.getDeclaredVariables(d as unknown as Parameters<typeof manager.getDeclaredVariables>[0]);
    return vars.length > 0 && vars.every((v) => patterned.has(v));
  }

  /**
   * `const { grad } = w`, `[a, b] = pair`: the values a pattern takes out of its source go into variables
   * no mark reaches (the source is marked, not what is read from it), and one the runtime also holds (a
   * gradient zero_grad replaces) was disposed under them. Once the statement has run, each variable a
   * pattern of a function or block binds names its value (`n`, as `const g = w.grad` does), and lets go
   * of it at the block's end (`drop`, with the block's other locals) or at the end of its loop's turn;
   * elsewhere (a cell's globals, variables a closure reads, an assignment) each value is marked taken
   * (`t`), for good. `stmt`: the declaration, or the assignment's statement.
   */
  function markDestructured(stmt: Node, targets: Node[]): void {
    const ids: Node[] = [];
    const collect = (p: Node | null): void => {
      if (!p) return;
      if (p.type === "Identifier") ids.push(p);
      else if (p.type === "ObjectPattern") for (const q of p.properties as Node[]) collect(q.type === "RestElement" ? q.argument : q.value);
      else if (p.type === "ArrayPattern") for (const q of p.elements as Array<Node | null>) collect(q);
      else if (p.type === "RestElement") collect(p.argument);
      else if (p.type === "AssignmentPattern") collect(p.left);
    };
    for (const t of targets) if (t.type === "ObjectPattern" || t.type === "ArrayPattern") collect(t);
    if (!ids.length) return;
    const declares = stmt.type === "VariableDeclaration";
    const named = (id: Node) => declares && patterned.has(resolved.get(id) as Variable);
    const marks = ids.map((id) => `${RT}.${named(id) ? "n" : "t"}(${id.name})`).join(", ");
    const parent = parents.get(stmt)!;
    if (FOR_HEADS.has(parent.type)) {
      if (parent.type === "ForStatement" || parent.left !== stmt) return; // `for (const [a] = xs; ...)`: not marked
      // the turn's variables let go at its end (not after a `continue`: then the collector frees them)
      const ends = ids.filter((id) => named(id) && patterned.get(resolved.get(id) as Variable)).map((id) => id.name);
      const body = parent.body as Node;
      const last = body.type === "BlockStatement" ? (body.body as Node[]).at(-1) : body;
      const end =
        ends.length && !(last && /^(Return|Throw|Break|Continue)Statement$/.test(last.type)) ? `;void ((() => ${RT}.drop(${ends.join(", ")}))());` : "";
      if (body.type === "BlockStatement") {
        insert(body.start + 1, `${marks};`);
        if (end) insert(body.end - 1, end);
      } else wrapRange(body.start, body.end, `{${marks};`, `${end}}`);
    } else if (parent.type === "Program" || parent.type === "BlockStatement" || parent.type === "StaticBlock" || parent.type === "SwitchCase") {
      insert(stmt.end, `;${marks};`);
    } else if (parent.type === "ExportNamedDeclaration") {
      insert(parent.end, `;${marks};`); // `export const { a } = o`
    } else wrapRange(stmt.start, stmt.end, "{", `;${marks};}`); // `if (c) [a, b] = [b, a]; else ...`
  }

  /**
   * `f(x).g(...)`: f's result is released once g returned, where no `await` or `yield` can come between
   * (another cell's code could use the receivers' stack meanwhile) and no optional link could skip g.
   */
  function receiverTemporary(call: Node): void {
    const callee = call.callee as Node;
    if (callee.type !== "MemberExpression" || call.optional || callee.optional) return;
    const recv = callee.object as Node;
    // a link that short-circuits would skip g and after() with it (`o?.f().g()`)
    if (recv.type !== "CallExpression" || optionalChain(recv)) return;
    if ((call.arguments as Node[]).some(suspends) || (callee.computed && suspends(callee.property))) return;
    wrap(call, `${RT}.after(`, ")");
    wrap(recv, `${RT}.hold(${RT}.mark(), `, ")");
  }

  for (const [body, locals] of localsOf) {
    const names = locals.filter((l) => l.atEnd).map((l) => l.name);
    const last = (body.body as Node[]).at(-1);
    // nothing after a return, throw, break or continue would run
    if (!names.length || (last && /^(Return|Throw|Break|Continue)Statement$/.test(last.type))) continue;
    insert(body.end - 1, `;void ((() => ${RT}.drop(${names.join(", ")}))());`);
  }
}

const CALLS = ["own", "mark", "e", "n", "es", "t", "drop", "ret", "hold", "after", "p", "depth", "settle", "rv", "so", "same", "ho", "c"] as const;
type Ownership = Record<(typeof CALLS)[number], (...a: any[]) => unknown>;
/** What cells call before the runtime is loaded: no tensor exists yet, so nothing to do. */
export const ownershipUntilLoaded = (): Ownership => ({
  own: (_m: number, v: unknown) => v,
  mark: () => 0,
  e: (v: unknown) => v,
  n: (v: unknown) => v,
  es: (v: unknown) => v,
  t: (v: unknown) => v,
  drop: () => {},
  ret: (_gives: boolean, v: unknown) => v,
  hold: (_m: number, v: unknown) => v,
  after: (v: unknown) => v,
  p: (v: unknown) => v,
  depth: () => 0,
  settle: (_d: number, _f: unknown, v: unknown) => v,
  rv: (v: unknown) => v,
  so: (_d: number, _k: unknown, v: unknown) => v,
  same: (v: unknown) => v,
  ho: (v: unknown) => v,
  c: (v: unknown) => v,
});
/**
 * Once the runtime is loaded, cells tell it which tensors their variables own (src/memory/ownership.ts).
 * Called before each cell: it also forgets receivers an exception left held.
 */
export function bindOwnership(rt: Ownership, torch: unknown): void {
  const t = torch as {
    _ownership?: RuntimeOwnership;
    _ownershipPolicy?: { keepsNoArguments(fn: unknown): boolean };
    autograd?: { Function?: { apply?: unknown } };
  } | null;
  const o = t?._ownership;
  if (!o) return;
  o.reset();
  if (rt.own === o.own) return;
  for (const k of CALLS) rt[k] = o[k];
  const runtime = t._ownershipPolicy?.keepsNoArguments ?? (() => false);
  const customApply = t.autograd?.Function?.apply;
  o.setArgumentPolicy(
    (fn, self) =>
      runtime(fn) ||
      cellFunction(fn) ||
      // a module (a callable object) of a class a cell defined: its forward is the class's code
      (typeof fn === "function" && cellFunction(fn.constructor)) ||
      // a custom autograd.Function a cell defined: apply hands its arguments to the class's forward,
      // which marks what it keeps (ctx.x = x included); save_for_backward keeps handles of its own
      (fn === customApply && fn !== undefined && typeof self === "function" && cellFunction((self as { forward?: unknown }).forward)),
  );
}
type RuntimeOwnership = Ownership & { reset(): void; setArgumentPolicy(p: (fn: unknown, self?: unknown) => boolean): void };

/**
 * A function a cell made (every one the transform saw checks the interrupt flag on entry; a module's
 * carries TRANSFORMED) that runs to its end when called: not async, not a generator (those keep their
 * arguments past the call).
 * Such a function marks what it keeps itself. Answers are cached per function object.
 */
const cellFunctions = new WeakMap<object, boolean>();
function cellFunction(fn: unknown): boolean {
  if (typeof fn !== "function") return false;
  let known = cellFunctions.get(fn);
  if (known === undefined) {
    const src = Function.prototype.toString.call(fn);
    const plain = src.startsWith("class") || Object.getPrototypeOf(fn) === Function.prototype;
    known = plain && (src.includes(IRQ) || src.includes(TRANSFORMED)) && !src.includes(UNTRACKED);
    cellFunctions.set(fn, known);
  }
  return known;
}
