// When a tensor handle lets go of its storage: dispose() / torch.del / `using`, the end of a
// torch.scope, or, as a fallback for handles dropped by rebinding a variable, the GC's finalizer.

interface Disposable_ {
  dispose(): void;
  readonly disposed: boolean;
}

const finalizer = new FinalizationRegistry<() => void>((release) => release());
/** Open scopes; a null frame hides the enclosing scopes (for handles the runtime itself owns). */
const scopes: Array<Disposable_[] | null> = [];

/** `release` must not capture the handle (it runs after the handle is collected). */
export function track(handle: Disposable_ & object, release: () => void): void {
  finalizer.register(handle, release, handle);
  scopes[scopes.length - 1]?.push(handle);
}

export function untrack(handle: object): void {
  finalizer.unregister(handle);
}

function collectKept(value: unknown, kept: Set<unknown>, depth = 0): void {
  if (value === null || typeof value !== "object" || depth > 3 || kept.has(value)) return;
  kept.add(value);
  if (Array.isArray(value)) for (const v of value) collectKept(v, kept, depth + 1);
  else if (Object.getPrototypeOf(value) === Object.prototype) for (const v of Object.values(value)) collectKept(v, kept, depth + 1);
}

/**
 * Ends a frame: handles in `keep` move to the enclosing scope (if any), the others are disposed.
 * opFrame keeps everything (an op that returned hands all it made to its caller's scope).
 */
function close(frame: Disposable_[], keep: (h: Disposable_) => boolean): void {
  const parent = scopes[scopes.length - 1];
  for (const h of frame) {
    if (h.disposed) continue;
    if (!keep(h)) h.dispose();
    else parent?.push(h);
  }
}

const keptBy = (result: unknown) => {
  const kept = new Set<unknown>();
  collectKept(result, kept);
  return (h: Disposable_) => kept.has(h);
};
const none = () => false;
const all = () => true;

/** Runs fn in a new frame; `done` decides what survives once fn has returned (or thrown: nothing). */
function inFrame<T>(fn: () => T, done: (result: T) => (h: Disposable_) => boolean): T {
  const frame: Disposable_[] = [];
  scopes.push(frame);
  let result: T;
  try {
    result = fn();
  } catch (e) {
    scopes.pop();
    close(frame, none);
    throw e;
  }
  if (result instanceof Promise) {
    // Async frames stay open until the promise settles; handles created meanwhile by other code on the
    // same stack frame would be captured too, so async scopes are for sequential notebook code.
    const leave = () => void scopes.splice(scopes.lastIndexOf(frame), 1);
    return result.then(
      (v) => { leave(); close(frame, done(v as T)); return v; },
      (e) => { leave(); close(frame, none); throw e; },
    ) as T;
  }
  scopes.pop();
  close(frame, done(result));
  return result;
}

/**
 * Runs fn with no scope collecting the handles it creates: for handles owned by the runtime (saved
 * variables, .grad, optimizer state), which must outlive whatever user scope they were made in.
 */
export function owned<T>(fn: () => T): T {
  scopes.push(null);
  try {
    return fn();
  } finally {
    scopes.pop();
  }
}

/**
 * Runs one op: if it throws, every handle it created is disposed (nothing half-built survives an
 * error); if it returns, its handles belong to the enclosing scope as if no frame had been there.
 */
export function opFrame<T>(fn: () => T): T {
  return inFrame(fn, () => all);
}

/**
 * Runs fn; every tensor handle created inside and not returned (directly, or in an array or plain
 * object) is disposed when it returns, as CPython frees a function's locals. Works with async fn.
 */
export function scope<T>(fn: () => T): T {
  return inFrame(fn, keptBy);
}

/** A full GC, then a wait for finalizers (needs node --expose-gc, which the kernel passes). */
export async function gc(): Promise<void> {
  const g = (globalThis as { gc?: () => void }).gc;
  if (!g) {
    throw new Error("torch.gc() needs Node started with --expose-gc (the GradLab kernel does this); use dispose() or torch.scope instead");
  }
  for (let i = 0; i < 3; i++) {
    g();
    await new Promise((r) => setTimeout(r, 0));
  }
}
