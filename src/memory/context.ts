// A dynamically scoped value: set for the duration of a call, restored after it (also on throw).
// The runtime's context — the current op's device, memory category, timeline phase and autograd node —
// is kept this way.

export interface Context<T> {
  get(): T;
  with<R>(value: T, fn: () => R): R;
}

export function context<T>(initial: T): Context<T> {
  let current = initial;
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
  };
}
