// Freeing a tensor at the moment its last reference goes, without a garbage collection, where the cell
// transform can prove it (kernel/executor/ownership.ts writes the calls to these functions into cells).
//
// CPython frees `y`'s old tensor when `y = y.add(1)` rebinds the name; V8 can only tell that a handle is
// unreachable with a full collection, so the runtime reclaims before every figure and every allocation
// that would set a new peak (lifetime.ts). A chain of ops then paid one full collection per op. The
// transform sees every place a cell's code puts a value, and a handle's record carries what it found:
//   - `own`: 0 while no variable the transform tracks holds the handle and no code was seen keeping
//     it; 1 once exactly one such variable holds it (`own()` on an assignment or declaration); 2 once
//     it may be held anywhere else (it was passed to a function, put in an array or an object, assigned
//     to a property or a second variable, returned from a generator...: `escape()`), for good;
//   - `serial`: when the handle was made, so that an assignment can tell a handle made by its own
//     right-hand side from one that existed before (which someone else may hold).
// When a variable that owns its handle is rebound or leaves its block, and the handle has not escaped,
// nothing else can reach it: it is released there, as CPython would, under the reason "collected".
// Everything else is left to the collector, as before. The runtime itself never keeps a user's handle
// (lifetime.ts's rule), and where it hands one to user code that could keep it (a saved-tensor pack
// hook) it marks it escaped. A handle wrongly released would throw "was disposed" at its next use,
// never read freed memory.

import { noteTransform, RECORD, releaseUnreachable } from "./lifetime.ts";

/** What a handle's record carries for this module (HandleRecord in tensor.ts). */
export interface Ownable {
  own: 0 | 1 | 2;
  /**
   * A cell's code put the handle where the transform cannot follow it (a list, a property, a function
   * that may keep it), as opposed to the runtime keeping it (`keep`): a handle the runtime holds too
   * (w.grad) is then no longer the runtime's alone to dispose. For good, unlike `named`.
   */
  taken: boolean;
  /** How many tracked variables name the handle now (own() counts up, their rebinding or end down). */
  named: number;
  /**
   * Narrower: a cell's code stored the handle in a property or a container (`this.h = h`, `[h]`,
   * `list.push(h)`), where it outlives the function that made it. A handle only passed to a function
   * that may keep it (`checkpoint(f, h)`) or named by a second variable is taken, not stored.
   */
  stored: boolean;
  /** Calls running now that were given the handle as an argument (see lend). */
  lent: number;
  /** The runtime keeps the handle (keep: a buffer, a parameter, a gradient, optimizer state). */
  kept: boolean;
  /** Released here, as its variable let go of it (for the error a later use of it gives). */
  letGo: boolean;
  readonly serial: number;
  readonly released: boolean;
}
let serials = 0;
/** A serial for a new handle's record. */
export const nextSerial = () => ++serials;

/** The objects whose record is being read: a Proxy's get trap that passes its receiver on (`Reflect.get(t,
 *  k, r)` in a cell's function, whose argument is read for its record) must not recurse into the trap for
 *  ever; other objects the trap's code marks are read as usual. */
const reading: object[] = [];
function recordOf(v: unknown): Ownable | undefined {
  if (v === null || typeof v !== "object" || (reading.length > 0 && reading.includes(v))) return undefined;
  reading.push(v);
  try {
    return (v as Record<symbol, unknown>)[RECORD] as Ownable | undefined;
  } finally {
    reading.pop();
  }
}

/** The last serial given out: taken before a right-hand side runs. */
export const mark = (): number => serials;
/** Whether the handle `v` was made after `since` (a mark): one made before may be held by anyone. */
export const madeSince = (v: unknown, since: number): boolean => (recordOf(v)?.serial ?? 0) > since;

function markKept(v: unknown): void {
  const r = recordOf(v);
  if (r !== undefined && r.own !== undefined) {
    r.own = 2;
    r.taken = true;
    r.stored = true;
  }
}
/**
 * The containers markIn has marked with each marker, with an array's length then. Passing the same one
 * again (a dataset to a batch function, a vocabulary to Object.hasOwn, a list that grows by push) walks
 * only what was added since: a tensor put in it in place of another went through a place that marked it
 * (an assignment, a method's argument). Walking all of a 60,000-element dataset at every call made a loop
 * over batches quadratic.
 */
const walked = new Map<(x: unknown) => unknown, WeakMap<object, number>>();
/** Marks `v`, or the values directly in it where it is an array or a plain object, with `marker`. A plain
 *  object's accessors are not run (a getter with side effects must run as often as the code says).
 *  `again`: walk all of it, even what was walked before (code that may have put a tensor in it ran). */
function markIn(v: unknown, marker: (x: unknown) => unknown, again = false): void {
  if (v === null || typeof v !== "object") return;
  let seen = walked.get(marker);
  if (!seen) walked.set(marker, (seen = new WeakMap()));
  if (Array.isArray(v)) {
    const from = again ? 0 : (seen.get(v) ?? 0);
    for (let i = from <= v.length ? from : 0; i < v.length; i++) marker(v[i]);
    seen.set(v, v.length);
  } else if (Object.getPrototypeOf(v) === Object.prototype) {
    if (seen.has(v) && !again) return;
    seen.set(v, 0);
    for (const k in v) {
      const d = Object.getOwnPropertyDescriptor(v, k);
      if (d !== undefined && "value" in d) marker(d.value);
    }
  } else marker(v);
}
/**
 * The runtime hands `v` to user code that may keep it (a pack hook of saved_tensors_hooks): never released
 * early, and taken, but not stored (whatever that code stores, it marks itself when it is a cell's).
 * Returns v.
 */
export function mayKeep<T>(v: T): T {
  const r = recordOf(v);
  if (r !== undefined && r.own !== undefined) {
    r.own = 2;
    r.taken = true;
  }
  return v;
}
/**
 * The runtime keeps `v` (a gradient, a parameter, a buffer, optimizer state): never a cell variable's own,
 * so never released early; not `taken` by the cell's code. Returns v.
 */
export function keep<T>(v: T): T {
  const r = recordOf(v);
  if (r !== undefined && r.own !== undefined) {
    r.own = 2;
    r.kept = true;
  }
  return v;
}
/**
 * Whether a cell's code stored the handle of record `r` in a property or a container (Ownable.stored), or
 * a variable still names it once the function that made it returned (a global: `lastAct = h`), or the
 * runtime keeps it (`this.register_buffer("mx", m)` in a forward: the module holds it, as in PyTorch): it
 * outlives that function. The first two only in cells.
 */
export const takenAway = (r: unknown): boolean => {
  const o = r as Partial<Ownable>;
  return o.stored === true || (o.named ?? 0) > 0 || o.kept === true;
};

/**
 * The runtime is done with an intermediate it made and user code may have seen (the output of one
 * module of a Sequential, the input of the next): disposed, unless a cell's code stored it or a variable
 * names it (takenAway: `this.out = y` in the module's forward), as in CPython the module's reference
 * keeps it.
 */
export function dropIntermediate(t: { dispose(): void }): void {
  const r = recordOf(t);
  if (r === undefined || !takenAway(r)) t.dispose();
} /**
 * The runtime lets go of `v`, a handle it kept (a gradient zero_grad replaces): whether user code may
 * still hold it (Ownable.taken, or a variable names it; never outside cells). Where exactly one
 * variable names it and nothing took it, that variable now owns it, and releases it when it lets go
 * (`const g = w.grad` in a loop's body, then zero_grad(): freed at the end of the turn, no collection).
 */
export function heldByUser(v: unknown): boolean {
  const r = recordOf(v);
  if (r === undefined || r.own === undefined) return false;
  if (!r.taken && r.named === 1) r.own = 1;
  return r.taken || r.named > 0;
}
/**
 * `v` may be kept where the transform cannot follow it: never release it early. So are the tensors
 * directly in an array or a plain object (`[a, b]` made elsewhere, `{ values, indices }` of an op).
 * Returns v.
 */
export function escape<T>(v: T): T {
  if (v !== null && typeof v === "object") markIn(v, markKept);
  return v;
}
/**
 * A pattern takes values out of `v` into variables the transform does not track, which end with their
 * function (`const [x, w] = ctx.saved_tensors` in a custom backward): never released early, and taken
 * (the runtime letting go of a gradient leaves it to them: `const { grad } = p`), but not stored, so
 * the call's frame still frees what its locals alone held, as CPython does when the function returns.
 * Also for the values the pattern bound. Returns v.
 */
export function taken<T>(v: T): T {
  if (v !== null && typeof v === "object") markIn(v, mayKeep);
  return v;
}
/**
 * `const g = v` for a new tracked local whose value existed before (`w.grad`, another variable): never
 * released early, as by escape, but counted as named rather than taken, so that the runtime letting go
 * of it (heldByUser) leaves it to the variable, which releases it at its end. Returns v.
 */
export function named<T>(v: T): T {
  const r = recordOf(v);
  if (r === undefined || r.own === undefined) return escape(v);
  r.own = 2;
  r.named++;
  return v;
}
/** A spread (`f(...xs)`): every element may be kept; an iterable is read once, into an array. */
export function escapeAll(v: unknown): unknown[] {
  const xs = Array.isArray(v) ? v : [...(v as Iterable<unknown>)];
  for (const x of xs) markKept(x);
  return xs;
}

/** A tracked variable lets go of the handle of record r (rebound, or its block or function ended). */
function unname(r: Ownable | undefined): void {
  if (r !== undefined && r.named > 0) r.named--;
}
function dropRecord(r: Ownable | undefined): void {
  if (handedOut.length > 0) keepHandedOut();
  if (r !== undefined && r.own === 1 && r.lent === 0 && !r.released) {
    r.letGo = true;
    releaseUnreachable(r as unknown as Parameters<typeof releaseUnreachable>[0]);
  }
}

/**
 * `name = v` for a tracked variable whose previous value was `old` (`mark` taken before v was
 * computed): releases `old` if the variable owned it, and makes the variable own `v` if v was made by
 * the right-hand side and nothing else holds it. Returns v.
 */
export function own<T>(m: number, v: T, old?: unknown): T {
  claimed(v);
  if (v === old) return v;
  const r = recordOf(v);
  if (r !== undefined && r.own !== undefined) {
    r.own = r.own === 0 && r.serial > m ? 1 : 2;
    r.named++;
  } else if (Array.isArray(v)) takeKept(v);
  const ro = recordOf(old);
  unname(ro);
  dropRecord(ro);
  return v;
}

/**
 * A tracked variable given an array (`grads = params.map((p) => p.grad)`, `Array.from(...)`): the
 * handles in it that the runtime keeps (keep: gradients, parameters) are the variable's too now, so the
 * runtime letting go of one (zero_grad) leaves it to the array (heldByUser). Fresh handles in it are
 * not marked: the array alone cannot tell what else holds them, and they go when collected, as before.
 */
function takeKept(xs: unknown[]): void {
  for (const x of xs) {
    const r = recordOf(x);
    if (r !== undefined && r.own === 2) r.taken = true;
  }
}

/** Tracked variables going out of scope (the end of their block): releases the handles they own. */
export function drop(...vs: unknown[]): void {
  for (const v of vs) {
    const r = recordOf(v);
    unname(r);
    dropRecord(r);
  }
}

/**
 * `return v` from a function whose tracked locals are `locals`: they end with the function, so what they
 * own is released, but for v, which the caller may own (`gives`: v is one of those locals). Returns v.
 */
export function ret<T>(gives: boolean, v: T, ...locals: unknown[]): T {
  const rv = recordOf(v);
  for (const l of locals) {
    const r = recordOf(l);
    unname(r);
    if (r !== rv) dropRecord(r);
  }
  if (gives && rv !== undefined && rv.own === 1) rv.own = 0;
  return v;
}

/**
 * Receivers that are temporaries: `f(x).g()` is `after(hold(mark(), f(x)).g())`. The receiver is
 * released once g returned if f made it (after the mark), nothing took it since, and g did not return
 * it (`x.contiguous()` may be x). The stack holds records, not handles: an entry that an exception
 * leaves behind keeps nothing alive, and is forgotten at the next cell (reset). The transform never
 * puts an `await` between a hold and its after, so no other code runs in between.
 */
const held: Array<Ownable | undefined> = [];
const heldFresh: boolean[] = [];
let heldDepth = 0;
export function hold<T>(m: number, t: T): T {
  const r = recordOf(t);
  held[heldDepth] = r;
  heldFresh[heldDepth] = r !== undefined && r.own === 0 && r.serial > m;
  heldDepth++;
  return t;
}
export function after<T>(result: T): T {
  if (heldDepth === 0) return result;
  heldDepth--;
  const r = held[heldDepth];
  held[heldDepth] = undefined;
  if (heldFresh[heldDepth] && r !== undefined && r.own === 0 && recordOf(result) !== r) {
    r.own = 1;
    dropRecord(r);
  }
  return result;
}
/** Forgets receivers and arguments an exception left on the stacks (before a cell runs). */
export function reset(): void {
  keepHandedOut();
  held.fill(undefined);
  heldDepth = 0;
  lentStack.fill(undefined);
  lentDepth = 0;
}

/**
 * Arguments: `f(x)` is `settle(depth(), f, f(lend(x)))`. While f runs, x is lent (a parameter holds it:
 * never released, even if its variable is rebound inside f). Once f returned, x is marked kept unless f
 * is known to keep none of its arguments: the runtime's ops and modules, or a function of a cell (which
 * marks what it keeps itself); `keepsNoArguments` says (set by the kernel). Containers passed as an
 * argument (`f(parts)`) have their tensors marked when f may keep them. The stack holds records and
 * containers of the calls running now; an exception leaves entries that the caller's settle takes as
 * its own (their calls are over too), or that the next cell forgets (reset: their lent counts stay, so
 * they are left to the collector).
 */
let keepsNoArguments: (fn: unknown, self?: unknown) => boolean = () => false;
/** `policy(fn, self)`: whether calling fn (on `self`, for a method call) keeps none of its arguments. */
export function setArgumentPolicy(policy: (fn: unknown, self?: unknown) => boolean): void {
  keepsNoArguments = policy;
  noteTransform(); // the kernel binds the transform to the runtime (kernel/executor/ownership.ts)
}
const lentStack: unknown[] = [];
/** The serial when each entry was lent: a handle made after it was made while its call ran (or while the
 *  arguments after it were computed). */
const lentSerial: number[] = [];
let lentDepth = 0;
export const depth = (): number => lentDepth;
export function lend<T>(v: T): T {
  if (v === null || typeof v !== "object") return v;
  const r = recordOf(v);
  if (r !== undefined && r.lent !== undefined) r.lent++;
  lentSerial[lentDepth] = serials;
  lentStack[lentDepth++] = r ?? v;
  return v;
}
export function settle<T>(base: number, fn: unknown, result: T): T {
  return settleFrom(base, !keepsNoArguments(fn), result, STORES.has(fn));
}
/** Methods that store their arguments in the container they are called on, or in the one they return
 *  (`all = all.concat(h)`) (Ownable.stored). */
const STORES = new Set<unknown>([
  Array.prototype.push,
  Array.prototype.concat,
  Array.prototype.unshift,
  Array.prototype.splice,
  Array.prototype.fill,
  Map.prototype.set,
  WeakMap.prototype.set,
  Set.prototype.add,
  Object.assign,
  Reflect.set,
]);
/**
 * A method call `o.m(x)` is `settleOn(depth(), "m", receiver(o).m(lend(x)))`: the receiver, evaluated
 * once, is the entry at `base` (pushed before the arguments), and the method is read from it again only
 * to ask the policy (reading `o` twice would run a getter twice: `x.T.matmul(w)` would transpose twice).
 */
export function receiver<T>(v: T): T {
  lentStack[lentDepth++] = v;
  return v;
}
export function settleOn<T>(base: number, key: PropertyKey, result: T): T {
  const o = lentStack[base];
  lentStack[base] = undefined;
  const fn = o !== null && o !== undefined ? (o as Record<PropertyKey, unknown>)[key] : undefined;
  settleFrom(base + 1, !keepsNoArguments(fn, o), result, STORES.has(fn));
  lentDepth = Math.min(lentDepth, base);
  return result;
}
function settleFrom<T>(base: number, keeps: boolean, result: T, stores = false): T {
  // A function that may keep its arguments and was also given a container may have put a tensor argument in
  // it (`put(this.cache, "h", h)`, `splice.call(list, 0, 1, h)`): stored. One that made tensors may have
  // put those in it: the container is walked again, all of it (markIn otherwise walks only what it has not).
  let containers = false;
  if (keeps) for (let i = base; i < lentDepth; i++) if (!isRecord(lentStack[i])) containers = true;
  const made = keeps && lentDepth > base && serials > lentSerial[base];
  for (let i = lentDepth - 1; i >= base; i--) {
    const e = lentStack[i];
    lentStack[i] = undefined;
    if (isRecord(e)) {
      const r = e as Ownable;
      r.lent--;
      if (keeps) {
        r.own = 2;
        r.taken = true;
        if (stores || containers) r.stored = true;
      }
    } else if (keeps && e !== null && typeof e === "object") markIn(e, markKept, made);
  }
  lentDepth = Math.min(lentDepth, base);
  return claimed(result);
}
const isRecord = (e: unknown): boolean => e !== null && typeof e === "object" && "lent" in e;

/**
 * Handles the runtime made for user code and gave it (a hook's gradients), or that code made and
 * returned, once every function they went to (`fns`) returned. A hook may keep what it is given (`grads.push(g)`, as PyTorch's hooks
 * append it to a list), so the runtime never disposes them. Where each of those functions is known to
 * mark what it keeps (a cell's function: `keepsNoArguments`), the handles nothing took are released
 * here, as CPython frees a hook's argument when the hook returns; otherwise they are the user's, and go
 * when the collector finds them unreachable.
 */
export function settleHandedOut(fns: readonly unknown[], handles: Iterable<unknown>, since: number): void {
  for (const f of fns) if (!keepsNoArguments(f)) return;
  for (const h of handles) {
    const r = recordOf(h);
    // made since the runtime handed them out (`since`: a mark): a tensor the hook returned that existed
    // before (`() => noise[0]`) may be held by anything
    if (r !== undefined && r.own === 0 && r.serial > since) {
      r.own = 1;
      dropRecord(r);
    }
  }
}

/**
 * `return helper(w)` where `w` is a variable of the top level, and helper may return its argument (or
 * `w.requires_grad_()` its receiver): `v` is handed out (handOut) if it is the value of one of the
 * variables `names` reads; one still in its temporal dead zone (a branch not taken named it) makes it
 * throw, and then `v` is handed out too. Returns v.
 */
export function same<T>(v: T, names: () => unknown[]): T {
  if (recordOf(v) === undefined) return v;
  let values: unknown[];
  try {
    values = names();
  } catch {
    return handOut(v);
  }
  return values.includes(v) ? handOut(v) : v;
}

/**
 * Values functions returned that a variable of the top level still names (`return loss` of a global
 * loss, `() => w` given to map), not yet claimed. Code of a cell's that receives one claims it: a call
 * it settles (`step();`, `f(step())`), a variable it assigns (own), an `await` statement (`await
 * step();`): it marks what it does with the value. Native code that receives one (map's callback, a
 * getter read by JSON.stringify) says nothing, and may store it: what is still here when a variable next
 * lets go of a tensor (or at the next cell) is marked kept first, so that the variable, rebound, does not
 * release it. Marking every such value kept at once cost a full collection per step of the common
 * `function step() { loss = ...; return loss }`.
 */
const handedOut: Ownable[] = [];
export function handOut<T>(v: T): T {
  const r = recordOf(v);
  if (r !== undefined && r.own !== undefined) {
    if (handedOut.length >= 1024) keepHandedOut();
    handedOut.push(r);
  }
  return v;
}
/** `v` reached code of a cell's (a settled call's result, an assigned value, an `await` statement's
 *  value, which the cell drops): no longer handed out. Returns v. */
export function claimed<T>(v: T): T {
  if (handedOut.length === 0) return v;
  const r = recordOf(v);
  const i = r === undefined ? -1 : handedOut.lastIndexOf(r);
  if (i >= 0) handedOut.splice(i, 1);
  return v;
}
function keepHandedOut(): void {
  const rs = handedOut.splice(0);
  for (const r of rs) {
    r.own = 2;
    r.taken = true;
    r.stored = true;
  }
}

/** The names cells call (kernel/executor/ownership.ts writes `__gradlab.e(...)` and so on). */
export { escape as e, named as n, escapeAll as es, lend as p, receiver as rv, settleOn as so, taken as t, handOut as ho, claimed as c };
