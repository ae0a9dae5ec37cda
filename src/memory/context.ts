// A dynamically scoped value: set for the duration of a call, restored after it (also on throw).
// The runtime's context — the current op's device, memory category, timeline phase and autograd node —
// is kept this way.

export interface Context<T> {
  get(): T;
  with<R>(value: T, fn: () => R): R;
  /** Sets the value and returns the one it replaces, for a caller that restores it in a finally (no closure per call). */
  swap(value: T): T;
}

/** Every context's current value, for saving and restoring the runtime's state around a cell. */
const all: Array<{ save(): () => void }> = [];
export function saveContexts(): () => void {
  const restores = all.map((c) => c.save());
  return () => restores.forEach((r) => r());
}

export function context<T>(initial: T): Context<T> {
  let current = initial;
  all.push({
    save: () => {
      const v = current;
      return () => void (current = v);
    },
  });
  return {
    get: () => current,
    with<R>(value: T, fn: () => R): R {
      const prev = current;
      current = value;
      try {
        return fn();
      } finally {
        current = prev;
      }
    },
    swap(value: T): T {
      const prev = current;
      current = value;
      return prev;
    },
  };
}
