// When a tensor handle lets go of its storage: dispose() / torch.del / `using`, the end of a
// torch.scope, or, for handles dropped the way Python code drops them (rebinding a variable, leaving a
// function), when they become unreachable. CPython frees at the last reference; V8 collects later.
// So that memory figures tell PyTorch's story anyway, every observation of memory (statistics,
// snapshots, plots) and every allocation that would set a new peak, grow the reserved memory or run
// out of memory first reclaims unreachable handles synchronously: a full collection, then
// FinalizationRegistry.prototype.cleanupSome(), which runs the finalisers of what that collection found
// dead inside the same job (measured on Node 20 / V8 11.3: see DESIGN.md). Two rules make it work:
// - a finaliser's held value must not reach the handle it watches (it would never be collected): it is
//   the handle's Registration, which reaches its HandleRecord (the storage, the autograd meta) until the
//   handle lets go, never the handle;
// - nothing in the runtime holds a WeakRef to a user's handle: a WeakRef created or dereferenced in the
//   current job keeps its target alive until the job ends.

import { platform } from "../platform/current.ts";

/**
 * What to release when a handle is collected, by dispose() or at the end of its scope (must not reach the
 * handle). `released` is the handle's disposed state; `registration` is this module's (see track).
 */
export interface Releasable {
  release(): void;
  readonly released: boolean;
  registration: Registration | null;
}
/**
 * A handle's registration with the finaliser: its held value and its unregister token, which reaches the
 * record only until the handle lets go. V8 allocates the registry's cell in the old generation, and a minor
 * collection keeps what such a cell holds alive even after unregister() (until the next full collection):
 * with the record itself as held value, every released handle's record, storage and autograd meta were
 * promoted. Measured on a chain `y = y.add(1)` that disposes each tensor (Node 20): 2.6-2.8 MB promoted and
 * a 5-8 ms scavenge every ~3,500 ops, the old generation growing by 35-40 MB between full collections.
 */
export interface Registration {
  rec: Releasable | null;
}
/** A handle's record, under which handles are tracked (a Tensor returns its own). */
export const RECORD: unique symbol = Symbol("gradlab.handleRecord");
interface Handle {
  readonly [RECORD]: Releasable;
}

type Registry = FinalizationRegistry<Registration> & { cleanupSome?: (cb?: (r: Registration) => void) => void };

// the collector, and whether it can run inside a job: the platform says (src/platform/)
const hooks = platform.engineHooks();
let live = 0;
let reclaimed = 0;
/**
 * Why handles let go of their storage: for lifecycle_report (what the runtime did, and why).
 * @public (part of the runtime's typed API)
 */
export type ReleaseReason = "dispose" | "scope" | "collected";
let reason: ReleaseReason = "dispose";
const tally = () => ({ dispose: { handles: 0, bytes: 0 }, scope: { handles: 0, bytes: 0 }, collected: { handles: 0, bytes: 0 } });
let releases = tally();
function as<T>(r: ReleaseReason, fn: () => T): T {
  const prev = reason;
  reason = r;
  try {
    return fn();
  } finally {
    reason = prev;
  }
}
/** Called by a handle as it lets go (counted under the reason in force). */
export const noteHandleRelease = () => void releases[reason].handles++;
/** Called by a storage whose memory went back to the allocator. */
export const noteBytesFreed = (bytes: number) => void (releases[reason].bytes += bytes);
/** What was released since the last call, by reason; starts a new count. */
export function takeReleases(): ReturnType<typeof tally> {
  const r = releases;
  releases = tally();
  return r;
}

const finalizer: Registry = new hooks.Registry<Registration>((registration) => {
  const rec = registration.rec;
  if (!rec) return;
  untrack(rec, true);
  reclaimed++;
  as("collected", () => rec.release());
});
/**
 * Ends a record's registration, once: cuts it both ways (the registry's cell may outlive it: see
 * Registration), unregisters it unless its finaliser is what runs (the cell is gone then), and counts the
 * handle out of `live`. A record has a registration exactly while the registry has its cell.
 */
function untrack(rec: Releasable, finalised = false): void {
  const registration = rec.registration;
  if (!registration) return;
  registration.rec = rec.registration = null;
  if (!finalised) finalizer.unregister(registration);
  unregistered();
}
/**
 * An open scope. It holds the records of the handles made inside, not the handles: a handle that user
 * code dropped before the scope ends (an intermediate of a nested call in Module.forward, consumed by
 * the next call) can be collected at the next reclamation, as CPython frees it at its last reference,
 * instead of living until forward returns (issue 21: checkpointed blocks peaked above torch's). An
 * op's frame also holds its handles strongly: runtime code inside an op may drop a handle whose work
 * is still to be recorded.
 */
interface Frame {
  /** recs[0, n) are the frame's records; strong[0, ns) its handles (op frames only). Counted rather than
   *  pushed so that op frames can be reused: see opFrame. */
  recs: Array<Releasable | undefined>;
  n: number;
  strong: Array<object | undefined> | null;
  ns: number;
  /** callScope's: records of what the user's code stored (no scope releases them). */
  userKept: ((r: Releasable) => boolean) | undefined;
}
/** Open scopes; a null frame hides the enclosing scopes (for handles the runtime itself owns). */
const scopes: Array<Frame | null> = [];
/**
 * Whether user code is running (not an op's or the runtime's own work): each op user code starts is a
 * moment it may have dropped references, inside a module's forward as at top level.
 */
let inUser = true;
function asUser<T>(user: boolean, fn: () => T): T {
  const prev = inUser;
  inUser = user;
  try {
    return fn();
  } finally {
    inUser = prev;
  }
}
/** Runs user code from inside the runtime (checkpoint's recompute of a block's forward). */
export const userCode = <T>(fn: () => T): T => asUser(true, fn);
/** Whether user code is running (an op it calls inside another op's work still gets its own frame). */
export const runningUserCode = () => inUser;

/**
 * Counts the moments user code may have dropped references: it starts an op or a scope, or makes a
 * handle (inside an op, only the runtime runs, and it frees its own temporaries). Allocations inside
 * one op therefore share one reclamation (see reclaimBeforeGrowth).
 */
let activity = 0;
let reclaimedAt = -1;

/** `rec` must not reach the handle: the finaliser's held value reaches it (or the handle would never be collected). */
export function track(handle: object, rec: Releasable): void {
  const registration: Registration = { rec };
  rec.registration = registration;
  finalizer.register(handle, registration, registration);
  live++;
  made++;
  if (inUser) activity++;
  const frame = scopes[scopes.length - 1];
  if (frame) {
    frame.recs[frame.n++] = rec;
    if (frame.strong) frame.strong[frame.ns++] = handle;
  }
}

/** Lets go of a tracked handle's record now (dispose, or the end of its scope); once only. */
export function releaseRecord(rec: Releasable): void {
  if (rec.released) return;
  untrack(rec);
  rec.release();
}

/**
 * Lets go of a handle that user code can no longer reach, known without a collection (the cell
 * transform proved it: ownership.ts): what its finaliser would do, counted the same way.
 */
export function releaseUnreachable(rec: Releasable): void {
  if (rec.released) return;
  untrack(rec);
  reclaimed++;
  as("collected", () => rec.release());
}

let cascade = false;
/** The runtime let go of a handle that may have kept a user's handle reachable (a saved view's base). */
export const noteCascade = () => void (cascade = true);
let warned = false;
let reclaiming = false;
/** How many reclamations ran and how many handles they freed (for lifecycle reports and benchmarks). */
export const reclaimStats = { runs: 0, handles: 0, ms: 0 };

/**
 * Releases every tensor handle user code can no longer reach, now, in this job: what CPython's reference
 * counting would already have freed. Returns how many handles were released. Without the engine's
 * support (a Node without these V8 flags) it does nothing and says so once; `dispose`, `using` and
 * `torch.scope` still free deterministically, and `await torch.gc()` collects later.
 */
export function reclaim(): number {
  if (reclaiming || live === 0) return 0;
  if (!hooks.synchronous) {
    if (!warned) {
      warned = true;
      platform.warn(hooks.unavailable, "GradLabWarning");
    }
    return 0;
  }
  reclaiming = true;
  reclaimedAt = activity;
  const before = reclaimed;
  const t0 = performance.now();
  try {
    // A released handle can free others that only the runtime still reached: a dropped custom
    // Function's ctx or packed saved tensors can hold user tensors. Those become unreachable only after
    // this round's finalisers, so collect again while a round let go of such a reference (noteCascade;
    // bounded: chains are short).
    hooks.finishCompiles();
    for (let round = 0; round < 8; round++) {
      cascade = false;
      hooks.gc!();
      finalizer.cleanupSome!();
      if (!cascade || live === 0) break;
    }
  } finally {
    reclaiming = false;
  }
  survivors = lowest = live;
  made = 0;
  const ms = performance.now() - t0;
  reclaimStats.runs++;
  reclaimStats.handles += reclaimed - before;
  reclaimStats.ms += ms;
  if (reclaimed > before && !transformed) hintPlainScript(ms);
  return reclaimed - before;
}

/**
 * Whether the cell transform follows the code that runs (a kernel's cells, a script under gradlab/register):
 * then what user code drops is released without a collection. Set by memory/ownership.ts when bound.
 */
let transformed = false;
export const noteTransform = () => void (transformed = true);
/**
 * A program no transform follows (a plain `node`/`tsx` script) learns of the tensors it dropped only from
 * full collections: a training step written the PyTorch way runs one per step, 5x the step's own time for
 * the notebook-06 MLP (docs/performance.md). It is told so once, with the cure, after HINT_RUNS collections
 * that found something, worth HINT_MS in all.
 */
const HINT_RUNS = 20;
const HINT_MS = 100;
let plainRuns = 0;
let plainMs = 0;
let hinted = false;
function hintPlainScript(ms: number): void {
  plainRuns++;
  plainMs += ms;
  if (hinted || plainRuns < HINT_RUNS || plainMs < HINT_MS) return;
  hinted = true;
  platform.warn(
    `${plainRuns} full garbage collections (${plainMs.toFixed(0)} ms) have run to find the tensors this program no longer ` +
      "references (CPython frees a tensor at its last reference; V8 learns of it only in a collection). Run the script " +
      "with `npx gradlab run SCRIPT` or `node --import gradlab/register SCRIPT`: GradLab then frees what your code " +
      "drops as it does in a notebook cell, without collections. dispose(), `using` and torch.scope free tensors too.",
    "GradLabWarning",
  );
}
/**
 * Handles made since the last reclamation, and how many it left tracked. Reclaiming only before a new
 * peak left the garbage of a loop that never awaits on the heap when its allocations set no peak (after
 * a higher one): a handle registered with a FinalizationRegistry survives every minor collection (V8
 * finds dead targets only in a full one), so each step's handles, their records and through their
 * autograd meta the step's graph were promoted to the old generation, which V8 let grow. Measured with
 * bench/host-memory.ts (an MLP trained after 1 GiB was freed): 15 reclamations in 2,000 steps, V8 heap
 * 60 -> 101 MiB, RSS 293 -> 370 MiB. So the allocator also reclaims once as many handles were made as
 * survived the last reclamation, plus PILE_UP: collections stay proportional to the handles made, and
 * the old generation bounded. Unless the registered handles grew by fewer than NEW_GARBAGE over their
 * lowest count since (`lowest`): then what was made was released without a collection (disposed, or
 * freed by a scope or the cell transform), unregistered, and minor collections free it; the few left
 * are what the code's variables hold now. (A chain that
 * disposes each tensor ran a full collection every 4,096 ops that freed nothing: 20 of them, 213 ms, in
 * 80,000 ops of bench/dispatch.ts's chain, 2.7 µs per op. Counting only the registered growth instead of
 * the handles made let a training loop that never awaits pile up its garbage three times longer: its V8
 * heap grew 48 -> 74 MiB over 1,000 steps of bench/host-memory.ts, against a flat 48-49; with 512 for
 * NEW_GARBAGE, 48 -> 60 MiB; with 16, flat again.)
 */
let made = 0;
let survivors = 0;
let lowest = 0;
const PILE_UP = 4096;
const NEW_GARBAGE = 16;
/** A registered handle left the registry: released, or collected. */
function unregistered(): void {
  live--;
  if (live < lowest) lowest = live;
}
/** Called by the allocator at an allocation that does not grow: reclaims if handles have piled up (see made). */
export function reclaimIfPiledUp(): number {
  if (made < survivors + PILE_UP || live - lowest < NEW_GARBAGE || !hooks.synchronous) return 0;
  return reclaim();
}
/**
 * Called by the allocator before an allocation that would set a new peak or grow the reserved memory.
 * A full collection per such allocation would be slow (the first forward pass sets a new peak at
 * almost every op), and is not needed: garbage appears only where user code runs. So it reclaims when
 * called from user code directly, or on the first such allocation of an op or scope that user code
 * started since the last reclamation; later allocations inside the same op (a backward pass, an
 * optimizer step, a module's forward) find nothing new to free.
 */
export function reclaimBeforeGrowth(): number {
  if (scopes.length > 0 && activity === reclaimedAt) return 0;
  return reclaim();
}

/** Whether unreachable handles are reclaimed synchronously here (Node with its flags: yes; a browser: no). */
export const reclaimsSynchronously = () => hooks.synchronous;

function collectKept(value: unknown, kept: Set<unknown>, depth = 0): void {
  if (value === null || typeof value !== "object" || depth > 3 || kept.has(value)) return;
  kept.add(value);
  if (RECORD in value) kept.add((value as Handle)[RECORD]);
  if (Array.isArray(value)) for (const v of value) collectKept(v, kept, depth + 1);
  else if (Object.getPrototypeOf(value) === Object.prototype) for (const v of Object.values(value)) collectKept(v, kept, depth + 1);
}

/**
 * Ends a frame: handles in `keep` move to the enclosing scope (if any), the others are disposed.
 * opFrame keeps everything (an op that returned hands all it made to its caller's scope).
 */
function close(frame: Frame, keep: (r: Releasable) => boolean): void {
  const parent = scopes[scopes.length - 1];
  const userKept = frame.userKept;
  for (let i = 0; i < frame.n; i++) {
    const r = frame.recs[i]!;
    if (r.released) continue;
    // what user code stored is no scope's to release any more (callScope)
    if (userKept?.(r)) continue;
    if (!keep(r)) as("scope", () => releaseRecord(r));
    else if (parent) parent.recs[parent.n++] = r;
  }
  // An op's handles that survive it (its results) are its caller's now: held strongly only where
  // the caller is itself an op.
  if (parent?.strong && frame.strong) for (let i = 0; i < frame.ns; i++) parent.strong[parent.ns++] = frame.strong[i];
}

const keptBy = (result: unknown) => {
  const kept = new Set<unknown>();
  collectKept(result, kept);
  return (r: Releasable) => kept.has(r);
};
const none = () => false;
const all = () => true;

/** Runs fn in a new frame; `done` decides what survives once fn has returned (or thrown: nothing). */
function inFrame<T>(fn: () => T, done: (result: T) => (r: Releasable) => boolean, userKept?: (r: Releasable) => boolean): T {
  if (inUser) activity++;
  const frame: Frame = { recs: [], n: 0, strong: null, ns: 0, userKept };
  scopes.push(frame);
  let result: T;
  try {
    result = fn();
  } catch (e) {
    scopes.pop();
    close(frame, none);
    throw e;
  }
  return leaveFrame(frame, result, done);
}

/** Closes a frame whose function returned `result` (a promise: once it settles). */
function leaveFrame<T>(frame: Frame, result: T, done: (result: T) => (r: Releasable) => boolean): T {
  if (result instanceof Promise) {
    // Async frames stay open until the promise settles; handles created meanwhile by other code on the
    // same stack frame would be captured too, so async scopes are for sequential notebook code.
    const leave = () => void scopes.splice(scopes.lastIndexOf(frame), 1);
    return result.then(
      (v) => {
        leave();
        close(frame, done(v as T));
        return v;
      },
      (e) => {
        leave();
        close(frame, none);
        throw e;
      },
    ) as T;
  }
  scopes.pop();
  close(frame, done(result));
  return result;
}

/**
 * Saves the scope stack; the returned function closes the frames opened since (their handles are
 * disposed, as for an op or scope that threw): what an interrupted cell left open.
 */
export function saveScopes(): () => void {
  const depth = scopes.length;
  return () => {
    while (scopes.length > depth) {
      const frame = scopes.pop();
      if (frame) close(frame, () => false);
    }
  };
}

/**
 * Runs fn with no scope collecting the handles it creates: for handles owned by the runtime (saved
 * variables, .grad, optimizer state), which must outlive whatever user scope they were made in.
 */
export function owned<T>(fn: () => T): T {
  scopes.push(null);
  try {
    return asUser(false, fn);
  } finally {
    scopes.pop();
  }
}

/**
 * Runs one op, fn(a, b): if it throws, every handle it created is disposed (nothing half-built
 * survives an error); if it returns, its handles belong to the enclosing scope as if no frame had been
 * there. The op's arguments are passed through rather than captured, so that an op costs no closure.
 */
export function opFrame<A, B, T>(fn: (a: A, b: B) => T, a: A, b: B): T {
  if (inUser) activity++;
  const frame = freeOpFrames.pop() ?? { recs: [], n: 0, strong: [], ns: 0, userKept: undefined };
  scopes.push(frame);
  const wasUser = inUser;
  inUser = false;
  let result: T;
  try {
    result = fn(a, b);
  } catch (e) {
    inUser = wasUser;
    scopes.pop();
    close(frame, none);
    reuseOpFrame(frame);
    throw e;
  }
  inUser = wasUser;
  if (result instanceof Promise) return leaveFrame(frame, result, keepAll); // open until it settles: not reused
  scopes.pop();
  close(frame, all);
  reuseOpFrame(frame);
  return result;
}
const keepAll = () => all;

/**
 * Closed op frames, for the next op: a frame and its two arrays were four allocations per op. A frame
 * goes back emptied (it must not keep a record or a handle alive) and only while its arrays are small.
 */
const freeOpFrames: Frame[] = [];
function reuseOpFrame(frame: Frame): void {
  if (frame.n > 64 || frame.ns > 64) return;
  frame.recs.fill(undefined, 0, frame.n);
  frame.strong!.fill(undefined, 0, frame.ns);
  frame.n = frame.ns = 0;
  if (freeOpFrames.length < 32) freeOpFrames.push(frame);
}

/**
 * Runs fn; every tensor handle created inside and not returned (directly, or in an array or plain
 * object) is disposed when it returns, as CPython frees a function's locals. Works with async fn.
 */
export function scope<T>(fn: () => T): T {
  return inFrame(fn, keptBy);
}

/**
 * The frame of a function the runtime calls for user code (a module's forward): as scope, and a handle
 * that `alsoKept` says the function's code put somewhere the call outlives (`this.h = h`) survives
 * too, as it would in CPython: no enclosing scope releases it either (it is the user's).
 */
export function callScope<T>(fn: () => T, alsoKept: (r: Releasable) => boolean): T {
  return inFrame(fn, keptBy, alsoKept);
}

/** A full collection and every pending finaliser (also where reclamation cannot run synchronously). */
export async function gc(): Promise<void> {
  if (hooks.synchronous) {
    reclaim();
    return;
  }
  if (!hooks.gc) {
    throw new Error("torch.gc() needs a Node that exposes its collector (node --expose-gc); use dispose() or torch.scope instead");
  }
  for (let i = 0; i < 3; i++) {
    hooks.gc();
    await new Promise((r) => setTimeout(r, 0));
  }
}
