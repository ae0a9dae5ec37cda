// The shape shared by grad modes, anomaly mode and saved-tensor hooks: a state change that is undone
// when a callback returns (or its promise settles), or, without a callback, by a `using` guard.

export interface Guard extends Disposable {
  /** Undoes the change (what leaving Python's `with` block does). */
  exit(): void;
}

function guard(exit: () => void): Guard {
  let done = false;
  const once = () => {
    if (!done) {
      done = true;
      exit();
    }
  };
  return { exit: once, [Symbol.dispose]: once };
}

/** The change has been made; undo it with `exit` after fn, or hand back a guard when there is no fn. */
export function within<T>(exit: () => void, fn?: () => T): T | Guard {
  const g = guard(exit);
  if (!fn) return g;
  let result: T;
  try {
    result = fn();
  } catch (e) {
    g.exit();
    throw e;
  }
  if (result instanceof Promise) return result.finally(g.exit) as T;
  g.exit();
  return result;
}
